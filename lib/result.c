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
    char **owned;        /* the report's strings: error, spec, command, ... */
    size_t owned_count;
    size_t owned_cap;
    char *json;
    batchfit_rank_outcome *outcomes;
    char *svg;
    batchfit_gpu_budget *gpus;
    batchfit_gpu_peak *gpu_peaks; /* rows of gpu_count, one a trial */
    size_t gpu_peak_rows;
    int *trial_ranks;
    size_t trial_rank_cap;
    uint64_t address_space_cap; /* the trials' RLIMIT_AS (--enforce-address-space), 0: none */
    uint64_t held_before;       /* what this process held as an in-process probe began */
} result_impl;

void batchfit__result_set_held_before(batchfit_result *result, uint64_t bytes)
{
    ((result_impl *)result)->held_before = bytes;
}

uint64_t batchfit__result_held_before(const batchfit_result *result)
{
    return ((const result_impl *)result)->held_before;
}

void batchfit__result_set_address_space_cap(batchfit_result *result, uint64_t bytes)
{
    ((result_impl *)result)->address_space_cap = bytes;
}

uint64_t batchfit__result_address_space_cap(const batchfit_result *result)
{
    return ((const result_impl *)result)->address_space_cap;
}

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
    for (size_t i = 0; i < r->owned_count; i++)
        batchfit__free(&a, r->owned[i]);
    batchfit__free(&a, r->owned);
    batchfit__free(&a, (void *)r->pub.command);
    batchfit__free(&a, r->json);
    batchfit__free(&a, r->outcomes);
    batchfit__free(&a, r->svg);
    batchfit__free(&a, r->gpus);
    batchfit__free(&a, r->gpu_peaks);
    batchfit__free(&a, r->trial_ranks);
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

batchfit_gpu_budget *batchfit__result_set_gpus(batchfit_result *result, size_t count)
{
    result_impl *r = (result_impl *)result;
    batchfit_gpu_budget *gpus = batchfit__calloc(&r->allocator, count ? count : 1, sizeof *gpus);
    if (!gpus)
        return NULL;
    batchfit__free(&r->allocator, r->gpus);
    r->gpus = gpus;
    r->pub.gpus = gpus;
    r->pub.gpu_count = count;
    return gpus;
}

int batchfit__result_set_gpu_peaks(batchfit_result *result, size_t trial,
                                   const batchfit_gpu_peak *peaks)
{
    result_impl *r = (result_impl *)result;
    size_t n = r->pub.gpu_count;
    if (n == 0)
        return BATCHFIT_OK;
    void *array = r->gpu_peaks;
    if (grow(&r->allocator, &array, &r->gpu_peak_rows, trial + 1, n * sizeof *peaks))
        return BATCHFIT_E_NO_MEMORY;
    r->gpu_peaks = array;
    memcpy(r->gpu_peaks + trial * n, peaks, n * sizeof *peaks);
    r->pub.gpu_peaks = r->gpu_peaks;
    return BATCHFIT_OK;
}

int batchfit__result_set_trial_rank(batchfit_result *result, size_t trial, int rank)
{
    result_impl *r = (result_impl *)result;
    void *array = r->trial_ranks;
    size_t cap = r->trial_rank_cap;
    if (grow(&r->allocator, &array, &r->trial_rank_cap, trial + 1, sizeof *r->trial_ranks))
        return BATCHFIT_E_NO_MEMORY;
    r->trial_ranks = array;
    /* Rows that no trial has claimed yet read as rank 0. */
    for (size_t i = cap; i < r->trial_rank_cap; i++)
        r->trial_ranks[i] = 0;
    r->trial_ranks[trial] = rank;
    r->pub.trial_ranks = r->trial_ranks;
    return BATCHFIT_OK;
}

