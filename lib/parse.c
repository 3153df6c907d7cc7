/* Parsing of user input: sizes, percentages, counts, the requested maximum,
 * the VRAM limit and its precedence. Every error names the input and its
 * source and quotes the offending text. */
#include "internal.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *skip_blanks(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* A number as written: digits with an optional fraction ("12", "1.5",
 * ".5"). The whole part is kept exactly so large byte counts keep every
 * digit. No sign and no exponent, so "nan", "inf", "-1" and "1e9" never
 * read as numbers. */
typedef struct number {
    uint64_t whole;
    double fraction;
    int has_fraction;
    int has_point;  /* a decimal point was written, with or without digits after it */
    int overflow;   /* the whole part does not fit in 64 bits */
    const char *end;
} number;

static int read_number(const char *text, number *n)
{
    const char *s = text;
    int digits = 0;
    *n = (number){0};
    while (isdigit((unsigned char)*s)) {
        unsigned d = (unsigned)(*s - '0');
        if (n->whole > (UINT64_MAX - d) / 10)
            n->overflow = 1;
        else
            n->whole = n->whole * 10 + d;
        s++;
        digits++;
    }
    if (*s == '.') {
        s++;
        n->has_point = 1;
        double scale = 0.1;
        while (isdigit((unsigned char)*s)) {
            n->fraction += (*s - '0') * scale;
            scale /= 10.0;
            n->has_fraction = 1;
            s++;
            digits++;
        }
    }
    n->end = s;
    return digits ? 0 : -1;
}

int batchfit__parse_decimal(const char *text, double *out, const char **end)
{
    number n;
    if (read_number(text, &n) != 0 || n.overflow)
        return -1;
    *out = (double)n.whole + n.fraction;
    *end = n.end;
    return 0;
}

typedef struct unit {
    const char *name;
    uint64_t multiplier;
} unit;

static const unit size_units[] = {
    {"", 1},
    {"B", 1},
    {"KiB", UINT64_C(1) << 10},
    {"MiB", UINT64_C(1) << 20},
    {"GiB", UINT64_C(1) << 30},
    {"TiB", UINT64_C(1) << 40},
    {"KB", UINT64_C(1000)},
    {"MB", UINT64_C(1000000)},
    {"GB", UINT64_C(1000000000)},
    {"TB", UINT64_C(1000000000000)},
};

int batchfit__parse_size(const char *text, const char *what, uint64_t *bytes_out, char *err,
                        size_t err_len)
{
    const char *name = what ? what : "size";
    if (!text || !bytes_out) {
        batchfit__errf(err, err_len, "%s: no value given", name);
        return BATCHFIT_E_PARSE;
    }
    const char *s = skip_blanks(text);
    if (*s == '-') {
        batchfit__errf(err, err_len, "%s: invalid size \"%s\": it must not be negative", name,
                       text);
        return BATCHFIT_E_PARSE;
    }
    number n;
    if (read_number(s, &n) != 0) {
        batchfit__errf(err, err_len,
                       "%s: invalid size \"%s\": expected a number with an optional unit "
                       "(B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)",
                       name, text);
        return BATCHFIT_E_PARSE;
    }
    if (n.overflow) {
        batchfit__errf(err, err_len, "%s: size \"%s\" is too large", name, text);
        return BATCHFIT_E_PARSE;
    }
    uint64_t whole = n.whole;
    s = n.end;
    s = skip_blanks(s);
    const char *unit_start = s;
    size_t unit_len = strlen(unit_start);
    while (unit_len && (unit_start[unit_len - 1] == ' ' || unit_start[unit_len - 1] == '\t'))
        unit_len--;
    const unit *found = NULL;
    for (size_t i = 0; i < sizeof size_units / sizeof size_units[0]; i++) {
        if (strlen(size_units[i].name) == unit_len &&
            strncasecmp(size_units[i].name, unit_start, unit_len) == 0) {
            found = &size_units[i];
            break;
        }
    }
    if (!found) {
        batchfit__errf(err, err_len,
                       "%s: invalid size \"%s\": unknown unit \"%.*s\" (use B, KiB, MiB, GiB, "
                       "TiB, KB, MB, GB or TB)",
                       name, text, (int)unit_len, unit_start);
        return BATCHFIT_E_PARSE;
    }
    if (whole > UINT64_MAX / found->multiplier) {
        batchfit__errf(err, err_len, "%s: size \"%s\" is too large", name, text);
        return BATCHFIT_E_PARSE;
    }
    uint64_t bytes = whole * found->multiplier;
    if (n.has_fraction) {
        if (found->multiplier == 1) {
            batchfit__errf(err, err_len, "%s: invalid size \"%s\": bytes must be whole", name,
                           text);
            return BATCHFIT_E_PARSE;
        }
        uint64_t extra = (uint64_t)(n.fraction * (double)found->multiplier);
        if (bytes > UINT64_MAX - extra) {
            batchfit__errf(err, err_len, "%s: size \"%s\" is too large", name, text);
            return BATCHFIT_E_PARSE;
        }
        bytes += extra;
    }
    *bytes_out = bytes;
    return BATCHFIT_OK;
}

