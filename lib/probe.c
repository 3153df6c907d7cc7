/* The probe: one orchestration for every kind of trial. The library owns
 * the order - decide, check the device, settle the budget, look up the
 * cache, hold the margin, set up the trial source (build the step, or
 * prepare the command runner), search, tear the source down, free the
 * margin, remember the answer - and every step that took something gives
 * it back on every path. In-process steps and child commands are two trial
 * sources behind it (probe_step.c, probe_command.c), not two copies. */
#include "internal.h"
#include "probe.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* With no usable device nothing is measured and nothing is built: the size
 * is the requested maximum, else the default, within the bounds. */
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

/* Settles usable memory, margin and budget of one device (or one GPU of
 * several, named by gpu) from its free memory. In process (the trials run
 * here), what this process holds already and its peaks count is usable
 * too: on the host the free figure (MemAvailable) leaves out the very
 * pages each trial's peak (VmHWM) includes, and a Python process holding
 * 1 GiB before the probe had its step held to 1 GiB less than was free. */
static int settle_one(batchfit_ctx *ctx, const batchfit_options *opts, batchfit_device *device,
                      const char *gpu, int in_process, batchfit_result *result,
                      batchfit_budget *b)
{
    int rc = batchfit_device_memory(device, &b->total_bytes, &b->free_bytes);
    if (rc)
        return rc;
    b->known = 1;
    const char *limited = batchfit_device_memory_note(device);
    if (limited[0]) {
        batchfit__log(ctx, BATCHFIT_LOG_INFO, "host: %s; the budget is taken from that", limited);
        if (batchfit__result_keep(result, &result->memory_note, limited) != BATCHFIT_OK)
            return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory keeping a note");
    }
    uint64_t own = 0;
    if (in_process && device->ops->self_held && device->ops->self_held(device, &own) == BATCHFIT_OK &&
        own) {
        char held[32];
        batchfit_format_bytes((double)own, held, sizeof held);
        batchfit__log(ctx, BATCHFIT_LOG_INFO,
                      "this process holds %s already, which its trials' peaks count: usable "
                      "with what is free",
                      held);
        batchfit__result_set_held_before(result, own);
    }
    uint64_t available = b->free_bytes > UINT64_MAX - own ? UINT64_MAX : b->free_bytes + own;
    b->usable_bytes = available;
    if (opts->memory_budget_bytes) {
        if (opts->memory_budget_bytes > available) {
            char asked[32], free_text[32];
            batchfit__format_bytes_apart((double)opts->memory_budget_bytes, (double)available,
                                         asked, free_text, sizeof asked);
            rc = batchfit__result_warn(ctx, result,
                                       "the memory budget of %s exceeds the %s free on %s%s%s; "
                                       "using what is free",
                                       asked, free_text, gpu ? gpu : "the device",
                                       own ? " with what this process holds" : "",
                                       limited[0] ? " under its cgroup's memory limit" : "");
            if (rc)
                return rc;
        } else {
            b->usable_bytes = opts->memory_budget_bytes;
        }
    }
    if (opts->vram_limit_bytes) {
        b->vram_limit_bytes = opts->vram_limit_bytes;
        /* An explicit budget the limit cuts is said: the two came from
         * different places (a flag, the environment) and one loses. */
        if (opts->memory_budget_bytes && opts->vram_limit_bytes < b->usable_bytes) {
            char limit[32], asked[32];
            batchfit__format_bytes_apart((double)opts->vram_limit_bytes,
                                         (double)opts->memory_budget_bytes, limit, asked,
                                         sizeof limit);
            rc = batchfit__result_warn(ctx, result,
                                       "the VRAM limit of %s (%s) caps the memory budget of %s%s%s: "
                                       "using %s",
                                       limit,
                                       opts->vram_limit_source ? opts->vram_limit_source : "options",
                                       asked, gpu ? " on " : "", gpu ? gpu : "", limit);
            if (rc)
                return rc;
        }
        b->usable_bytes = min_u64(b->usable_bytes, opts->vram_limit_bytes);
        /* A limit above the whole device limits nothing: likely a limit
         * meant for another device (80 GB set, a 24 GB card in use). */
        if (opts->vram_limit_bytes > b->total_bytes) {
            char limit[32], total[32];
            batchfit__format_bytes_apart((double)opts->vram_limit_bytes, (double)b->total_bytes,
                                         limit, total, sizeof limit);
            rc = batchfit__result_warn(ctx, result,
                                       "the VRAM limit of %s (%s) is above the %s of %s: it "
                                       "limits nothing here",
                                       limit,
                                       opts->vram_limit_source ? opts->vram_limit_source : "options",
                                       total, gpu ? gpu : "the device");
            if (rc)
                return rc;
        }
    }
    b->margin_bytes = opts->margin_bytes
                          ? opts->margin_bytes
                          : (uint64_t)((double)b->usable_bytes * opts->margin_fraction);
    /* Nothing free is the device's state, not the margin's fault (it said
     * "a margin of 0 B leaves nothing of the 0 B usable; give a smaller
     * margin" to a caller who gave none). */
    if (b->usable_bytes == 0) {
        char total[32];
        batchfit_format_bytes((double)b->total_bytes, total, sizeof total);
        return batchfit__fail(ctx, BATCHFIT_E_DEVICE,
                              "nothing of the %s of %s is free to probe (others hold it all); "
                              "free memory there or probe another device",
                              total, gpu ? gpu : batchfit_device_spec(device));
    }
    /* A margin that swallows everything is a mistake in the input (as a
     * margin of 100% is), not a measurement that nothing fits. */
    if (b->margin_bytes >= b->usable_bytes) {
        char margin[32], usable[32];
        batchfit__format_bytes_apart((double)b->margin_bytes, (double)b->usable_bytes, margin,
                                     usable, sizeof margin);
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "--margin: a margin of %s leaves nothing of the %s usable%s%s; "
                              "give a smaller margin",
                              margin, usable, gpu ? " on " : "", gpu ? gpu : "");
    }
    b->budget_bytes = b->usable_bytes - b->margin_bytes;
    b->peak_spread = opts->peak_spread >= 0.0 ? opts->peak_spread
                                              : batchfit_device_peak_spread(device);
    return BATCHFIT_OK;
}

