/* The in-process trial source: a step factory. build() runs once the
 * margin is held, release() exactly once for every successful build(), on
 * every path (the orchestration in probe.c guarantees the pairing). */
#include "probe.h"

#include <stdio.h>
#include <string.h>

typedef struct step_source {
    trial_source base; /* first: the orchestration passes the base */
    const batchfit_step *step;
    void *userdata;
    batchfit_device *device;
    batchfit_result *result;
    void *state;
    unsigned trials;     /* run so far */
    uint64_t first_held; /* what the process held as the first trial it was read at began */
    int first_known;     /* first_held was read */
    int leak_said;       /* the warning below was given */
} step_source;

/* A step that keeps memory from one trial to the next (a list of losses
 * that hold their graphs, a cache that grows with the batch) raises what
 * this process holds as each trial begins, and on the host, where a
 * trial's peak is the whole process's, every later peak counts it: the
 * search then reads nonsense (batch 71 fitting where 72 did not, 100-130
 * MiB leaked under a budget of 100 MiB) and answers far below what fits
 * (66-71 where 277 fits). Said once where the memory held as a trial
 * begins has grown past the first trial's by an eighth of the budget (16
 * MiB at least: allocator caches, a library's first use). What the process
 * holds is its anonymous and shared memory (self_held), not its resident
 * set: the code a first trial pages in is no memory kept. The host only: a
 * GPU's caching allocator keeps what it reserved on purpose. */
static int held_between_trials(step_source *p, uint64_t batch)
{
    const batchfit_device_ops *ops = p->device->ops;
    uint64_t held;
    p->trials++;
    if (p->leak_said || !p->result || !p->result->budget.known ||
        strcmp(ops->kind, "host") != 0 || !ops->self_held ||
        ops->self_held(p->device, &held) != BATCHFIT_OK)
        return BATCHFIT_OK;
    if (!p->first_known) {
        p->first_held = held;
        p->first_known = 1;
        return BATCHFIT_OK;
    }
    uint64_t allowed = p->result->budget.budget_bytes / 8;
    if (allowed < (UINT64_C(16) << 20))
        allowed = UINT64_C(16) << 20;
    if (held <= p->first_held || held - p->first_held <= allowed)
        return BATCHFIT_OK;
    p->leak_said = 1;
    char grown[32];
    batchfit_format_bytes((double)(held - p->first_held), grown, sizeof grown);
    return batchfit__result_warn(
        p->device->ctx, p->result,
        "this process held %s more as trial %u (batch size %llu) began than as the first did: "
        "the step keeps memory from one trial to the next (a list of losses that hold their "
        "graphs, a cache that grows with the batch), which every later trial's peak counts, so "
        "the sizes found are smaller than what fits; let run() drop what it made (loss.item(), "
        "del), or probe the training as a command (batchfit probe -- ...)",
        grown, p->trials, (unsigned long long)batch);
}

static int step_trial(void *userdata, uint64_t batch, batchfit_trial *trial)
{
    step_source *p = userdata;
    if (batchfit__interrupt_pending())
        return batchfit__fail(p->device->ctx, BATCHFIT_E_ABORTED,
                              "interrupted before the trial at batch size %llu",
                              (unsigned long long)batch);
    const batchfit_device_ops *ops = p->device->ops;
    batchfit_step_report report;
    memset(&report, 0, sizeof report);
    if (p->result && p->result->budget.known)
        report.budget_bytes = p->result->budget.budget_bytes;
    if (ops->peak_begin)
        ops->peak_begin(p->device);
    int rc = held_between_trials(p, batch);
    if (rc)
        return rc;
    double start = batchfit__now();
    batchfit_outcome outcome = p->step->run(p->state, batch, &report);
    trial->seconds = batchfit__now() - start;
    /* An interrupt that arrived during the trial (a binding maps its own
     * Ctrl-C here) stops the probe; the trial's outcome is not recorded. */
    if (batchfit__interrupt_pending())
        return batchfit__fail(p->device->ctx, BATCHFIT_E_ABORTED,
                              "interrupted during the trial at batch size %llu",
                              (unsigned long long)batch);
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
    } else if (outcome == BATCHFIT_FITS && batchfit__sim_has_profile(p->device)) {
        /* Those keys are the synthetic step's: a step of the caller's own
         * allocates nothing there, and read as fitting with a peak of 0 it
         * was run up to the search's limit (a batch of 1048576 of the
         * caller's real model, on the host). Without them a sim device is
         * a capacity, and the step's outcomes alone decide. */
        return batchfit__fail(p->device->ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "the sim device's fixed, per_sample, jump and noise keys describe "
                              "its synthetic step (the CLI's); the step ran at batch size %llu, "
                              "allocated nothing through the device and reported no peak of its "
                              "own: report one (PeakBytes from run() in Python, peak_known and "
                              "peak_bytes in batchfit_step_report), leave those keys out, or "
                              "probe a real device",
                              (unsigned long long)batch);
    }
    if (outcome == BATCHFIT_OOM && p->step->on_oom)
        p->step->on_oom(p->state, batch);
    return BATCHFIT_OK;
}