void batchfit_format_bytes(double bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    unsigned u = 0;
    if (!buf || len == 0)
        return;
    if (!isfinite(bytes)) {
        snprintf(buf, len, "%s B", isnan(bytes) ? "NaN" : bytes > 0 ? "inf" : "-inf");
        return;
    }
    /* A difference can be negative (headroom past the budget): its size,
     * signed ("-3000000000 B" read as bytes, "-2.79 GiB" as a size). */
    const char *sign = bytes < 0.0 ? "-" : "";
    double size = fabs(bytes);
    while (size >= 1024.0 && u < 6) {
        size /= 1024.0;
        u++;
    }
    /* Past 1024 EiB (beyond any uint64_t) the digits would push the unit
     * out of a small buffer: three significant ones. */
    snprintf(buf, len, size >= 1024.0 ? "%s%.3g %s" : u ? "%s%.2f %s" : "%s%.0f %s", sign, size,
             units[u]);
}

int batchfit__parse_percent(const char *text, const char *what, double *fraction_out, char *err,
                           size_t err_len)
{
    const char *name = what ? what : "percentage";
    double value;
    const char *end;
    if (!text || !fraction_out) {
        batchfit__errf(err, err_len, "%s: no value given", name);
        return BATCHFIT_E_PARSE;
    }
    const char *s = skip_blanks(text);
    if (batchfit__parse_decimal(s, &value, &end) != 0 || *skip_blanks(end) != '%' ||
        *skip_blanks(skip_blanks(end) + 1) != '\0') {
        batchfit__errf(err, err_len,
                       "%s: invalid percentage \"%s\": expected a number followed by %% "
                       "(e.g. 5%%)",
                       name, text);
        return BATCHFIT_E_PARSE;
    }
    if (value > 100.0) {
        batchfit__errf(err, err_len, "%s: percentage \"%s\" is above 100%%", name, text);
        return BATCHFIT_E_PARSE;
    }
    *fraction_out = value / 100.0;
    return BATCHFIT_OK;
}

/* Reads a whole decimal number that fills the (blank-trimmed) text. */
static int parse_whole(const char *text, uint64_t *out, int *overflow)
{
    const char *s = skip_blanks(text);
    if (*s == '+')
        s++;
    number n;
    if (read_number(s, &n) != 0 || n.has_point || *skip_blanks(n.end) != '\0')
        return -1;
    *overflow = n.overflow;
    *out = n.whole;
    return 0;
}

int batchfit__parse_requested_size(const char *text, const char *what, uint64_t *size_out,
                                  char *err, size_t err_len)
{
    const char *name = what ? what : "max_batch_size";
    if (!size_out) {
        batchfit__errf(err, err_len, "%s: no output given", name);
        return BATCHFIT_E_INVALID_ARGUMENT;
    }
    if (!text) {
        *size_out = 0;
        return BATCHFIT_OK;
    }
    const char *s = skip_blanks(text);
    size_t len = strlen(s);
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    if (len == 0 || (len == 4 && (strncasecmp(s, "none", 4) == 0 || strncasecmp(s, "null", 4) == 0))) {
        *size_out = 0;
        return BATCHFIT_OK;
    }
    uint64_t value;
    int overflow;
    if (parse_whole(text, &value, &overflow) != 0) {
        batchfit__errf(err, err_len,
                       "%s: invalid value \"%s\": expected a positive integer, or 0, none, null "
                       "or empty for \"the device decides\"",
                       name, text);
        return BATCHFIT_E_PARSE;
    }
    if (overflow || value > INT64_MAX) {
        batchfit__errf(err, err_len, "%s: value \"%s\" is too large (at most %lld)", name, text,
                       (long long)INT64_MAX);
        return BATCHFIT_E_PARSE;
    }
    *size_out = value;
    return BATCHFIT_OK;
}

