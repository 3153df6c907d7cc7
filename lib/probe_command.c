/* The child-process trial source: a command run once per trial (child.c
 * runs and classifies it). Its OOM table and runner are made once the
 * budget is known and freed after the search, on every path. */
#include "probe.h"

#include <stdio.h>
#include <string.h>

typedef struct command_source {
    trial_source base; /* first: the orchestration passes the base */
    const batchfit_command_options *copts;
    batchfit__oom_table *oom;
    batchfit__runner *runner;
    batchfit_result *result;
    batchfit_ctx *result_ctx;
    uint64_t gpu_budget[BATCHFIT_MAX_GPUS];
    char vram_text[64];
} command_source;

void batchfit_command_options_init(batchfit_command_options *copts)
{
    if (!copts)
        return;
    *copts = (batchfit_command_options){0};
    copts->struct_size = sizeof *copts;
    copts->kill_grace_seconds = 2.0;
    copts->watchdog = 1;
    copts->sample_interval = 0.02;
    copts->cgroups = BATCHFIT_CGROUPS_AUTO;
}

static int command_trial(void *userdata, uint64_t batch, batchfit_trial *trial)
{
    command_source *c = userdata;
    int rc = batchfit__runner_trial(c->runner, batch, trial);
    /* Each GPU's peak goes beside the trial the search records next. */
    unsigned count = 0;
    const batchfit_gpu_peak *peaks = batchfit__runner_gpu_peaks(c->runner, &count);
    if (rc == BATCHFIT_OK && c->result->gpu_count &&
        batchfit__result_set_gpu_peaks(c->result, c->result->trial_count, peaks) != BATCHFIT_OK)
        return batchfit__fail(c->result_ctx, BATCHFIT_E_NO_MEMORY,
                              "out of memory recording the trial's GPU peaks");
    return rc;
}

static int command_begin(trial_source *src, batchfit_ctx *ctx, batchfit_device *device,
                         batchfit_result *result)
{
    command_source *c = (command_source *)src;
    const batchfit_command_options *co = c->copts;
    int rc = batchfit__oom_table_create(ctx, &c->oom);
    for (size_t i = 0; rc == BATCHFIT_OK && co->oom_patterns && co->oom_patterns[i]; i++)
        rc = batchfit__oom_table_add(c->oom, co->oom_patterns[i]);
    if (rc) {
        batchfit__oom_table_free(c->oom);
        return rc;
    }
    batchfit__runner_options ro;
    batchfit__runner_options_init(&ro);
    ro.argv = co->argv;
    ro.timeout_seconds = co->timeout_seconds;
    ro.kill_grace_seconds = co->kill_grace_seconds;
    ro.budget_bytes = result->budget.budget_bytes;
    ro.watchdog = co->watchdog;
    ro.enforce = co->enforce;
    ro.enforce_address_space = co->enforce_address_space;
    ro.enforce_bytes = result->budget.budget_bytes;
    ro.crash_is_oom = co->crash_is_oom;
    ro.sample_interval = co->sample_interval;
    ro.show_output = co->show_output;
    ro.cgroups = co->cgroups;
    ro.oom = c->oom;
    /* A GPU's trials are judged by their GPU memory (each GPU of several
     * against its own budget); the host's by RSS. */
    if (strcmp(device->ops->kind, "cuda") == 0)
        ro.device = device;
    c->result = result;
    c->result_ctx = ctx;
    for (size_t i = 0; i < result->gpu_count; i++)
        c->gpu_budget[i] = result->gpus[i].budget_bytes;
    if (result->gpu_count)
        ro.gpu_budget_bytes = c->gpu_budget;
    ro.vram_limit_gb = co->vram_limit_text;
    if (!ro.vram_limit_gb && result->budget.vram_limit_bytes) {
        snprintf(c->vram_text, sizeof c->vram_text, "%.9g",
                 (double)result->budget.vram_limit_bytes / 1073741824.0);
        ro.vram_limit_gb = c->vram_text;
    }
    rc = batchfit__runner_create(ctx, &ro, &c->runner);
    if (rc == BATCHFIT_OK)
        rc = batchfit__result_keep(result, &result->mechanisms,
                                   batchfit__runner_mechanisms(c->runner));
    if (rc) {
        batchfit__runner_free(c->runner);
        batchfit__oom_table_free(c->oom);
        return rc == BATCHFIT_E_NO_MEMORY
                   ? batchfit__fail(ctx, rc, "out of memory preparing the command")
                   : rc;
    }
    result->sample_interval = co->sample_interval;
    if (!batchfit__runner_has_placeholder(c->runner))
        rc = batchfit__result_warn(ctx, result,
                                   "no {batch} in the command; the batch size reaches it only "
                                   "through BATCHFIT_BATCH_SIZE");
    if (rc) {
        batchfit__runner_free(c->runner);
        batchfit__oom_table_free(c->oom);
    }
    return rc;
}

