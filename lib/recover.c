/* Recovery from running out of memory during training: a smaller
 * micro-batch and more gradient accumulation, so the effective batch - the
 * samples behind each optimizer step - never changes; the data pipeline is
 * rebuilt through the caller's callback; optionally grow back after a run
 * of clean steps. */
#include "internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>

struct batchfit_recover_s {
    batchfit_ctx *ctx;
    batchfit_recover_options opts;
    batchfit_recover_plan plan;
    uint64_t start_micro;     /* the probed size */
    uint64_t last_good_micro; /* the largest micro-batch that ran clean since the last shrink */
    unsigned clean_steps;
    unsigned retries;
    unsigned grow_wait;       /* clean steps before the next attempt to grow */
    int growing;              /* the current plan is an attempt to grow */
    int retrying;             /* the plan is the size a grow ran out of memory at, on trial */
    uint64_t retry_from;      /* the micro-batch before that retry */
    unsigned retry_clean;     /* clean steps the retried size has run */
    uint64_t grow_failed;     /* the smallest micro-batch a grow ran out of memory at; 0 none */
};

void batchfit_recover_options_init(batchfit_recover_options *opts)
{
    if (!opts)
        return;
    *opts = (batchfit_recover_options){0};
    opts->struct_size = sizeof *opts;
    opts->min_batch = 1;
    opts->max_retries = 8;
}

/* Micro-batches of at most micro for the global batch G: the fewest steps
 * k, the last holding what remains, every one (the last too) at least min
 * (a BatchNorm layer that needs two samples fails on a last micro-batch of
 * 1), and as even as k steps allow. The fewest: for each k from
 * ceil(G / micro) up, the largest m with k steps whose remainder
 * G - m (k - 1) is at least min is (G - min) / (k - 1), where that still
 * takes k steps (10 with 4 at least 4 has none: 4 + 4 + 2; 9 with 8 at
 * least 2 is 5 + 4). The first k that has one gives it; past k > G / min
 * none does. Returns 0 when there is none, or the steps would not fit the
 * plan's count. */
static int make_plan(batchfit_recover_plan *p, uint64_t global, uint64_t micro, uint64_t min)
{
    if (micro > global)
        micro = global;
    if (micro == 0 || min == 0 || micro < min)
        return 0;
    for (uint64_t k = global / micro + (global % micro != 0); k <= global / min; k++) {
        if (k > UINT_MAX)
            return 0;
        uint64_t m = k == 1 ? global : (global - min) / (k - 1);
        if (m > micro)
            m = micro;
        if (m < min)
            return 0;
        uint64_t steps = global / m + (global % m != 0);
        if (steps != k) {
            /* No size takes k steps with that remainder (steps > k): the
             * next k that can is the one m itself takes. */
            k = steps - 1;
            continue;
        }
        /* As even as k steps allow: ceil(G / k) each, the last what
         * remains (97 in 7 is 14 x 6 + 13, not 16 x 6 + 1: a last
         * micro-batch of one sample broke BatchNorm, and weighed a
         * sample 16 times over in an unweighted mean of the losses),
         * where that keeps k steps and the last at least min (then
         * the others too: the last is never the largest). */
        uint64_t even = global / k + (global % k != 0);
        if (global > even * (k - 1) && global - even * (k - 1) >= min)
            m = even;
        p->micro_batch = m;
        p->accumulation = (unsigned)k;
        p->last_micro_batch = global - m * (k - 1);
        p->effective_batch = global;
        return 1;
    }
    return 0;
}

static int no_plan(batchfit_recover *r, int code, uint64_t micro)
{
    /* Past the count a plan holds, the limit is the accumulation steps,
     * not the split (10^12 in micro-batches of 100 read as no split). */
    uint64_t global = r->opts.global_batch;
    if (micro && global / micro + (global % micro != 0) > UINT_MAX)
        return batchfit__fail(r->ctx, code,
                              "recover: the global batch of %llu in micro-batches of at most %llu "
                              "takes more than %u accumulation steps, the most a plan holds%s",
                              (unsigned long long)global, (unsigned long long)micro, UINT_MAX,
                              code == BATCHFIT_E_MIN_DOES_NOT_FIT ? "; giving up" : "");
    return batchfit__fail(r->ctx, code,
                          "recover: the global batch of %llu does not split into micro-batches of "
                          "at most %llu and at least the minimum of %llu%s",
                          (unsigned long long)r->opts.global_batch, (unsigned long long)micro,
                          (unsigned long long)r->opts.min_batch,
                          code == BATCHFIT_E_MIN_DOES_NOT_FIT ? "; giving up" : "");
}