int batchfit__parse_count(const char *text, const char *what, uint64_t max_value,
                         uint64_t *value_out, char *err, size_t err_len)
{
    const char *name = what ? what : "count";
    uint64_t value;
    int overflow;
    if (!text || !value_out || parse_whole(text, &value, &overflow) != 0) {
        batchfit__errf(err, err_len, "%s: invalid value \"%s\": expected a positive integer",
                       name, text ? text : "");
        return BATCHFIT_E_PARSE;
    }
    if (overflow || value > max_value) {
        batchfit__errf(err, err_len, "%s: value \"%s\" is too large (at most %llu)", name, text,
                       (unsigned long long)max_value);
        return BATCHFIT_E_PARSE;
    }
    if (value == 0) {
        batchfit__errf(err, err_len, "%s: invalid value \"%s\": it must be at least 1", name,
                       text);
        return BATCHFIT_E_PARSE;
    }
    *value_out = value;
    return BATCHFIT_OK;
}

/* Parses a GiB amount for the VRAM limit. */
static int parse_gib(const char *text, const char *source, uint64_t *bytes_out, char *err,
                     size_t err_len)
{
    const char *s = skip_blanks(text);
    const char *end;
    double gib;
    if (*s == '-') {
        batchfit__errf(err, err_len, "invalid VRAM limit \"%s\" from %s: it must be positive",
                       text, source);
        return BATCHFIT_E_PARSE;
    }
    if (*s == '+')
        s++;
    number n;
    int digits = read_number(s, &n) == 0;
    if (digits && n.overflow && *skip_blanks(n.end) == '\0') {
        batchfit__errf(err, err_len, "VRAM limit \"%s\" from %s is too large", text, source);
        return BATCHFIT_E_PARSE;
    }
    if (batchfit__parse_decimal(s, &gib, &end) != 0 || *skip_blanks(end) != '\0') {
        /* 1e-15 and 1e30 are positive numbers: what is wrong is the exponent. */
        int exponent = digits && (*n.end == 'e' || *n.end == 'E');
        batchfit__errf(err, err_len,
                       "invalid VRAM limit \"%s\" from %s: expected a positive number of GiB "
                       "(e.g. 12 or 7.5)%s",
                       text, source, exponent ? ", written out without an exponent" : "");
        return BATCHFIT_E_PARSE;
    }
    if (gib <= 0.0) {
        batchfit__errf(err, err_len, "invalid VRAM limit \"%s\" from %s: it must be positive",
                       text, source);
        return BATCHFIT_E_PARSE;
    }
    /* 2^33 GiB is 8 EiB, beyond any device and near the 64-bit byte limit. */
    if (gib >= 8589934592.0) {
        batchfit__errf(err, err_len, "VRAM limit \"%s\" from %s is too large", text, source);
        return BATCHFIT_E_PARSE;
    }
    uint64_t bytes = (uint64_t)(gib * 1073741824.0);
    if (bytes == 0) {
        batchfit__errf(err, err_len,
                       "invalid VRAM limit \"%s\" from %s: it rounds to zero bytes", text,
                       source);
        return BATCHFIT_E_PARSE;
    }
    /* 0.0000001 GiB is 107 bytes: read as a limit, no step fits, and the
     * refusal came only once the step was built, blaming its size. */
    if (bytes < ((uint64_t)1 << 20)) {
        batchfit__errf(err, err_len,
                       "invalid VRAM limit \"%s\" from %s: %llu bytes, under 1 MiB, where no model "
                       "fits; it is a number of GiB (e.g. 12 or 7.5)",
                       text, source, (unsigned long long)bytes);
        return BATCHFIT_E_PARSE;
    }
    *bytes_out = bytes;
    return BATCHFIT_OK;
}

int batchfit__resolve_vram_limit(const char *explicit_text, const char *flag_name,
                                uint64_t *bytes_out, const char **source_out, char *err,
                                size_t err_len)
{
    static const char *const env_names[] = {"VRAM_LIMIT_GB", "BATCHFIT_VRAM_LIMIT_GB"};
    static const char *const env_sources[] = {"environment variable VRAM_LIMIT_GB",
                                              "environment variable BATCHFIT_VRAM_LIMIT_GB"};
    if (!bytes_out) {
        batchfit__errf(err, err_len, "VRAM limit: no output given");
        return BATCHFIT_E_INVALID_ARGUMENT;
    }
    *bytes_out = 0;
    if (source_out)
        *source_out = "none";
    if (explicit_text) {
        const char *flag = flag_name ? flag_name : "--vram-limit-gb";
        int rc = parse_gib(explicit_text, flag, bytes_out, err, err_len);
        if (rc == BATCHFIT_OK && source_out)
            *source_out = flag_name ? flag_name : "--vram-limit-gb";
        return rc;
    }
    for (size_t i = 0; i < 2; i++) {
        const char *value = getenv(env_names[i]);
        if (!value || !*skip_blanks(value))
            continue;
        int rc = parse_gib(value, env_sources[i], bytes_out, err, err_len);
        if (rc == BATCHFIT_OK && source_out)
            *source_out = env_sources[i];
        return rc;
    }
    return BATCHFIT_OK;
}

