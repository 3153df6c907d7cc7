/* The in-process probe: the step's lifecycle around the search. The library
 * owns the order - check the device, hold the margin, build the step, run
 * the search, release the step, free the margin - and release() runs
 * exactly once for every successful build(), on every path. */
#include "internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct inproc {
    batchfit_device *device;
    const batchfit_step *step;
    void *state;
} inproc;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int inproc_trial(void *userdata, uint64_t batch, batchfit_trial *trial)
{
    inproc *p = userdata;
    const batchfit_device_ops *ops = p->device->ops;
    batchfit_step_report report;
    memset(&report, 0, sizeof report);
    if (ops->peak_begin)
        ops->peak_begin(p->device);
    double start = now_seconds();
    batchfit_outcome outcome = p->step->run(p->state, batch, &report);
    trial->seconds = now_seconds() - start;
    if (outcome != BATCHFIT_FITS && outcome != BATCHFIT_OOM && outcome != BATCHFIT_ERROR) {
        snprintf(report.message, sizeof report.message, "run() returned unknown outcome %d",
                 (int)outcome);
        outcome = BATCHFIT_ERROR;
    }
    trial->outcome = outcome;
    report.message[sizeof report.message - 1] = '\0';
    memcpy(trial->message, report.message, sizeof trial->message);
    /* The step's own measurement wins; otherwise the device's, when it can
     * measure. After an OOM only the step can say what it needed. */
    uint64_t peak;
    if (report.peak_known && outcome != BATCHFIT_ERROR) {
        trial->peak_known = 1;
        trial->peak_bytes = report.peak_bytes;
    } else if (outcome == BATCHFIT_FITS && ops->peak_end &&
               ops->peak_end(p->device, &peak) == BATCHFIT_OK) {
        trial->peak_known = 1;
        trial->peak_bytes = peak;
    }
    if (outcome == BATCHFIT_OOM && p->step->on_oom)
        p->step->on_oom(p->state, batch);
    return 0;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* With no usable device nothing is measured and the step is never built:
 * the size is the requested maximum, else the default, within the bounds. */
static int fallback(batchfit_ctx *ctx, const batchfit_options *opts, const char *why,
                    batchfit_result *result)
{
    uint64_t size;
    const char *from;
    if (opts->requested_max) {
        size = opts->requested_max;
        from = "the requested max_batch_size";
    } else {
        size = opts->fallback_batch ? opts->fallback_batch : BATCHFIT_FALLBACK_BATCH_SIZE;
        from = opts->fallback_batch ? "the configured fallback size" : "the default fallback size";
    }
    if (opts->samples && opts->samples < size) {
        size = opts->samples;
        from = "the dataset size";
    }
    size = batchfit__lattice_floor(result->lattice, result->lattice_multiple,
                                   opts->requested_max, min_u64(size, result->upper_bound));
    if (size < result->min_batch) {
        size = result->min_batch;
        from = "the minimum batch size";
    }
    result->batch_size = size;
    result->source = BATCHFIT_SOURCE_FALLBACK;
    return batchfit__result_warn(ctx, result,
                                 "no usable device (%s): batch size %llu was not measured; it is "
                                 "%s",
                                 why, (unsigned long long)size, from);
}

static int settle_budget(batchfit_ctx *ctx, const batchfit_options *opts, batchfit_device *device,
                         batchfit_result *result);

static int check_step(batchfit_ctx *ctx, const batchfit_step *step)
{
    if (!step || step->struct_size != sizeof *step || !step->build || !step->run ||
        !step->release)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "step: struct_size, build, run and release are required");
    return BATCHFIT_OK;
}

int batchfit_settle_budget(batchfit_ctx *ctx, const batchfit_options *opts,
                           batchfit_device *device, batchfit_result *result)
{
    if (!ctx || !result || !device)
        return BATCHFIT_E_INVALID_ARGUMENT;
    int rc = batchfit__check_options(ctx, opts);
    if (rc)
        return rc;
    return settle_budget(ctx, opts, device, result);
}

