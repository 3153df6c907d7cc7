/* A small JSON reader into a tree (RFC 8259): strict syntax, escapes
 * decoded (surrogate pairs too), nesting limited, every allocation through
 * the allocator and released on every failure. */
#include "json_tree.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JT_MAX_DEPTH 64

typedef struct parser {
    const batchfit_allocator *a;
    const char *start, *p, *end;
    char *err;
    size_t err_len;
    int code;
} parser;

static int fail(parser *s, const char *what)
{
    if (s->code == BATCHFIT_OK) {
        s->code = BATCHFIT_E_PARSE;
        batchfit__errf(s->err, s->err_len, "%s at byte %zu", what, (size_t)(s->p - s->start));
    }
    return s->code;
}

static int no_memory(parser *s)
{
    s->code = BATCHFIT_E_NO_MEMORY;
    batchfit__errf(s->err, s->err_len, "out of memory reading JSON");
    return s->code;
}

static void skip_ws(parser *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static int literal(parser *s, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return fail(s, "invalid literal");
    s->p += n;
    return BATCHFIT_OK;
}

static int hex4(parser *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        if (s->p >= s->end)
            return fail(s, "invalid \\u escape");
        char c = *s->p++;
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return fail(s, "invalid \\u escape");
    }
    *out = v;
    return BATCHFIT_OK;
}

static size_t put_utf8(char *out, unsigned cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decoded text is never longer than its source, so the source's length
 * bounds the copy. */
static int string_value(parser *s, char **out)
{
    s->p++; /* the opening quote */
    const char *q = s->p;
    while (q < s->end && *q != '"')
        q += *q == '\\' && q + 1 < s->end ? 2 : 1;
    if (q >= s->end)
        return fail(s, "unterminated string");
    char *buf = batchfit__alloc(s->a, (size_t)(q - s->p) + 1);
    if (!buf)
        return no_memory(s);
    size_t n = 0;
    while (*s->p != '"') {
        unsigned char c = (unsigned char)*s->p;
        if (c < 0x20) {
            batchfit__free(s->a, buf);
            return fail(s, "control character in a string");
        }
        if (c != '\\') {
            buf[n++] = (char)c;
            s->p++;
            continue;
        }
        s->p++;
        char e = *s->p++;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            buf[n++] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
            continue;
        }
        unsigned cp, low;
        if (e != 'u' || hex4(s, &cp) != BATCHFIT_OK) {
            batchfit__free(s->a, buf);
            return fail(s, "invalid escape in a string");
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u') {
                batchfit__free(s->a, buf);
                return fail(s, "unpaired surrogate in a string");
            }
            s->p += 2;
            if (hex4(s, &low) != BATCHFIT_OK || low < 0xDC00 || low > 0xDFFF) {
                batchfit__free(s->a, buf);
                return fail(s, "unpaired surrogate in a string");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            batchfit__free(s->a, buf);
            return fail(s, "unpaired surrogate in a string");
        }
        if (cp == 0) {
            batchfit__free(s->a, buf);
            return fail(s, "\\u0000 in a string");
        }
        n += put_utf8(buf + n, cp);
    }
    s->p++; /* the closing quote */
    buf[n] = '\0';
    *out = buf;
    return BATCHFIT_OK;
}

static int number_value(parser *s, jt_value *v)
{
    const char *b = s->p;
    if (s->p < s->end && *s->p == '-')
        s->p++;
    if (s->p >= s->end || *s->p < '0' || *s->p > '9')
        return fail(s, "invalid number");
    if (*s->p == '0')
        s->p++;
    else
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
            s->p++;
    int integral = 1;
    if (s->p < s->end && *s->p == '.') {
        integral = 0;
        s->p++;
        if (s->p >= s->end || *s->p < '0' || *s->p > '9')
            return fail(s, "invalid number");
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
            s->p++;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        integral = 0;
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            s->p++;
        if (s->p >= s->end || *s->p < '0' || *s->p > '9')
            return fail(s, "invalid number");
        while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
            s->p++;
    }
    char text[64];
    size_t n = (size_t)(s->p - b);
    if (n >= sizeof text)
        return fail(s, "number too long");
    memcpy(text, b, n);
    text[n] = '\0';
    v->kind = JT_NUMBER;
    v->number = strtod(text, NULL);
    if (!isfinite(v->number))
        return fail(s, "number out of range");
    if (integral && text[0] != '-') {
        errno = 0;
        unsigned long long u = strtoull(text, NULL, 10);
        if (errno == 0) {
            v->is_u64 = 1;
            v->u64 = (uint64_t)u;
        }
    }
    return BATCHFIT_OK;
}