/* A plan with micro-batches of at most micro, or, where the global batch
 * does not split that finely with every micro-batch at least the minimum,
 * the plan of the smallest size above micro and under below that does (11
 * with a minimum of 4 halves to 5, which leaves 5 + 5 + 1 or 4 + 4 + 3;
 * 6 + 5 splits it). Each miss moves on to the next size that takes one
 * accumulation step fewer. below 0: micro alone. */
static int plan_near(batchfit_recover_plan *p, uint64_t global, uint64_t micro, uint64_t below,
                     uint64_t min)
{
    while (!make_plan(p, global, micro, min)) {
        uint64_t k = global / micro + (global % micro != 0);
        if (k <= 1)
            return 0;
        micro = global / (k - 1) + (global % (k - 1) != 0);
        if (micro >= below)
            return 0;
    }
    return 1;
}

/* The plan becomes the new one only once the resize callback took it: a
 * refusal leaves the plan the data pipeline still has (it was the new
 * one, which the pipeline never got). below: as plan_near's. */
static int apply(batchfit_recover *r, uint64_t micro, uint64_t below, const char *why)
{
    batchfit_recover_plan next;
    if (!plan_near(&next, r->opts.global_batch, micro, below, r->opts.min_batch))
        return no_plan(r, BATCHFIT_E_MIN_DOES_NOT_FIT, micro);
    char near[192] = "";
    if (next.micro_batch > micro)
        snprintf(near, sizeof near,
                 " (not to %llu: %llu is the nearest size that splits the global batch with "
                 "every micro-batch at least %llu)",
                 (unsigned long long)micro, (unsigned long long)next.micro_batch,
                 (unsigned long long)r->opts.min_batch);
    batchfit__log(r->ctx, BATCHFIT_LOG_INFO,
                  "recover: micro-batch %llu x %u accumulation steps (the last of %llu) keeps the "
                  "effective batch at %llu: %s%s",
                  (unsigned long long)next.micro_batch, next.accumulation,
                  (unsigned long long)next.last_micro_batch,
                  (unsigned long long)next.effective_batch, why, near);
    if (r->opts.resize && r->opts.resize(&next, r->opts.userdata) != 0)
        return batchfit__fail(r->ctx, BATCHFIT_E_ABORTED,
                              "recover: the resize callback stopped training at micro-batch %llu; "
                              "the plan stays micro-batch %llu",
                              (unsigned long long)micro, (unsigned long long)r->plan.micro_batch);
    r->plan = next;
    return BATCHFIT_OK;
}

int batchfit_recover_create(batchfit_ctx *ctx, const batchfit_recover_options *opts,
                            batchfit_recover **out)
{
    if (!ctx || !out)
        return BATCHFIT_E_INVALID_ARGUMENT;
    *out = NULL;
    if (!opts || opts->struct_size < sizeof *opts)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "recover: options not initialised with batchfit_recover_options_init()");
    if (opts->global_batch == 0 || opts->micro_batch == 0)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "recover: the global batch and the starting micro-batch must be "
                              "positive");
    uint64_t min = opts->min_batch ? opts->min_batch : 1;
    if (min > opts->global_batch)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "recover: the minimum micro-batch %llu exceeds the global batch %llu",
                              (unsigned long long)min, (unsigned long long)opts->global_batch);
    const batchfit_fit *f = &opts->fit;
    /* A curve that is no curve (NaN, infinite or negative) was ignored
     * without a word at the first out of memory. */
    if (f->valid && (!isfinite(f->intercept_bytes) || !isfinite(f->bytes_per_sample) ||
                     !isfinite(f->max_residual_bytes) || f->bytes_per_sample < 0.0 ||
                     f->max_residual_bytes < 0.0))
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "recover: the fit (%g bytes + %g a sample, residual %g) is not a "
                              "curve: its values must be finite, its slope and residual not "
                              "negative",
                              f->intercept_bytes, f->bytes_per_sample, f->max_residual_bytes);
    batchfit_recover *r = batchfit__calloc(&ctx->allocator, 1, sizeof *r);
    if (!r)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory creating a recovery");
    r->ctx = ctx;
    r->opts = *opts;
    r->opts.min_batch = min;
    uint64_t start = opts->micro_batch < min ? min : opts->micro_batch;
    r->start_micro = start > opts->global_batch ? opts->global_batch : start;
    r->grow_wait = opts->grow_after;
    r->last_good_micro = 0;
    if (!make_plan(&r->plan, opts->global_batch, r->start_micro, min)) {
        int rc = no_plan(r, BATCHFIT_E_INVALID_ARGUMENT, r->start_micro);
        batchfit__free(&ctx->allocator, r);
        return rc;
    }
    r->start_micro = r->plan.micro_batch;
    /* The step's minimum wins over the size asked for, with a warning: the
     * probe may have found less fits. */
    if (opts->micro_batch < min)
        batchfit__log(ctx, BATCHFIT_LOG_WARN,
                      "recover: the starting micro-batch %llu is under the minimum of %llu; the "
                      "minimum wins (it may not fit: a step that runs out of memory there gives "
                      "up)",
                      (unsigned long long)opts->micro_batch, (unsigned long long)min);
    *out = r;
    return BATCHFIT_OK;
}