static const char *const strategy_names[] = {"model", "bisect", "binsearch", "power", "halving"};

const char *batchfit_strategy_name(batchfit_strategy strategy)
{
    if ((unsigned)strategy >= sizeof strategy_names / sizeof strategy_names[0])
        return NULL;
    return strategy_names[strategy];
}

int batchfit__parse_strategy(const char *text, const char *what, batchfit_strategy *out,
                            char *err, size_t err_len)
{
    for (unsigned i = 0; text && i < sizeof strategy_names / sizeof strategy_names[0]; i++) {
        if (strcasecmp(text, strategy_names[i]) == 0) {
            *out = (batchfit_strategy)i;
            return BATCHFIT_OK;
        }
    }
    batchfit__errf(err, err_len,
                   "%s: unknown strategy \"%s\" (expected model, bisect, binsearch, power or "
                   "halving)",
                   what ? what : "strategy", text ? text : "");
    return BATCHFIT_E_PARSE;
}

/* The public parsers report through the context, like every other call. */
void batchfit__format_bytes_apart(double a, double b, char *ta, char *tb, size_t len)
{
    batchfit_format_bytes(a, ta, len);
    batchfit_format_bytes(b, tb, len);
    if (a == b || strcmp(ta, tb) != 0)
        return;
    /* Same text for different figures ("1.02 GiB exceeds 1.02 GiB"): show
     * the unit with as many decimals as it takes, then the exact bytes. */
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double larger = a > b ? a : b;
    int u = 0;
    while (u < 6 && larger >= 1024.0 * (double)(UINT64_C(1) << (10 * u)))
        u++;
    double scale = (double)(UINT64_C(1) << (10 * u));
    for (int decimals = 3; decimals <= 9; decimals++) {
        snprintf(ta, len, "%.*f %s", decimals, a / scale, units[u]);
        snprintf(tb, len, "%.*f %s", decimals, b / scale, units[u]);
        if (strcmp(ta, tb) != 0)
            return;
    }
    snprintf(ta, len, "%.0f B", a);
    snprintf(tb, len, "%.0f B", b);
}

int batchfit_parse_size(batchfit_ctx *ctx, const char *text, const char *what, uint64_t *bytes_out)
{
    char err[BATCHFIT_ERRMSG_MAX] = "";
    return batchfit__fail_with(ctx, batchfit__parse_size(text, what, bytes_out, err, sizeof err),
                               err);
}

int batchfit_parse_percent(batchfit_ctx *ctx, const char *text, const char *what,
                           double *fraction_out)
{
    char err[BATCHFIT_ERRMSG_MAX] = "";
    return batchfit__fail_with(
        ctx, batchfit__parse_percent(text, what, fraction_out, err, sizeof err), err);
}

int batchfit_parse_requested_size(batchfit_ctx *ctx, const char *text, const char *what,
                                  uint64_t *size_out)
{
    char err[BATCHFIT_ERRMSG_MAX] = "";
    return batchfit__fail_with(
        ctx, batchfit__parse_requested_size(text, what, size_out, err, sizeof err), err);
}

int batchfit_parse_count(batchfit_ctx *ctx, const char *text, const char *what, uint64_t max_value,
                         uint64_t *value_out)
{
    char err[BATCHFIT_ERRMSG_MAX] = "";
    return batchfit__fail_with(
        ctx, batchfit__parse_count(text, what, max_value, value_out, err, sizeof err), err);
}

int batchfit_resolve_vram_limit(batchfit_ctx *ctx, const char *explicit_text,
                                const char *flag_name, uint64_t *bytes_out,
                                const char **source_out)
{
    char err[BATCHFIT_ERRMSG_MAX] = "";
    return batchfit__fail_with(ctx,
                               batchfit__resolve_vram_limit(explicit_text, flag_name, bytes_out,
                                                            source_out, err, sizeof err),
                               err);
}

int batchfit_parse_strategy(batchfit_ctx *ctx, const char *text, const char *what,
                            batchfit_strategy *out)
{
    char err[BATCHFIT_ERRMSG_MAX] = "";
    return batchfit__fail_with(ctx, batchfit__parse_strategy(text, what, out, err, sizeof err),
                               err);
}
