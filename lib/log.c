/* The log callback and the per-context last-error message. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

static void vlog(batchfit_ctx *ctx, batchfit_log_level level, const char *fmt, va_list ap)
    BATCHFIT_PRINTF(3, 0);

static void format_cut(char *dst, size_t size, const char *fmt, va_list ap)
    BATCHFIT_PRINTF(3, 0);

/* vsnprintf into dst; a message longer than dst ends in "..." at a
 * character's boundary, so that a cut one says it was cut (and never
 * leaves half a UTF-8 character). */
static void format_cut(char *dst, size_t size, const char *fmt, va_list ap)
{
    int n = vsnprintf(dst, size, fmt, ap);
    if (n < 0) {
        dst[0] = '\0';
        return;
    }
    if ((size_t)n < size || size < 4)
        return;
    size_t keep = batchfit__utf8_cut(dst, size - 4);
    memcpy(dst + keep, "...", 4);
}

static void vlog(batchfit_ctx *ctx, batchfit_log_level level, const char *fmt, va_list ap)
{
    if (!ctx || !ctx->log_fn || level < ctx->log_min)
        return;
    char line[BATCHFIT_ERRMSG_MAX + 512];
    format_cut(line, sizeof line, fmt, ap);
    ctx->log_fn(level, line, ctx->log_userdata);
}

void batchfit__log(batchfit_ctx *ctx, batchfit_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(ctx, level, fmt, ap);
    va_end(ap);
}

int batchfit__fail(batchfit_ctx *ctx, int code, const char *fmt, ...)
{
    if (!ctx)
        return code;
    va_list ap;
    va_start(ap, fmt);
    format_cut(ctx->last_error, sizeof ctx->last_error, fmt, ap);
    va_end(ap);
    batchfit__log(ctx, BATCHFIT_LOG_ERROR, "%s", ctx->last_error);
    return code;
}

int batchfit__fail_with(batchfit_ctx *ctx, int code, const char *message)
{
    return code ? batchfit__fail(ctx, code, "%s", message) : code;
}

size_t batchfit__utf8_cut(const char *s, size_t n)
{
    /* Back over the continuation bytes of the last character; if that
     * character does not fit whole in n bytes, end before it. */
    size_t start = n;
    while (start > 0 && ((unsigned char)s[start - 1] & 0xC0) == 0x80 && n - start < 3)
        start--;
    if (start == 0)
        return n;
    unsigned lead = (unsigned char)s[start - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return need > 1 && n - (start - 1) < need ? start - 1 : n;
}

void batchfit__copy(char *dst, size_t size, const char *src)
{
    if (size == 0)
        return;
    size_t n = strlen(src);
    if (n >= size)
        n = batchfit__utf8_cut(src, size - 1);
    memmove(dst, src, n);
    dst[n] = '\0';
}

void batchfit__errf(char *err, size_t err_len, const char *fmt, ...)
{
    if (!err || err_len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

void batchfit_ctx_set_log(batchfit_ctx *ctx, batchfit_log_fn fn, void *userdata,
                          batchfit_log_level min_level)
{
    if (!ctx)
        return;
    ctx->log_fn = fn;
    ctx->log_userdata = userdata;
    ctx->log_min = min_level;
}