void batchfit_recover_free(batchfit_recover *rec)
{
    if (rec)
        batchfit__free(&rec->ctx->allocator, rec);
}

const batchfit_recover_plan *batchfit_recover_get(const batchfit_recover *rec)
{
    return rec ? &rec->plan : NULL;
}

/* The micro-batch to grow to under top (at most top), halfway from the
 * plan's: top itself where halfway splits into no larger a micro-batch; 0
 * where nothing larger than the plan's splits at or under top. */
static uint64_t grow_target(const batchfit_recover *r, uint64_t top)
{
    if (top <= r->plan.micro_batch)
        return 0;
    uint64_t target = r->plan.micro_batch + (top - r->plan.micro_batch + 1) / 2;
    batchfit_recover_plan grown;
    if (!make_plan(&grown, r->opts.global_batch, target, r->opts.min_batch) ||
        grown.micro_batch <= r->plan.micro_batch)
        target = top;
    if (!make_plan(&grown, r->opts.global_batch, target, r->opts.min_batch) ||
        grown.micro_batch <= r->plan.micro_batch)
        return 0;
    return target;
}

int batchfit_recover_step_ok(batchfit_recover *r, int *changed)
{
    if (!r)
        return BATCHFIT_E_INVALID_ARGUMENT;
    if (changed)
        *changed = 0;
    r->retries = 0;
    r->growing = 0;
    /* The size a grow ran out of memory at, tried again, is on trial for
     * the wait: one clean step proved nothing where memory comes and goes
     * (room for 10 or 13 at random: a retry of 13 taken as passed after one
     * step ran out of memory 633 times in 100000 steps, each halving). Clean
     * for the wait, what squeezed it has passed, and growing goes on as
     * from the start. */
    if (r->retrying) {
        if (++r->retry_clean < r->grow_wait)
            return BATCHFIT_OK;
        batchfit__log(r->ctx, BATCHFIT_LOG_INFO,
                      "recover: micro-batch %llu, where a grow ran out of memory before, ran "
                      "%u clean steps: growing back toward the probed %llu every %u clean steps "
                      "again",
                      (unsigned long long)r->plan.micro_batch, r->retry_clean,
                      (unsigned long long)r->start_micro, r->opts.grow_after);
        r->retrying = 0;
        r->grow_failed = 0;
        r->grow_wait = r->opts.grow_after;
        r->clean_steps = 0;
        return BATCHFIT_OK;
    }
    if (r->plan.micro_batch > r->last_good_micro)
        r->last_good_micro = r->plan.micro_batch;
    r->clean_steps++;
    if (!r->opts.grow_after || r->plan.micro_batch >= r->start_micro ||
        r->clean_steps < r->grow_wait)
        return BATCHFIT_OK;
    /* Halfway back toward the probed size, or below the smallest size a
     * grow already failed at (aiming there again at once failed for ever:
     * 2 x 14 grew to 7, failed, went back, grew to 7, where 4 x 7 fitted):
     * memory freed by others may not all be back. Where the split rounds
     * that down to no larger a micro-batch (10 at least 4 splits evenly
     * only as 5 or 10: 8 is 5), the top itself. Where nothing larger splits
     * below that size, the run has held as close under it as it can for
     * the wait, doubled by every failure: that size is tried again (a
     * squeeze that passed, another job's memory given back, bounded the
     * run for good; one that lasts costs an out-of-memory step a doubling
     * of the wait). */
    r->clean_steps = 0;
    uint64_t bound = r->grow_failed && r->grow_failed - 1 < r->start_micro ? r->grow_failed - 1
                                                                            : r->start_micro;
    uint64_t target = grow_target(r, bound);
    int retry = 0;
    if (!target && bound < r->start_micro) {
        target = grow_target(r, r->grow_failed);
        retry = target != 0;
    }
    if (!target)
        return BATCHFIT_OK;
    char why[200];
    if (retry)
        snprintf(why, sizeof why,
                 "%u clean steps at the largest split under %llu: trying %llu again (a grow ran "
                 "out of memory there)",
                 r->grow_wait, (unsigned long long)r->grow_failed,
                 (unsigned long long)r->grow_failed);
    else
        snprintf(why, sizeof why, "%u clean steps: growing back toward the probed %llu",
                 r->grow_wait, (unsigned long long)r->start_micro);
    /* Growing only once the pipeline took the larger plan: after a
     * refusal the next out of memory was read as a failed grow, and it
     * "went back" to the very plan it had. */
    uint64_t from = r->plan.micro_batch;
    int rc = apply(r, target, 0, why);
    if (rc == BATCHFIT_OK) {
        r->growing = 1;
        r->retrying = retry;
        r->retry_from = from;
        r->retry_clean = 0;
        if (changed)
            *changed = 1;
    }
    return rc;
}