/* A device of several GPUs: a budget for each, and the result's budget is
 * the tightest one's, which trials' peaks are scaled to. */
static int settle_gpus(batchfit_ctx *ctx, const batchfit_options *opts, batchfit_device *device,
                       batchfit_result *result)
{
    unsigned count = batchfit__device_gpus(device);
    batchfit_gpu_budget *gpus = batchfit__result_set_gpus(result, count);
    if (!gpus)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory recording the GPUs");
    for (unsigned i = 0; i < count; i++) {
        batchfit_device *gpu = batchfit__device_gpu(device, i);
        batchfit_budget b;
        memset(&b, 0, sizeof b);
        int rc = settle_one(ctx, opts, gpu, batchfit_device_spec(gpu), 0, result, &b);
        if (rc) {
            result->gpu_count = 0;
            return rc;
        }
        batchfit_device_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        batchfit_device_describe(gpu, &info);
        batchfit_gpu_budget *g = &gpus[i];
        batchfit__copy(g->spec, sizeof g->spec, batchfit_device_spec(gpu));
        batchfit__copy(g->name, sizeof g->name, info.name);
        batchfit__copy(g->uuid, sizeof g->uuid, info.uuid);
        g->total_bytes = b.total_bytes;
        g->free_bytes = b.free_bytes;
        g->usable_bytes = b.usable_bytes;
        g->margin_bytes = b.margin_bytes;
        g->budget_bytes = b.budget_bytes;
        if (i == 0 || b.budget_bytes < result->budget.budget_bytes) {
            result->budget = b;
            result->budget_gpu = i;
        }
    }
    result->budget.peak_spread = opts->peak_spread >= 0.0 ? opts->peak_spread
                                                          : batchfit_device_peak_spread(device);
    return BATCHFIT_OK;
}

/* Settles usable memory, margin and budget from the device's free memory. */
int batchfit__settle_budget(batchfit_ctx *ctx, const batchfit_options *opts,
                            batchfit_device *device, int in_process, batchfit_result *result)
{
    if (batchfit__device_is_list(device))
        return settle_gpus(ctx, opts, device, result);
    return settle_one(ctx, opts, device, NULL, in_process, result, &result->budget);
}

/* Ballast makes the budget real: what runs sees exactly the budget, on
 * each GPU of a device of several. What was held is released on failure. */
