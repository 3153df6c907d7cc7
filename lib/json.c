/* A small JSON reader for hyperparameter files: it validates the whole
 * document and pulls the top-level "max_batch_size". Only the requested
 * maximum is an input; "batch_size" (the measured result) is never read. */
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define JSON_MAX_DEPTH 64
#define JSON_MAX_FILE (16u << 20)

typedef struct json {
    const char *p;
    const char *end;
    const char *start;
    const char *error;
} json;

static void skip_ws(json *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int fail(json *j, const char *why)
{
    if (!j->error)
        j->error = why;
    return -1;
}

/* Reads a string; when out is not NULL, copies its raw text (escapes kept
 * as written, enough for the keys and values this reader needs). */
static int read_string(json *j, char *out, size_t out_len)
{
    if (j->p >= j->end || *j->p != '"')
        return fail(j, "expected a string");
    j->p++;
    size_t n = 0;
    while (j->p < j->end && *j->p != '"') {
        unsigned char c = (unsigned char)*j->p;
        if (c < 0x20)
            return fail(j, "control character in a string");
        if (c == '\\') {
            j->p++;
            if (j->p >= j->end || !strchr("\"\\/bfnrtu", *j->p))
                return fail(j, "invalid escape in a string");
            if (*j->p == 'u') {
                for (int k = 1; k <= 4; k++)
                    if (j->p + k >= j->end || !strchr("0123456789abcdefABCDEF", j->p[k]))
                        return fail(j, "invalid \\u escape");
                j->p += 4;
            }
        }
        if (out && n + 1 < out_len)
            out[n++] = (char)c;
        j->p++;
    }
    if (j->p >= j->end)
        return fail(j, "unterminated string");
    j->p++;
    if (out && out_len)
        out[n] = '\0';
    return 0;
}

static int read_number(json *j, char *out, size_t out_len)
{
    const char *s = j->p;
    if (j->p < j->end && *j->p == '-')
        j->p++;
    if (j->p >= j->end || !(*j->p >= '0' && *j->p <= '9'))
        return fail(j, "invalid number");
    while (j->p < j->end && strchr("0123456789+-.eE", *j->p))
        j->p++;
    size_t n = (size_t)(j->p - s);
    if (out) {
        if (n >= out_len)
            n = out_len - 1;
        memcpy(out, s, n);
        out[n] = '\0';
    }
    return 0;
}

static int skip_value(json *j, int depth);

static int skip_container(json *j, int depth, char close)
{
    j->p++;
    skip_ws(j);
    if (j->p < j->end && *j->p == close) {
        j->p++;
        return 0;
    }
    for (;;) {
        skip_ws(j);
        if (close == '}') {
            if (read_string(j, NULL, 0) != 0)
                return -1;
            skip_ws(j);
            if (j->p >= j->end || *j->p != ':')
                return fail(j, "expected ':' after a key");
            j->p++;
        }
        if (skip_value(j, depth + 1) != 0)
            return -1;
        skip_ws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == close) {
            j->p++;
            return 0;
        }
        return fail(j, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int skip_value(json *j, int depth)
{
    if (depth > JSON_MAX_DEPTH)
        return fail(j, "nested too deeply");
    skip_ws(j);
    if (j->p >= j->end)
        return fail(j, "unexpected end of file");
    switch (*j->p) {
    case '{':
        return skip_container(j, depth, '}');
    case '[':
        return skip_container(j, depth, ']');
    case '"':
        return read_string(j, NULL, 0);
    }
    static const char *const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(words[i]);
        if ((size_t)(j->end - j->p) >= n && memcmp(j->p, words[i], n) == 0) {
            j->p += n;
            return 0;
        }
    }
    return read_number(j, NULL, 0);
}

/* Finds the top-level "max_batch_size"; *kind: 0 absent, 's' string,
 * 'n' number, 'z' null, 'o' anything else. */
static int find_requested(json *j, char *value, size_t value_len, int *kind)
{
    *kind = 0;
    skip_ws(j);
    if (j->p >= j->end || *j->p != '{')
        return fail(j, "the top level must be an object");
    j->p++;
    skip_ws(j);
    if (j->p < j->end && *j->p == '}') {
        j->p++;
    } else {
        for (;;) {
            char key[64];
            skip_ws(j);
            if (read_string(j, key, sizeof key) != 0)
                return -1;
            skip_ws(j);
            if (j->p >= j->end || *j->p != ':')
                return fail(j, "expected ':' after a key");
            j->p++;
            skip_ws(j);
            if (strcmp(key, "max_batch_size") == 0) {
                if (*kind)
                    return fail(j, "\"max_batch_size\" appears twice");
                if (j->p < j->end && *j->p == '"') {
                    *kind = 's';
                    if (read_string(j, value, value_len) != 0)
                        return -1;
                } else if (j->p < j->end && (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))) {
                    *kind = 'n';
                    if (read_number(j, value, value_len) != 0)
                        return -1;
                } else if ((size_t)(j->end - j->p) >= 4 && memcmp(j->p, "null", 4) == 0) {
                    *kind = 'z';
                    j->p += 4;
                } else {
                    *kind = 'o';
                    const char *s = j->p;
                    if (skip_value(j, 1) != 0)
                        return -1;
                    size_t n = (size_t)(j->p - s) < value_len - 1 ? (size_t)(j->p - s) : value_len - 1;
                    memcpy(value, s, n);
                    value[n] = '\0';
                }
            } else if (skip_value(j, 1) != 0) {
                return -1;
            }
            skip_ws(j);
            if (j->p < j->end && *j->p == ',') {
                j->p++;
                continue;
            }
            if (j->p < j->end && *j->p == '}') {
                j->p++;
                break;
            }
            return fail(j, "expected ',' or '}'");
        }
    }
    skip_ws(j);
    if (j->p != j->end)
        return fail(j, "text after the top-level object");
    return 0;
}

int batchfit__json_requested(const char *text, size_t len, const char *what, uint64_t *out,
                             int *present, char *err, size_t err_len)
{
    json j = {text, text + len, text, NULL};
    char value[128] = "";
    int kind;
    if (find_requested(&j, value, sizeof value, &kind) != 0) {
        batchfit__errf(err, err_len, "%s: not valid JSON: %s at byte %ld", what, j.error,
                       (long)(j.p - j.start));
        return BATCHFIT_E_PARSE;
    }
    if (present)
        *present = kind != 0;
    char name[300];
    snprintf(name, sizeof name, "%s: max_batch_size", what);
    switch (kind) {
    case 0:
    case 'z':
        *out = 0;
        return BATCHFIT_OK;
    case 'n':
        /* A JSON number in another form (1e3, 1000.0: what a tool that
         * writes floats writes) is the same size where it is whole. */
        if (strpbrk(value, ".eE")) {
            char *end;
            double v = strtod(value, &end);
            if (*end || !isfinite(v) || v < 0.0 || v != floor(v) || v > 9007199254740992.0) {
                batchfit__errf(err, err_len,
                               "%s: invalid value %s: expected a whole number (a batch size)",
                               name, value);
                return BATCHFIT_E_PARSE;
            }
            snprintf(value, sizeof value, "%.0f", v);
        }
        /* fall through */
    case 's':
        return batchfit__parse_requested_size(value, name, out, err, err_len);
    }
    batchfit__errf(err, err_len,
                   "%s: invalid value %s: expected a positive integer, 0, \"none\", null or "
                   "\"\" for \"the device decides\"",
                   name, value);
    return BATCHFIT_E_PARSE;
}

int batchfit_read_hyperparameters(batchfit_ctx *ctx, const char *path, uint64_t *requested_out)
{
    if (!path || !requested_out)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "hyperparameters: no file given");
    if (!ctx)
        return BATCHFIT_E_INVALID_ARGUMENT;
    char err[BATCHFIT_ERRMSG_MAX] = "";
    size_t err_len = sizeof err;
    FILE *f = fopen(path, "rb");
    if (!f) {
        return batchfit__fail(ctx, BATCHFIT_E_PARSE, "--hyperparameters %s: %s", path,
                              strerror(errno));
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    int rc = BATCHFIT_OK;
    for (;;) {
        if (len == cap) {
            size_t cap_new = cap ? cap * 2 : 4096;
            if (cap_new > JSON_MAX_FILE) {
                batchfit__errf(err, err_len, "--hyperparameters %s: larger than %u MiB", path,
                               JSON_MAX_FILE >> 20);
                rc = BATCHFIT_E_PARSE;
                break;
            }
            char *grown = batchfit__realloc(&ctx->allocator, text, cap_new);
            if (!grown) {
                batchfit__errf(err, err_len, "--hyperparameters %s: out of memory", path);
                rc = BATCHFIT_E_NO_MEMORY;
                break;
            }
            text = grown;
            cap = cap_new;
        }
        size_t n = fread(text + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    if (rc == BATCHFIT_OK && ferror(f)) {
        batchfit__errf(err, err_len, "--hyperparameters %s: cannot read it: %s", path,
                       strerror(errno ? errno : EIO));
        rc = BATCHFIT_E_PARSE;
    }
    fclose(f);
    if (rc == BATCHFIT_OK) {
        char what[300];
        snprintf(what, sizeof what, "--hyperparameters %s", path);
        int present = 0;
        rc = batchfit__json_requested(text ? text : "", len, what, requested_out, &present, err,
                                      err_len);
        /* {"batch_size": 5}, or the key one level down: the file was read and
         * said nothing, without a word (the device decided). */
        if (rc == BATCHFIT_OK && !present)
            batchfit__log(ctx, BATCHFIT_LOG_WARN,
                          "--hyperparameters %s has no top-level \"max_batch_size\" (\"batch_size\" "
                          "is an output, never read): the device decides",
                          path);
    }
    batchfit__free(&ctx->allocator, text);
    return batchfit__fail_with(ctx, rc, err);
}