static int recover_oom(batchfit_recover *r, uint64_t available_bytes);

/* A resize the callback refuses changes nothing: the retries, the grow
 * state and what ran clean are as they were, with the plan. */
int batchfit_recover_oom(batchfit_recover *r, uint64_t available_bytes)
{
    if (!r)
        return BATCHFIT_E_INVALID_ARGUMENT;
    batchfit_recover before = *r;
    int rc = recover_oom(r, available_bytes);
    if (rc == BATCHFIT_E_ABORTED)
        *r = before;
    return rc;
}

static int recover_oom(batchfit_recover *r, uint64_t available_bytes)
{
    uint64_t m = r->plan.micro_batch;
    r->clean_steps = 0;
    if (r->growing || r->retrying) {
        /* Growing was too hopeful: back to the last size that ran clean
         * (before a retry, the size it was tried from), and wait twice as
         * long before the next attempt (never past UINT_MAX: doubled
         * without end, it wrapped to 0, and every clean step grew). */
        if (r->retrying)
            r->last_good_micro = r->retry_from;
        r->growing = 0;
        r->retrying = 0;
        if (!r->grow_failed || m < r->grow_failed)
            r->grow_failed = m;
        r->grow_wait = !r->grow_wait              ? r->opts.grow_after
                       : r->grow_wait > UINT_MAX / 2 ? UINT_MAX
                                                      : r->grow_wait * 2;
        uint64_t back = r->last_good_micro ? r->last_good_micro : m / 2;
        if (back < r->opts.min_batch)
            back = r->opts.min_batch;
        char why[160];
        snprintf(why, sizeof why,
                 "out of memory after growing to %llu: back to %llu, next attempt after %u clean "
                 "steps",
                 (unsigned long long)m, (unsigned long long)back, r->grow_wait);
        return apply(r, back, m, why);
    }
    if (m <= r->opts.min_batch)
        return batchfit__fail(r->ctx, BATCHFIT_E_MIN_DOES_NOT_FIT,
                              "recover: out of memory at the minimum micro-batch of %llu; giving up",
                              (unsigned long long)m);
    if (++r->retries > r->opts.max_retries)
        return batchfit__fail(r->ctx, BATCHFIT_E_MIN_DOES_NOT_FIT,
                              "recover: out of memory after %u reduction%s in a row without a "
                              "clean step (max_retries %u); giving up",
                              r->opts.max_retries, r->opts.max_retries == 1 ? "" : "s",
                              r->opts.max_retries);
    uint64_t next = m / 2;
    char why[200];
    snprintf(why, sizeof why, "out of memory at micro-batch %llu: halved",
             (unsigned long long)m);
    const batchfit_fit *f = &r->opts.fit;
    /* The curve less its largest residual: the probe's points strayed that
     * far from it, and a size whose predicted peak is exactly what is
     * available fails on the first such point. */
    double room = (double)available_bytes - f->intercept_bytes -
                  (f->max_residual_bytes > 0.0 ? f->max_residual_bytes : 0.0);
    if (available_bytes && f->valid && f->bytes_per_sample > 0.0 && room > 0.0) {
        double fits = floor(room / f->bytes_per_sample);
        if (fits >= 1.0 && fits < (double)m) {
            next = (uint64_t)fits;
            snprintf(why, sizeof why,
                     "out of memory at micro-batch %llu: the probe's curve (%.0f bytes + %.0f a "
                     "sample) fits %llu in the %llu bytes available now",
                     (unsigned long long)m, f->intercept_bytes, f->bytes_per_sample,
                     (unsigned long long)next, (unsigned long long)available_bytes);
        }
    }
    if (next < r->opts.min_batch)
        next = r->opts.min_batch;
    if (next >= m)
        next = m - 1;
    /* What ran clean before no longer tells what fits now. */
    r->last_good_micro = 0;
    return apply(r, next, m, why);
}
