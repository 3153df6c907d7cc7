/* The decision: validated options, the effective minimum (rounded up onto
 * the lattice; it wins over a smaller requested maximum), the upper bound
 * (requested maximum, dataset size, or the default limit) and the fallback
 * used when there is no device. Nothing here touches a device. */
#include "internal.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

void batchfit_options_init(batchfit_options *opts)
{
    if (!opts)
        return;
    *opts = (batchfit_options){0};
    opts->struct_size = sizeof *opts;
    opts->lattice = BATCHFIT_LATTICE_EVERY;
    opts->lattice_multiple = 1;
    opts->margin_fraction = BATCHFIT_DEFAULT_MARGIN_FRACTION;
    opts->upper_limit = BATCHFIT_DEFAULT_UPPER_LIMIT;
    opts->max_trials = BATCHFIT_DEFAULT_MAX_TRIALS;
    opts->strategy = BATCHFIT_STRATEGY_MODEL;
    opts->peak_spread = -1.0;
    opts->no_device = BATCHFIT_NO_DEVICE_FALLBACK;
}

/* The size of batchfit_options before cached_budget_bytes was added: a
 * program built against that header passes this struct_size. */
#define OPTIONS_SIZE_BEFORE_CACHED_BUDGET offsetof(batchfit_options, cached_budget_bytes)

/* The fields of options already copied whole (batchfit__options_take). */
static int check_options(batchfit_ctx *ctx, const batchfit_options *opts)
{
    if (opts->lattice != BATCHFIT_LATTICE_EVERY && opts->lattice != BATCHFIT_LATTICE_MULTIPLE &&
        opts->lattice != BATCHFIT_LATTICE_POW2)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "options: unknown lattice %d",
                              (int)opts->lattice);
    if (opts->lattice == BATCHFIT_LATTICE_MULTIPLE && opts->lattice_multiple == 0)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "options: lattice_multiple must be at least 1");
    if (!(opts->margin_fraction >= 0.0 && opts->margin_fraction < 1.0))
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "options: margin_fraction %g is outside [0, 1)",
                              opts->margin_fraction);
    if (isnan(opts->peak_spread) || opts->peak_spread >= 0.5)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "options: peak_spread %g must be below 0.5 (or negative for the "
                              "device's own)",
                              opts->peak_spread);
    if (opts->max_trials == 0)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "options: max_trials must be at least 1");
    if (opts->ranks && !batchfit__ranks_valid(opts->ranks))
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "options: ranks needs struct_size, an allgather, a size of at "
                              "least 1 and a rank in [0, size)");
    if (opts->cached_fit.valid &&
        !(isfinite(opts->cached_fit.intercept_bytes) &&
          isfinite(opts->cached_fit.bytes_per_sample) &&
          isfinite(opts->cached_fit.max_residual_bytes) &&
          opts->cached_fit.max_residual_bytes >= 0.0))
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "options: cached_fit has a value that is not finite");
    if (opts->parallel > BATCHFIT_MAX_PARALLEL)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "options: parallel %u is above the most, %d", opts->parallel,
                              BATCHFIT_MAX_PARALLEL);
    if (opts->upper_limit == 0 || opts->upper_limit > INT64_MAX)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "options: upper_limit must be between 1 and 2^63-1");
    if (opts->requested_max > INT64_MAX || opts->min_batch > INT64_MAX ||
        opts->samples > INT64_MAX)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "options: batch sizes must be below 2^63");
    if (!batchfit_strategy_name(opts->strategy))
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "options: unknown strategy %d",
                              (int)opts->strategy);
    if (opts->no_device != BATCHFIT_NO_DEVICE_FALLBACK &&
        opts->no_device != BATCHFIT_NO_DEVICE_ERROR)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "options: unknown no_device policy %d", (int)opts->no_device);
    return BATCHFIT_OK;
}

int batchfit__options_take(batchfit_ctx *ctx, const batchfit_options **opts,
                           batchfit_options *own)
{
    const batchfit_options *in = *opts;
    /* "At least this big" (include/batchfit.h): a struct from an older
     * header is copied as far as it goes, and the fields past it keep
     * their defaults; the library reads only the copy. */
    if (!in || in->struct_size < OPTIONS_SIZE_BEFORE_CACHED_BUDGET)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "options: not initialised with batchfit_options_init()");
    batchfit_options_init(own);
    size_t size = in->struct_size < sizeof *own ? in->struct_size : sizeof *own;
    memcpy(own, in, size);
    own->struct_size = sizeof *own;
    *opts = own;
    return check_options(ctx, own);
}