static int hold_ballast(batchfit_device *device, batchfit_result *result)
{
    batchfit_budget *b = &result->budget;
    if (!batchfit__device_is_list(device))
        return batchfit__device_hold(device, b->free_bytes - b->budget_bytes, &b->held_bytes);
    batchfit_gpu_budget *gpus = (batchfit_gpu_budget *)(uintptr_t)result->gpus;
    for (unsigned i = 0; i < result->gpu_count; i++) {
        batchfit_gpu_budget *g = &gpus[i];
        int rc = batchfit__device_hold(batchfit__device_gpu(device, i),
                                       g->free_bytes - g->budget_bytes, &g->held_bytes);
        if (rc) {
            batchfit__device_release(device);
            return rc;
        }
    }
    b->held_bytes = gpus[result->budget_gpu].held_bytes;
    return BATCHFIT_OK;
}

/* Looks the probe up in the cache: a remembered answer becomes the search's
 * hint (verified, never trusted). A damaged entry is a warning. */
static int cache_lookup(batchfit_ctx *ctx, batchfit_options *opts, const trial_source *src,
                        batchfit_device *device, batchfit_result *result, char *dir,
                        size_t dir_len)
{
    char err[BATCHFIT_ERRMSG_MAX];
    dir[0] = '\0';
    if (!opts->cache)
        return BATCHFIT_OK;
    if (opts->cache_dir && !opts->cache_dir[0])
        return batchfit__result_warn(ctx, result,
                                     "cache off: cache_dir is empty (NULL is the default "
                                     "directory)");
    if (opts->cache_dir && strlen(opts->cache_dir) >= dir_len)
        return batchfit__result_warn(ctx, result,
                                     "cache off: cache directory path is too long (cache_dir)");
    if (opts->cache_dir)
        batchfit__copy(dir, dir_len, opts->cache_dir);
    else if (batchfit_cache_dir(ctx, dir, dir_len) != BATCHFIT_OK) {
        dir[0] = '\0';
        return batchfit__result_warn(ctx, result, "cache off: %s", batchfit_ctx_last_error(ctx));
    }
    if (!opts->cache_key && !src->argv && !src->name) {
        dir[0] = '\0';
        return batchfit__result_warn(ctx, result,
                                     "cache off: an in-process probe needs a cache_key (or a "
                                     "named step) to tell its model apart");
    }
    batchfit__buf material;
    batchfit__buf_init(&material, &ctx->allocator);
    batchfit__cache_material(&material, opts, device, src->argv, src->settings);
    if (!opts->cache_key && !src->argv)
        batchfit__buf_printf(&material, "step %s\n", src->name);
    const char *text = batchfit__buf_text(&material);
    char key[40];
    if (text)
        batchfit__cache_key(text, material.len, key);
    batchfit__buf_free(&material);
    if (!text || batchfit__result_keep(result, &result->cache_key, key) != BATCHFIT_OK)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory building the cache key");
    batchfit_cache_entry e;
    int rc = batchfit__cache_lookup(ctx, dir, key, &e);
    /* A directory that cannot be trusted or used turns the cache off for
     * this probe; a damaged entry is only ignored (and replaced). */
    if (rc != BATCHFIT_OK && rc != BATCHFIT_E_NOT_FOUND && rc != BATCHFIT_E_PARSE)
        dir[0] = '\0';
    if (rc == BATCHFIT_OK && (e.batch_size < result->min_batch ||
                              e.batch_size > result->upper_bound)) {
        /* Remembered under other bounds than these: no hint at all. */
        batchfit__log(ctx, BATCHFIT_LOG_INFO,
                      "cache: %s remembers batch size %llu, outside [%llu, %llu]; searching", key,
                      (unsigned long long)e.batch_size, (unsigned long long)result->min_batch,
                      (unsigned long long)result->upper_bound);
    } else if (rc == BATCHFIT_OK) {
        result->cache_hit = 1;
        result->cache_remembered = e.batch_size;
        opts->cached_batch = e.batch_size;
        opts->cached_fit = e.fit;
        opts->cached_budget_bytes = e.budget_bytes;
        batchfit__log(ctx, BATCHFIT_LOG_INFO, "cache: %s remembers batch size %llu; verifying it",
                      key, (unsigned long long)e.batch_size);
    } else if (rc != BATCHFIT_E_NOT_FOUND) {
        snprintf(err, sizeof err, "%s", batchfit_ctx_last_error(ctx));
        return batchfit__result_warn(ctx, result, "%s", err);
    }
    return BATCHFIT_OK;
}

/* Whether the remembered line stays the result's (and is stored again).
 * A probe that verified a remembered size ran one or two trials: its own fit rests on fewer points than the remembered one
 * (none at all after one trial), and stored in its place it lost the curve
 * the next probe continues from (a changed program then stopped 16 sizes
 * short). Where the remembered line still describes every peak this probe
 * measured, it is kept; otherwise the program changed, and the new fit,
 * however short, is what is known of it. */