/* Settles usable memory, margin and budget from the device's free memory. */
static int settle_budget(batchfit_ctx *ctx, const batchfit_options *opts, batchfit_device *device,
                         batchfit_result *result)
{
    batchfit_budget *b = &result->budget;
    int rc = batchfit_device_memory(device, &b->total_bytes, &b->free_bytes);
    if (rc)
        return rc;
    b->known = 1;
    b->usable_bytes = b->free_bytes;
    if (opts->memory_budget_bytes) {
        if (opts->memory_budget_bytes > b->free_bytes) {
            rc = batchfit__result_warn(ctx, result,
                                       "the memory budget of %llu bytes exceeds the %llu bytes "
                                       "free on the device; using what is free",
                                       (unsigned long long)opts->memory_budget_bytes,
                                       (unsigned long long)b->free_bytes);
            if (rc)
                return rc;
        } else {
            b->usable_bytes = opts->memory_budget_bytes;
        }
    }
    if (opts->vram_limit_bytes) {
        b->vram_limit_bytes = opts->vram_limit_bytes;
        b->usable_bytes = min_u64(b->usable_bytes, opts->vram_limit_bytes);
    }
    b->margin_bytes = opts->margin_bytes
                          ? opts->margin_bytes
                          : (uint64_t)((double)b->usable_bytes * opts->margin_fraction);
    if (b->margin_bytes >= b->usable_bytes)
        return batchfit__fail(ctx, BATCHFIT_E_MIN_DOES_NOT_FIT,
                              "the margin of %llu bytes leaves nothing of the %llu usable bytes",
                              (unsigned long long)b->margin_bytes,
                              (unsigned long long)b->usable_bytes);
    b->budget_bytes = b->usable_bytes - b->margin_bytes;
    b->peak_spread = opts->peak_spread >= 0.0 ? opts->peak_spread
                                              : batchfit_device_peak_spread(device);
    return BATCHFIT_OK;
}

/* Everything after the bounds are decided and a device is usable. */
static int probe_device(batchfit_ctx *ctx, const batchfit_options *opts, batchfit_device *device,
                        const batchfit_step *step, void *step_userdata, batchfit_result *result)
{
    int rc = settle_budget(ctx, opts, device, result);
    if (rc)
        return rc;
    batchfit_budget *b = &result->budget;
    /* Ballast makes the budget real: the step sees exactly budget_bytes free. */
    uint64_t ballast = b->free_bytes - b->budget_bytes;
    if (ballast && device->ops->hold) {
        rc = device->ops->hold(device, ballast);
        if (rc)
            return rc;
        b->held_bytes = ballast;
    }
    inproc p = {device, step, NULL};
    char msg[BATCHFIT_MESSAGE_MAX] = "";
    uint64_t before = 0, after = 0;
    int usage_known = device->ops->usage && device->ops->usage(device, &before) == BATCHFIT_OK;
    batchfit_outcome built = step->build(step_userdata, device, &p.state, msg, sizeof msg);
    if (built == BATCHFIT_FITS) {
        /* What the built step holds before any trial (weights, optimizer
         * state) is the intercept of its memory curve. */
        if (usage_known && device->ops->usage(device, &after) == BATCHFIT_OK && after >= before) {
            result->baseline_known = 1;
            result->baseline_bytes = after - before;
        }
        rc = batchfit__search_run(ctx, opts, inproc_trial, &p, result);
        step->release(p.state);
    } else if (built == BATCHFIT_OOM) {
        rc = batchfit__fail(ctx, BATCHFIT_E_MIN_DOES_NOT_FIT,
                            "the step could not even be built within the budget: %s; try a "
                            "smaller model, lower precision, a smaller margin or a larger device",
                            msg[0] ? msg : "out of memory");
    } else {
        rc = batchfit__fail(ctx, BATCHFIT_E_TRIAL_ERROR, "building the step failed: %s",
                            msg[0] ? msg : "(no message)");
    }
    if (b->held_bytes && device->ops->release_hold)
        device->ops->release_hold(device);
    return rc;
}

int batchfit_probe(batchfit_ctx *ctx, const batchfit_options *opts, batchfit_device *device,
                   const batchfit_step *step, void *step_userdata, batchfit_result **out)
{
    if (!ctx || !out)
        return BATCHFIT_E_INVALID_ARGUMENT;
    *out = NULL;
    int rc = batchfit__check_options(ctx, opts);
    if (rc == BATCHFIT_OK)
        rc = check_step(ctx, step);
    if (rc)
        return rc;
    batchfit_result *result = batchfit__result_new(ctx);
    if (!result)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory allocating a result");
    *out = result;
    rc = batchfit__decide_bounds(ctx, opts, step->min_batch, result);
    if (rc)
        return rc;
    const char *why = NULL;
    if (!batchfit_device_available(device, &why)) {
        if (opts->no_device == BATCHFIT_NO_DEVICE_ERROR)
            return batchfit__fail(ctx, BATCHFIT_E_NO_DEVICE, "no usable device: %s", why);
        return fallback(ctx, opts, why, result);
    }
    return probe_device(ctx, opts, device, step, step_userdata, result);
}