static int is_pow2(uint64_t x)
{
    return x && !(x & (x - 1));
}

/* The extra candidate of a power-of-two lattice: the requested maximum when
 * it is not itself a power of two. */
static uint64_t lattice_extra(const batchfit_options *opts)
{
    if (opts->lattice == BATCHFIT_LATTICE_POW2 && opts->requested_max &&
        !is_pow2(opts->requested_max))
        return opts->requested_max;
    return 0;
}

int batchfit__decide_bounds(batchfit_ctx *ctx, const batchfit_options *opts, uint64_t step_min,
                            batchfit_result *result)
{
    uint64_t multiple = opts->lattice == BATCHFIT_LATTICE_MULTIPLE ? opts->lattice_multiple : 1;
    uint64_t extra = lattice_extra(opts);
    uint64_t min_raw = opts->min_batch > step_min ? opts->min_batch : step_min;
    if (min_raw == 0)
        min_raw = 1;
    uint64_t min = batchfit__lattice_ceil(opts->lattice, multiple, extra, min_raw);
    if (min == 0 || min > INT64_MAX)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "the minimum batch size %llu has no allowed size above it",
                              (unsigned long long)min_raw);
    if (min != min_raw)
        batchfit__log(ctx, BATCHFIT_LOG_INFO,
                      "minimum batch size %llu rounded up onto the lattice: %llu",
                      (unsigned long long)min_raw, (unsigned long long)min);

    uint64_t bound = opts->requested_max ? opts->requested_max : opts->upper_limit;
    if (opts->samples && opts->samples < bound) {
        batchfit__log(ctx, BATCHFIT_LOG_INFO, "the dataset's %llu samples bound the batch size",
                      (unsigned long long)opts->samples);
        bound = opts->samples;
    }
    uint64_t bound_on_lattice = batchfit__lattice_floor(opts->lattice, multiple, extra, bound);
    int rc = BATCHFIT_OK;
    if (bound_on_lattice < min) {
        /* The minimum as the warnings name it: the step's own, or the
         * lattice's smallest size above it (--multiple-of 8 --max 5 is not
         * a step whose minimum is 8). */
        char least[160];
        if (min == min_raw)
            snprintf(least, sizeof least, "the step's minimum of %llu", (unsigned long long)min);
        else if (opts->lattice == BATCHFIT_LATTICE_POW2)
            snprintf(least, sizeof least,
                     "the smallest allowed batch size, %llu (the minimum %llu rounded up onto "
                     "powers of two)",
                     (unsigned long long)min, (unsigned long long)min_raw);
        else
            snprintf(least, sizeof least,
                     "the smallest allowed batch size, %llu (the minimum %llu rounded up onto "
                     "multiples of %llu)",
                     (unsigned long long)min, (unsigned long long)min_raw,
                     (unsigned long long)multiple);
        if (opts->requested_max && opts->requested_max < min)
            rc = batchfit__result_warn(ctx, result,
                                       "requested max_batch_size=%llu is below %s; using %llu",
                                       (unsigned long long)opts->requested_max, least,
                                       (unsigned long long)min);
        else if (opts->samples && opts->samples < min)
            rc = batchfit__result_warn(ctx, result,
                                       "the dataset has %llu samples, fewer than %s; using %llu",
                                       (unsigned long long)opts->samples, least,
                                       (unsigned long long)min);
        else
            rc = batchfit__result_warn(ctx, result,
                                       "no allowed batch size lies between the minimum %llu "
                                       "and the bound %llu; using %llu",
                                       (unsigned long long)min, (unsigned long long)bound,
                                       (unsigned long long)min);
        bound_on_lattice = min;
    }
    result->min_batch = min;
    result->upper_bound = bound_on_lattice;
    result->lattice = opts->lattice;
    result->lattice_multiple = multiple;
    result->strategy = opts->strategy;
    return rc;
}

int batchfit_decide(batchfit_ctx *ctx, const batchfit_options *opts, uint64_t step_min,
                    batchfit_result **out)
{
    if (!ctx || !out)
        return BATCHFIT_E_INVALID_ARGUMENT;
    *out = NULL;
    batchfit_options own;
    int rc = batchfit__options_take(ctx, &opts, &own);
    if (rc)
        return rc;
    batchfit_result *result = batchfit__result_new(ctx);
    if (!result)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory allocating a result");
    rc = batchfit__decide_bounds(ctx, opts, step_min, result);
    *out = result;
    return rc;
}
