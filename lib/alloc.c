/* The allocator hook and the context. Every allocation in the library goes
 * through batchfit__alloc and friends, so tests can fail any one of them. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static void *default_alloc(size_t size, void *userdata)
{
    (void)userdata;
    return malloc(size);
}

static void *default_realloc(void *ptr, size_t size, void *userdata)
{
    (void)userdata;
    return realloc(ptr, size);
}

static void default_free(void *ptr, void *userdata)
{
    (void)userdata;
    free(ptr);
}

static const batchfit_allocator default_allocator = {default_alloc, default_realloc,
                                                     default_free, NULL};

void *batchfit__alloc(const batchfit_allocator *a, size_t size)
{
    return a->alloc(size ? size : 1, a->userdata);
}

void *batchfit__calloc(const batchfit_allocator *a, size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size)
        return NULL;
    size_t bytes = count * size;
    void *p = batchfit__alloc(a, bytes);
    if (p)
        memset(p, 0, bytes != 0 ? bytes : 1);
    return p;
}

void *batchfit__realloc(const batchfit_allocator *a, void *ptr, size_t size)
{
    return a->realloc(ptr, size ? size : 1, a->userdata);
}

void batchfit__free(const batchfit_allocator *a, void *ptr)
{
    if (ptr)
        a->free(ptr, a->userdata);
}

char *batchfit__strdup(const batchfit_allocator *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = batchfit__alloc(a, n);
    if (copy)
        memcpy(copy, s, n);
    return copy;
}

int batchfit_ctx_create(const batchfit_allocator *allocator, batchfit_ctx **out)
{
    if (!out)
        return BATCHFIT_E_INVALID_ARGUMENT;
    *out = NULL;
    const batchfit_allocator *a = allocator ? allocator : &default_allocator;
    if (!a->alloc || !a->realloc || !a->free)
        return BATCHFIT_E_INVALID_ARGUMENT;
    batchfit_ctx *ctx = batchfit__calloc(a, 1, sizeof *ctx);
    if (!ctx)
        return BATCHFIT_E_NO_MEMORY;
    ctx->allocator = *a;
    ctx->log_min = BATCHFIT_LOG_INFO;
    *out = ctx;
    return BATCHFIT_OK;
}

void batchfit_ctx_free(batchfit_ctx *ctx)
{
    if (!ctx)
        return;
    batchfit_allocator a = ctx->allocator;
    batchfit__free(&a, ctx);
}

const char *batchfit_ctx_last_error(const batchfit_ctx *ctx)
{
    return ctx ? ctx->last_error : "";
}