static int keeps_remembered_fit(const batchfit_options *opts, const batchfit_result *result)
{
    const batchfit_fit *old = &opts->cached_fit;
    unsigned now = result->fit.valid ? result->fit.points : 0;
    if (!result->cache_hit || !old->valid || old->points <= now)
        return 0;
    /* At least one peak of this run on the line, none off it, and no
     * out-of-memory where the line puts the size within the budget, at or
     * below the remembered size: one above it, where the line has room, is
     * what stopped the earlier probe too (the program's own limit, a
     * jump), and the curve was lost on every re-run of a program that
     * fails above 90 far under its budget. */
    unsigned explained = 0;
    for (size_t i = 0; i < result->trial_count; i++) {
        const batchfit_trial *t = &result->trials[i];
        /* A first reading too close that was run again (a cold start:
         * first-run compilation, caches) is no reading of the curve. */
        if (i == 0 && result->trial_count > 1 && result->trials[1].batch == t->batch &&
            !t->accepted)
            continue;
        if (t->outcome == BATCHFIT_FITS && t->peak_known) {
            if (!batchfit__fit_explains(old, (double)t->batch, (double)t->peak_bytes,
                                        result->budget.peak_spread, NULL))
                return 0;
            explained++;
        } else if (t->outcome == BATCHFIT_OOM && t->batch <= opts->cached_batch &&
                   old->intercept_bytes + old->bytes_per_sample * (double)t->batch <
                       (double)result->budget.budget_bytes) {
            return 0;
        }
    }
    return explained > 0;
}

static int cache_save(batchfit_ctx *ctx, const trial_source *src, const char *dir,
                      batchfit_result *result)
{
    batchfit_cache_entry e;
    memset(&e, 0, sizeof e);
    batchfit__copy(e.key, sizeof e.key, result->cache_key);
    e.batch_size = result->batch_size;
    e.budget_bytes = result->budget.budget_bytes;
    e.fit = result->fit; /* the remembered one where it still holds (see probe) */
    /* A one-line summary for batchfit cache list, cut to the field. */
    batchfit__buf d;
    batchfit__buf_init(&d, &ctx->allocator);
    batchfit__buf_printf(&d, "%s:", result->device_spec);
    if (src->cache_key)
        batchfit__buf_printf(&d, " %s", src->cache_key);
    else if (src->argv)
        for (size_t i = 0; src->argv[i]; i++)
            batchfit__buf_printf(&d, " %s", src->argv[i]);
    else
        batchfit__buf_printf(&d, " step %s", src->name);
    const char *text = batchfit__buf_text(&d);
    if (text)
        batchfit__copy(e.description, sizeof e.description, text);
    batchfit__buf_free(&d);
    if (!text)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory describing the entry");
    if (batchfit__cache_store(ctx, dir, &e) != BATCHFIT_OK) {
        char err[BATCHFIT_ERRMSG_MAX];
        snprintf(err, sizeof err, "%s", batchfit_ctx_last_error(ctx));
        return batchfit__result_warn(ctx, result, "%s", err);
    }
    return BATCHFIT_OK;
}

/* A requested maximum far below what the device holds is worth saying:
 * the user may have kept an old max_batch_size. The fit says about how
 * large a batch would fit; nothing beyond the requested size was run. */
static int warn_small_request(batchfit_ctx *ctx, batchfit_result *result)
{
    const batchfit_fit *f = &result->fit;
    const batchfit_budget *b = &result->budget;
    if (!result->requested_max || result->batch_size != result->requested_max || !f->valid ||
        !(f->bytes_per_sample > 0.0) || !b->known || b->budget_bytes == 0)
        return BATCHFIT_OK;
    /* Only a rise the measurements can tell from their noise says how the
     * memory grows; a flat curve would put "what fits" anywhere. */
    double rise = f->bytes_per_sample * (double)(result->requested_max - result->min_batch);
    if (!(rise > b->peak_spread * (double)b->budget_bytes + f->max_residual_bytes))
        return BATCHFIT_OK;
    double used = f->intercept_bytes + f->bytes_per_sample * (double)result->requested_max;
    if (!(used < 0.5 * (double)b->budget_bytes))
        return BATCHFIT_OK;
    double would_fit = ((double)b->budget_bytes - f->intercept_bytes) / f->bytes_per_sample;
    return batchfit__result_warn(ctx, result,
                                 "max_batch_size=%llu uses %.0f%% of the budget; about %.0f "
                                 "would fit (by the fit, not measured)",
                                 (unsigned long long)result->requested_max,
                                 100.0 * used / (double)b->budget_bytes, floor(would_fit));
}