static void command_end(trial_source *src)
{
    command_source *c = (command_source *)src;
    batchfit__runner_free(c->runner);
    batchfit__oom_table_free(c->oom);
    c->runner = NULL;
    c->oom = NULL;
}

/* The settings of the command that change its outcomes, for the cache key. */
static void command_settings(batchfit__buf *b, const batchfit_command_options *co)
{
    batchfit__buf_printf(b,
                         "command timeout=%.17g watchdog=%d enforce=%d/%d crash_is_oom=%d "
                         "sample_interval=%.17g cgroups=%d vram_text=%s",
                         co->timeout_seconds, co->watchdog, co->enforce,
                         co->enforce_address_space, co->crash_is_oom,
                         co->sample_interval, (int)co->cgroups,
                         co->vram_limit_text ? co->vram_limit_text : "");
    for (size_t i = 0; co->oom_patterns && co->oom_patterns[i]; i++)
        batchfit__buf_printf(b, "\noom_pattern %s", co->oom_patterns[i]);
}

int batchfit_probe_command(batchfit_ctx *ctx, const batchfit_options *opts,
                           batchfit_device *device, const batchfit_command_options *copts,
                           batchfit_result **out)
{
    if (!ctx || !out)
        return BATCHFIT_E_INVALID_ARGUMENT;
    *out = NULL;
    int rc = batchfit__check_options(ctx, opts);
    if (rc)
        return rc;
    if (!copts || copts->struct_size < sizeof *copts)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "command options: not initialised with "
                              "batchfit_command_options_init()");
    if (!copts->argv || !copts->argv[0] || !copts->argv[0][0])
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "no command to run");
    /* Every duration is a finite number of seconds that a person could
     * wait for (at most a million): NaN or 1e300 would make a trial
     * unbounded. */
    if (!(copts->sample_interval > 0.0 && copts->sample_interval <= 1e6) ||
        !(copts->timeout_seconds >= 0.0 && copts->timeout_seconds <= 1e9) ||
        !(copts->kill_grace_seconds >= 0.0 && copts->kill_grace_seconds <= 1e6))
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "command options: sample_interval (%g s) must be in (0, 1e6], "
                              "timeout_seconds (%g) in [0, 1e9] and kill_grace_seconds (%g) in "
                              "[0, 1e6]",
                              copts->sample_interval, copts->timeout_seconds,
                              copts->kill_grace_seconds);
    batchfit__buf settings;
    batchfit__buf_init(&settings, &ctx->allocator);
    command_settings(&settings, copts);
    if (!batchfit__buf_text(&settings))
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory preparing the command");
    command_source src = {
        .base = {.cache_key = opts->cache_key,
                 .argv = copts->argv,
                 .settings = batchfit__buf_text(&settings),
                 .step_min = 0,
                 .begin = command_begin,
                 .trial = command_trial,
                 .end = command_end},
        .copts = copts,
    };
    rc = batchfit__probe_run(ctx, opts, device, &src.base, out);
    batchfit__buf_free(&settings);
    return rc;
}