int batchfit__result_warn(batchfit_ctx *ctx, batchfit_result *result, const char *fmt, ...)
{
    char text[BATCHFIT_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (len >= (int)sizeof text)
        text[batchfit__utf8_cut(text, sizeof text - 1)] = '\0';
    batchfit__log(ctx, BATCHFIT_LOG_WARN, "%s", text);
    return batchfit__result_warned(ctx, result, text);
}

int batchfit__result_warned(batchfit_ctx *ctx, batchfit_result *result, const char *text)
{
    result_impl *r = (result_impl *)result;
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

int batchfit__result_keep(batchfit_result *result, const char **field, const char *text)
{
    result_impl *r = (result_impl *)result;
    void *array = r->owned;
    if (grow(&r->allocator, &array, &r->owned_cap, r->owned_count + 1, sizeof(char *)))
        return BATCHFIT_E_NO_MEMORY;
    r->owned = array;
    char *copy = batchfit__strdup(&r->allocator, text);
    if (!copy)
        return BATCHFIT_E_NO_MEMORY;
    r->owned[r->owned_count++] = copy;
    *field = copy;
    return BATCHFIT_OK;
}

int batchfit__result_keep_command(batchfit_result *result, const char *const *argv)
{
    result_impl *r = (result_impl *)result;
    size_t argc = 0;
    while (argv[argc])
        argc++;
    const char **copy = batchfit__calloc(&r->allocator, argc + 1, sizeof *copy);
    if (!copy)
        return BATCHFIT_E_NO_MEMORY;
    r->pub.command = copy;
    for (size_t i = 0; i < argc; i++) {
        if (batchfit__result_keep(result, &copy[i], argv[i]) != BATCHFIT_OK)
            return BATCHFIT_E_NO_MEMORY;
        r->pub.command_argc = i + 1;
    }
    return BATCHFIT_OK;
}

int batchfit_result_json(batchfit_ctx *ctx, const batchfit_result *result, const char **json_out)
{
    if (!result || !json_out)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "result json: no result given");
    *json_out = NULL;
    /* The text is a cache of the result's state, owned by it. */
    result_impl *r = (result_impl *)(uintptr_t)result;
    batchfit__buf b;
    batchfit__buf_init(&b, &r->allocator);
    if (batchfit__result_write_json(result, &b) != BATCHFIT_OK) {
        batchfit__buf_free(&b);
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory writing the JSON");
    }
    batchfit__free(&r->allocator, r->json);
    r->json = b.data;
    *json_out = r->json;
    return BATCHFIT_OK;
}

const batchfit_allocator *batchfit__result_allocator(const batchfit_result *result)
{
    return &((const result_impl *)result)->allocator;
}

const char *batchfit__result_set_svg(const batchfit_result *result, char *svg)
{
    /* Like the JSON text, the picture is a cache of the result's state. */
    result_impl *r = (result_impl *)(uintptr_t)result;
    batchfit__free(&r->allocator, r->svg);
    r->svg = svg;
    return svg;
}

void batchfit__result_complete(batchfit_ctx *ctx, batchfit_result *result, int code,
                               const char *message)
{
    (void)ctx;
    result->complete = 1;
    result->status = code;
    if (code && batchfit__result_keep(result, &result->error, message) != BATCHFIT_OK)
        result->error = NULL;
}

int batchfit_result_failed(batchfit_ctx *ctx, int code, const char *message,
                           batchfit_result **out)
{
    if (!ctx || !out || code <= BATCHFIT_OK || code > BATCHFIT_E_NOT_FOUND || !message)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "result_failed: a failure code and a message are required");
    *out = batchfit__result_new(ctx);
    if (!*out)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory allocating a result");
    batchfit__result_complete(ctx, *out, code, message);
    if (!(*out)->error) {
        batchfit_result_free(*out);
        *out = NULL;
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory allocating a result");
    }
    return BATCHFIT_OK;
}

int batchfit__result_set_agreement(batchfit_result *result, batchfit_agree_mode mode,
                                   batchfit_rank_outcome *outcomes, size_t count, int status,
                                   int failed_rank, const char *why)
{
    result_impl *r = (result_impl *)result;
    batchfit__free(&r->allocator, r->outcomes);
    r->outcomes = outcomes;
    r->pub.rank_outcomes = outcomes;
    r->pub.rank_count = count;
    r->pub.agreed = 1;
    r->pub.agree_mode = mode;
    r->pub.agreed_status = status;
    r->pub.agreed_batch_size = 0;
    r->pub.agreed_error = NULL;
    if (failed_rank < 0)
        return BATCHFIT_OK;
    const batchfit_rank_outcome *o = &outcomes[failed_rank];
    char text[BATCHFIT_ERRMSG_MAX + 128];
    snprintf(text, sizeof text, "rank %d (%s): %s", o->rank,
             o->device_spec[0] ? o->device_spec : "no device", why ? why : o->error);
    return batchfit__result_keep(result, &r->pub.agreed_error, text);
}