/* An answer at the search's own upper limit (no requested maximum, no
 * dataset size below it) is not where memory ran out: the largest size
 * ran and fit. Memory that did not grow with the batch (a command that
 * ignores {batch}, a launcher whose worker outlives it) reads that way
 * too, so say so rather than hand a size of a million on as a finding. */
static int warn_at_the_limit(batchfit_ctx *ctx, const batchfit_options *opts,
                             batchfit_result *result)
{
    /* Across ranks, rank 0 searched and says it; the others ran trials. */
    if (result->source != BATCHFIT_SOURCE_MEASURED || opts->requested_max ||
        (opts->samples && opts->samples <= opts->upper_limit) ||
        result->batch_size != result->upper_bound || result->upper_bound <= result->min_batch ||
        (batchfit__ranks_active(opts) && opts->ranks->rank != 0))
        return BATCHFIT_OK;
    char peak[96] = "";
    for (size_t i = 0; i < result->trial_count; i++) {
        const batchfit_trial *t = &result->trials[i];
        if (t->batch == result->batch_size && t->accepted && t->peak_known) {
            char at[32], budget[32];
            batchfit_format_bytes((double)t->peak_bytes, at, sizeof at);
            batchfit_format_bytes((double)result->budget.budget_bytes, budget, sizeof budget);
            snprintf(peak, sizeof peak, " (peak %s of the %s budget)", at, budget);
        }
    }
    return batchfit__result_warn(ctx, result,
                                 "batch size %llu is the search's upper limit, not a memory "
                                 "limit: it fit%s; memory that does not grow with the batch "
                                 "size reads this way (does the command use {batch}, and is "
                                 "its work done before it exits, not by a process it leaves "
                                 "behind?); set max_batch_size (--max) or the dataset size "
                                 "(--samples) to bound it",
                                 (unsigned long long)result->batch_size, peak);
}

/* A cache entry that no longer held says so, to every caller (it was the
 * CLI's summary line alone: Python's callers saw a hit that answered less
 * with no word): the budget or the program's memory changed since it was
 * stored. One that still fits with a larger size fitting too is no
 * failure, and is logged only. */
static int warn_stale_cache(batchfit_ctx *ctx, batchfit_result *result)
{
    if (!result->cache_hit || !result->batch_size)
        return BATCHFIT_OK;
    if (result->batch_size > result->cache_remembered) {
        batchfit__log(ctx, BATCHFIT_LOG_INFO,
                      "cache: the remembered batch size %llu still fits, and so does %llu now",
                      (unsigned long long)result->cache_remembered,
                      (unsigned long long)result->batch_size);
        return BATCHFIT_OK;
    }
    if (result->batch_size == result->cache_remembered)
        return BATCHFIT_OK;
    return batchfit__result_warn(ctx, result,
                                 "the remembered batch size %llu no longer held (the budget or "
                                 "the program's memory changed): %llu now",
                                 (unsigned long long)result->cache_remembered,
                                 (unsigned long long)result->batch_size);
}

/* What is worth saying once the search has its answer. */
static int warn_after_search(batchfit_ctx *ctx, const batchfit_options *opts,
                             batchfit_result *result)
{
    int rc = warn_small_request(ctx, result);
    if (!rc)
        rc = warn_stale_cache(ctx, result);
    return rc ? rc : warn_at_the_limit(ctx, opts, result);
}

/* A round of trials on the probe's one device, one after another: the
 * rounds a search on identical devices would take, without their wall
 * time. */
static int sequential_round(void *userdata, const uint64_t *batches, size_t count,
                            batchfit_trial *trials)
{
    trial_source *src = userdata;
    for (size_t i = 0; i < count; i++) {
        int rc = src->trial(src, batches[i], &trials[i]);
        if (rc)
            return rc;
    }
    return BATCHFIT_OK;
}

