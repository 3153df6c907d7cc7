/* A growing string: the library's one way to build text of unbounded
 * length (cache keys, descriptions, JSON) without a fixed buffer. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

void batchfit__buf_init(batchfit__buf *b, const batchfit_allocator *a)
{
    memset(b, 0, sizeof *b);
    b->allocator = a;
}

static int reserve(batchfit__buf *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (extra >= SIZE_MAX / 2 - b->len) {
        b->failed = 1;
        return -1;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *grown = batchfit__realloc(b->allocator, b->data, cap);
    if (!grown) {
        b->failed = 1;
        return -1;
    }
    b->data = grown;
    b->cap = cap;
    return 0;
}

void batchfit__buf_append(batchfit__buf *b, const char *data, size_t len)
{
    if (reserve(b, len) != 0)
        return;
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void batchfit__buf_printf(batchfit__buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if (reserve(b, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

const char *batchfit__buf_text(const batchfit__buf *b)
{
    if (b->failed)
        return NULL;
    return b->len ? b->data : "";
}

void batchfit__buf_free(batchfit__buf *b)
{
    if (b->data)
        batchfit__free(b->allocator, b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