static int value(parser *s, jt_value *v, int depth);

static int grow(parser *s, jt_value **items, char ***keys, size_t count, size_t *cap)
{
    if (count < *cap)
        return BATCHFIT_OK;
    size_t cap_new = *cap ? *cap * 2 : 4;
    jt_value *ni = batchfit__realloc(s->a, *items, cap_new * sizeof **items);
    if (!ni)
        return no_memory(s);
    *items = ni;
    if (keys) {
        char **nk = batchfit__realloc(s->a, *keys, cap_new * sizeof **keys);
        if (!nk)
            return no_memory(s);
        *keys = nk;
    }
    *cap = cap_new;
    return BATCHFIT_OK;
}

static int container(parser *s, jt_value *v, int depth, char close)
{
    int object = close == '}';
    v->kind = object ? JT_OBJECT : JT_ARRAY;
    s->p++;
    size_t cap = 0;
    skip_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return BATCHFIT_OK;
    }
    for (;;) {
        if (grow(s, &v->items, object ? &v->keys : NULL, v->count, &cap))
            return s->code;
        char *key = NULL;
        skip_ws(s);
        if (object) {
            if (s->p >= s->end || *s->p != '"')
                return fail(s, "expected a key");
            if (string_value(s, &key))
                return s->code;
            skip_ws(s);
            if (s->p >= s->end || *s->p != ':') {
                batchfit__free(s->a, key);
                return fail(s, "expected ':'");
            }
            s->p++;
        }
        jt_value *item = &v->items[v->count];
        memset(item, 0, sizeof *item);
        if (object)
            v->keys[v->count] = key;
        v->count++; /* counted now, so a failure below frees what it holds */
        if (value(s, item, depth + 1))
            return s->code;
        skip_ws(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == close) {
            s->p++;
            return BATCHFIT_OK;
        }
        return fail(s, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int value(parser *s, jt_value *v, int depth)
{
    if (depth > JT_MAX_DEPTH)
        return fail(s, "nested too deeply");
    skip_ws(s);
    if (s->p >= s->end)
        return fail(s, "unexpected end");
    switch (*s->p) {
    case '{':
        return container(s, v, depth, '}');
    case '[':
        return container(s, v, depth, ']');
    case '"':
        v->kind = JT_STRING;
        return string_value(s, &v->string);
    case 't':
        v->kind = JT_BOOL;
        v->boolean = 1;
        return literal(s, "true");
    case 'f':
        v->kind = JT_BOOL;
        return literal(s, "false");
    case 'n':
        v->kind = JT_NULL;
        return literal(s, "null");
    default:
        return number_value(s, v);
    }
}

void batchfit__jt_free(const batchfit_allocator *a, jt_value *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->count; i++) {
        batchfit__jt_free(a, &v->items[i]);
        if (v->keys)
            batchfit__free(a, v->keys[i]);
    }
    batchfit__free(a, v->items);
    batchfit__free(a, v->keys);
    batchfit__free(a, v->string);
    memset(v, 0, sizeof *v);
}

int batchfit__jt_parse(const batchfit_allocator *a, const char *text, size_t len, jt_value *root,
                       char *err, size_t err_len)
{
    parser s = {.a = a, .start = text, .p = text, .end = text + len, .err = err,
                .err_len = err_len};
    memset(root, 0, sizeof *root);
    if (value(&s, root, 0) == BATCHFIT_OK) {
        skip_ws(&s);
        if (s.p != s.end)
            fail(&s, "text after the value");
    }
    if (s.code != BATCHFIT_OK)
        batchfit__jt_free(a, root);
    return s.code;
}

const jt_value *batchfit__jt_get(const jt_value *v, const char *key)
{
    if (!v || v->kind != JT_OBJECT)
        return NULL;
    for (size_t i = 0; i < v->count; i++)
        if (strcmp(v->keys[i], key) == 0)
            return &v->items[i];
    return NULL;
}