/* Everything after the bounds are decided and the device is usable. */
static int probe_device(batchfit_ctx *ctx, batchfit_options *opts, batchfit_device *device,
                        trial_source *src, batchfit_result *result)
{
    int rc = batchfit__settle_budget(ctx, opts, device, src->in_process, result);
    if (rc)
        return rc;
    char dir[4096];
    rc = cache_lookup(ctx, opts, src, device, result, dir, sizeof dir);
    if (rc)
        return rc;
    rc = hold_ballast(device, result);
    if (rc)
        return rc;
    rc = src->begin(src, ctx, device, result);
    if (batchfit__ranks_active(opts)) {
        /* Every rank joins the job's exchanges, also when its source
         * could not begin; the source is ended only where it began. */
        int began = rc == BATCHFIT_OK;
        rc = batchfit__ranks_search(ctx, opts, device, src, rc, result);
        if (began)
            src->end(src);
        if (rc == BATCHFIT_OK)
            rc = warn_after_search(ctx, opts, result);
    } else if (rc == BATCHFIT_OK) {
        unsigned k = src->round ? src->round_width : opts->parallel;
        rc = k > 1 ? batchfit__search_run_parallel(ctx, opts, k,
                                                   src->round ? src->round : sequential_round,
                                                   src, result)
                   : batchfit__search_run(ctx, opts, src->trial, src, result);
        src->end(src);
        if (rc == BATCHFIT_OK)
            rc = warn_after_search(ctx, opts, result);
    }
    /* A verifying re-run's own line rests on one or two trials (two
     * neighbours' noise can tilt it anywhere): the remembered curve, where
     * it still describes them, is what the result reports and stores. */
    if (rc == BATCHFIT_OK && keeps_remembered_fit(opts, result)) {
        result->fit = opts->cached_fit;
        result->fit_remembered = 1;
    }
    if (result->budget.held_bytes || result->gpu_count)
        batchfit__device_release(device);
    /* Across ranks, rank 0 searched and remembers; the others only ran trials. */
    if (rc == BATCHFIT_OK && dir[0] && result->source == BATCHFIT_SOURCE_MEASURED &&
        !(batchfit__ranks_active(opts) && opts->ranks->rank != 0))
        rc = cache_save(ctx, src, dir, result);
    return rc;
}

static int run(batchfit_ctx *ctx, batchfit_options *opts, batchfit_device *device,
               trial_source *src, batchfit_result *result)
{
    result->requested_max = opts->requested_max;
    result->memory_budget_bytes = opts->memory_budget_bytes;
    result->first_guess = opts->first_guess;
    result->vram_limit_source =
        opts->vram_limit_bytes ? (opts->vram_limit_source ? opts->vram_limit_source : "options")
                               : "none";
    if (src->argv && batchfit__result_keep_command(result, src->argv) != BATCHFIT_OK)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory recording the command");
    int rc = batchfit__decide_bounds(ctx, opts, src->step_min, result);
    if (rc)
        return rc;
    /* "auto" that found no GPU: the result says so, not only the log. */
    if (device && device->chosen[0] && batchfit__result_warned(ctx, result, device->chosen))
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory recording a warning");
    const char *why = NULL;
    if (!batchfit_device_available(device, &why)) {
        if (opts->no_device == BATCHFIT_NO_DEVICE_ERROR || batchfit__ranks_active(opts))
            return batchfit__fail(ctx, BATCHFIT_E_NO_DEVICE, "no usable device: %s%s%s",
                                  device ? batchfit_device_spec(device) : "",
                                  device ? ": " : "", why);
        return fallback(ctx, opts, why, result);
    }
    result->device.struct_size = sizeof result->device;
    batchfit_device_describe(device, &result->device);
    if (batchfit__result_keep(result, &result->device_spec, batchfit_device_spec(device)))
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory recording the device");
    return probe_device(ctx, opts, device, src, result);
}

int batchfit__probe_run(batchfit_ctx *ctx, const batchfit_options *opts, batchfit_device *device,
                        trial_source *src, batchfit_result **out)
{
    batchfit_options local = *opts;
    batchfit_result *result = batchfit__result_new(ctx);
    if (!result)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory allocating a result");
    *out = result;
    int rc = run(ctx, &local, device, src, result);
    /* A rank that failed before the job's first exchange still takes
     * part in it, so that no other rank waits for it. */
    if (!src->joined)
        rc = batchfit__ranks_refused(ctx, &local, rc, result);
    /* An interrupt is consumed by the probe it stopped. */
    if (rc == BATCHFIT_E_ABORTED && batchfit__interrupt_pending()) {
        result->interrupted = 1;
        result->interrupt_signal = batchfit__interrupt_pending();
        batchfit__interrupt_clear();
    }
    batchfit__result_complete(ctx, result, rc, batchfit_ctx_last_error(ctx));
    return rc;
}