static int step_begin(trial_source *src, batchfit_ctx *ctx, batchfit_device *device,
                      batchfit_result *result)
{
    step_source *p = (step_source *)src;
    const batchfit_device_ops *ops = device->ops;
    p->device = device;
    p->result = result;
    char msg[BATCHFIT_MESSAGE_MAX] = "";
    uint64_t before = 0, after = 0;
    int usage_known = ops->usage && ops->usage(device, &before) == BATCHFIT_OK;
    batchfit_outcome built = p->step->build(p->userdata, device, &p->state, msg, sizeof msg);
    if (built != BATCHFIT_FITS && batchfit__interrupt_pending())
        return batchfit__fail(ctx, BATCHFIT_E_ABORTED, "interrupted while building the step");
    if (built == BATCHFIT_OOM)
        return batchfit__fail(ctx, BATCHFIT_E_MIN_DOES_NOT_FIT,
                              "the step could not even be built within the budget: %s; try a "
                              "smaller model, lower precision, a smaller margin or a larger "
                              "device",
                              msg[0] ? msg : "out of memory");
    if (built != BATCHFIT_FITS)
        return batchfit__fail(ctx, BATCHFIT_E_TRIAL_ERROR, "building the step failed: %s",
                              msg[0] ? msg : "(no message)");
    /* The memory in use once the step is built (weights, optimizer state),
     * in the units of the trials' peaks: a device that measures the whole
     * process (host: its RSS) counts everything the process held before
     * the build too, so the curve's value at batch 0 is all of it, not
     * only what build() added. */
    if (usage_known && ops->usage(device, &after) == BATCHFIT_OK && after >= before) {
        result->baseline_known = 1;
        result->baseline_bytes = after;
    }
    return BATCHFIT_OK;
}

static void step_end(trial_source *src)
{
    step_source *p = (step_source *)src;
    p->step->release(p->state);
}

int batchfit_probe(batchfit_ctx *ctx, const batchfit_options *opts, batchfit_device *device,
                   const batchfit_step *step, void *step_userdata, batchfit_result **out)
{
    if (!ctx || !out)
        return BATCHFIT_E_INVALID_ARGUMENT;
    *out = NULL;
    batchfit_options own;
    int rc = batchfit__options_take(ctx, &opts, &own);
    /* Options read but refused (a bad lattice) under ranks: this rank
     * still joins the first exchange, as any refusal does. */
    if (rc)
        return opts == &own ? batchfit__ranks_refused(ctx, opts, rc, NULL) : rc;
    /* Under opts->ranks, a refusal still joins the job's first exchange. */
    if (!step || step->struct_size < sizeof *step || !step->build || !step->run || !step->release)
        return batchfit__ranks_refused(
            ctx, opts,
            batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                           "step: struct_size, build, run and release are required"),
            NULL);
    /* One step in this process reports one peak: it cannot be judged on
     * each of several GPUs. */
    if (batchfit__device_is_list(device))
        return batchfit__ranks_refused(
            ctx, opts,
            batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                           "device %s has several GPUs: an in-process step cannot be judged "
                           "on each; probe a command that uses them (batchfit_probe_command)",
                           batchfit_device_spec(device)),
            NULL);
    step_source src = {
        .base = {.name = step->name,
                 .cache_key = opts->cache_key,
                 .step_min = step->min_batch,
                 .in_process = 1,
                 .begin = step_begin,
                 .trial = step_trial,
                 .end = step_end},
        .step = step,
        .userdata = step_userdata,
    };
    return batchfit__probe_run(ctx, opts, device, &src.base, out);
}
