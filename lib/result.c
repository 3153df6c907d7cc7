/* The result object: trial log and warnings, owned by the result and freed
 * with the allocator that made it, even after the context is gone. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

typedef struct result_impl {
    batchfit_result pub; /* first, so the public pointer converts back */
    batchfit_allocator allocator;
    batchfit_trial *trials;
    size_t trial_cap;
    char **warnings;
    size_t warning_cap;
} result_impl;

batchfit_result *batchfit__result_new(batchfit_ctx *ctx)
{
    result_impl *r = batchfit__calloc(&ctx->allocator, 1, sizeof *r);
    if (!r)
        return NULL;
    r->allocator = ctx->allocator;
    r->pub.struct_size = sizeof r->pub;
    r->pub.source = BATCHFIT_SOURCE_NONE;
    return &r->pub;
}

void batchfit_result_free(batchfit_result *result)
{
    if (!result)
        return;
    result_impl *r = (result_impl *)result;
    batchfit_allocator a = r->allocator;
    for (size_t i = 0; i < r->pub.warning_count; i++)
        batchfit__free(&a, r->warnings[i]);
    batchfit__free(&a, r->warnings);
    batchfit__free(&a, r->trials);
    batchfit__free(&a, r);
}

/* Grows *array to hold at least need elements of size elem. */
static int grow(const batchfit_allocator *a, void **array, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return BATCHFIT_OK;
    size_t cap_new = *cap ? *cap * 2 : 8;
    while (cap_new < need)
        cap_new *= 2;
    void *p = batchfit__realloc(a, *array, cap_new * elem);
    if (!p)
        return BATCHFIT_E_NO_MEMORY;
    *array = p;
    *cap = cap_new;
    return BATCHFIT_OK;
}

int batchfit__result_add_trial(batchfit_result *result, const batchfit_trial *trial)
{
    result_impl *r = (result_impl *)result;
    void *array = r->trials;
    if (grow(&r->allocator, &array, &r->trial_cap, r->pub.trial_count + 1, sizeof *trial))
        return BATCHFIT_E_NO_MEMORY;
    r->trials = array;
    r->trials[r->pub.trial_count++] = *trial;
    r->pub.trials = r->trials;
    if (trial->outcome == BATCHFIT_OOM)
        r->pub.oom_trials++;
    return BATCHFIT_OK;
}

int batchfit__result_warn(batchfit_ctx *ctx, batchfit_result *result, const char *fmt, ...)
{
    result_impl *r = (result_impl *)result;
    char text[BATCHFIT_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    batchfit__log(ctx, BATCHFIT_LOG_WARN, "%s", text);
    void *array = r->warnings;
    if (grow(&r->allocator, &array, &r->warning_cap, r->pub.warning_count + 1,
             sizeof(char *)))
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory recording a warning");
    r->warnings = array;
    char *copy = batchfit__strdup(&r->allocator, text);
    if (!copy)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory recording a warning");
    r->warnings[r->pub.warning_count++] = copy;
    r->pub.warnings = (const char *const *)r->warnings;
    return BATCHFIT_OK;
}
