/* What batchfit probe shows while it runs: a preamble (how peaks are
 * measured, the ballast held), one line per trial with the bracket so far,
 * then a summary or the failure with the last lines of the command's
 * output. Everything goes to stderr; results go to stdout. */
#include "probe.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

volatile sig_atomic_t probe_interrupted;

static void print_preamble(const session *s, const batchfit_result *r)
{
    if (r->cache_hit)
        fprintf(stderr, "batchfit: cache: %s remembers batch size %llu; verifying it\n",
                r->cache_key, (unsigned long long)r->cache_remembered);
    if (r->memory_note)
        fprintf(stderr, "batchfit: host memory: %s\n", r->memory_note);
    if (r->mechanisms)
        fprintf(stderr, "batchfit: %s\n", r->mechanisms);
    if (r->gpu_count) {
        /* Several GPUs: the ballast on each. */
        fprintf(stderr, "batchfit: holding ballast while trials run:");
        for (size_t i = 0; i < r->gpu_count; i++) {
            char held[32];
            batchfit_format_bytes((double)r->gpus[i].held_bytes, held, sizeof held);
            fprintf(stderr, "%s %s on %s", i ? "," : "", held, r->gpus[i].spec);
        }
        fprintf(stderr, "\n");
    } else if (r->budget.held_bytes) {
        char held[32];
        batchfit_format_bytes((double)r->budget.held_bytes, held, sizeof held);
        fprintf(stderr, "batchfit: holding %s of ballast on %s while trials run\n", held,
                batchfit_device_spec(s->device));
    }
}

/* The largest size that fits and the smallest that failed so far. */
static void bracket(const batchfit_result *r, uint64_t *fit, uint64_t *fail)
{
    *fit = 0;
    *fail = 0;
    for (size_t i = 0; i < r->trial_count; i++) {
        const batchfit_trial *t = &r->trials[i];
        if (t->accepted && t->batch > *fit)
            *fit = t->batch;
        if (!t->accepted && t->outcome != BATCHFIT_ERROR && (!*fail || t->batch < *fail))
            *fail = t->batch;
    }
}

/* What is known of a trial's memory: its peak (it ran to its end, fitting,
 * over the budget or failing), a lower bound on what it needed (out of
 * memory), or that it was stopped before either was seen. */
static const char *measure_label(const batchfit_trial *t)
{
    if (t->outcome == BATCHFIT_FITS || t->over_budget)
        return "peak";
    int oom = t->outcome == BATCHFIT_OOM;
    if (!t->peak_known)
        return oom ? "need not measured" : "peak not measured";
    return oom ? "needed at least" : "peak";
}

/* Called after every trial: one progress line, and the JSON rewritten. */
int probe_on_trial(const batchfit_result *r, const batchfit_trial *t, void *userdata)
{
    session *s = userdata;
    s->result = (batchfit_result *)(uintptr_t)r;
    const probe_cli *c = s->cli;
    if (!c->quiet && c->style != STYLE_NONE) {
        if (!s->preamble_printed)
            print_preamble(s, r);
        char peak[32] = "unknown";
        if (t->peak_known)
            batchfit_format_bytes((double)t->peak_bytes, peak, sizeof peak);
        const char *color = "", *reset = "";
        if (c->style == STYLE_COLOR) {
            color = t->accepted                     ? "\033[32m"
                    : t->outcome == BATCHFIT_ERROR ? "\033[31m"
                                                    : "\033[33m";
            reset = "\033[0m";
        }
        const char *what = t->accepted                   ? "fits"
                           : t->outcome == BATCHFIT_FITS ? "too close"
                           : t->over_budget              ? "over budget"
                                                         : batchfit_outcome_name(t->outcome);
        uint64_t fit, fail;
        bracket(r, &fit, &fail);
        const char *measure = measure_label(t);
        fprintf(stderr, "batchfit: trial %zu: batch %llu %s%s%s, %s%s%s, %.2f s  [fits <= %llu",
                r->trial_count, (unsigned long long)t->batch, color, what, reset, measure,
                t->peak_known || t->outcome == BATCHFIT_FITS ? " " : "",
                t->peak_known || t->outcome == BATCHFIT_FITS ? peak : "", t->seconds,
                (unsigned long long)fit);
        if (fail)
            fprintf(stderr, ", fails >= %llu", (unsigned long long)fail);
        fprintf(stderr, "]");
        if (t->message[0] && !t->accepted)
            fprintf(stderr, "\n          %s", t->message);
        fputc('\n', stderr);
    }
    s->preamble_printed = 1;
    probe_export_json(s, 0);
    /* Another rank of the job failed: this probe's answer is moot. */
    return probe_interrupted || probe_mpi_peer_failed(s->mpi) ? 1 : 0;
}

/* Several GPUs: each one's peak at the answer against its own budget. */
static void print_gpus(const batchfit_result *r)
{
    for (size_t i = r->trial_count; r->gpu_count && i-- > 0;) {
        const batchfit_trial *t = &r->trials[i];
        if (t->batch != r->batch_size || !t->accepted)
            continue;
        /* Trials in parallel ran each size on one GPU: only that one. */
        int parallel = r->rounds && r->rounds < r->trial_count;
        for (size_t g = 0; g < r->gpu_count; g++) {
            const batchfit_gpu_peak *p = &r->gpu_peaks[i * r->gpu_count + g];
            if (parallel && !p->peak_known)
                continue;
            char peak[32] = "unknown", budget[32];
            if (p->peak_known)
                batchfit_format_bytes((double)p->peak_bytes, peak, sizeof peak);
            batchfit_format_bytes((double)r->gpus[g].budget_bytes, budget, sizeof budget);
            fprintf(stderr, "  %s (%s): peak at batch %llu %s of its budget %s\n",
                    r->gpus[g].spec, r->gpus[g].name, (unsigned long long)t->batch, peak, budget);
        }
        return;
    }
}

void probe_print_summary(const session *s)
{
    const batchfit_result *r = s->result;
    if (s->cli->quiet || !r || !r->batch_size)
        return;
    if (r->source == BATCHFIT_SOURCE_FALLBACK)
        return;
    char budget[32], usable[32], margin[32];
    batchfit_format_bytes((double)r->budget.budget_bytes, budget, sizeof budget);
    batchfit_format_bytes((double)r->budget.usable_bytes, usable, sizeof usable);
    batchfit_format_bytes((double)r->budget.margin_bytes, margin, sizeof margin);
    size_t too_close = 0, over = 0;
    for (size_t i = 0; i < r->trial_count; i++) {
        too_close += r->trials[i].outcome == BATCHFIT_FITS && !r->trials[i].accepted;
        over += r->trials[i].over_budget;
    }
    /* Every trial is counted somewhere: out of memory (of which over the
     * budget after finishing), or too close to the budget to count. */
    fprintf(stderr, "batchfit: batch size %llu, found in %zu trial%s (%zu out of memory",
            (unsigned long long)r->batch_size, r->trial_count, r->trial_count == 1 ? "" : "s",
            r->oom_trials);
    if (over)
        fprintf(stderr, ", %zu of them over the budget after finishing", over);
    if (too_close)
        fprintf(stderr, ", %zu too close to the budget", too_close);
    fprintf(stderr, ") with the %s strategy", batchfit_strategy_name(r->strategy));
    if (r->rounds && r->rounds < r->trial_count)
        fprintf(stderr, ", in %zu rounds of trials at once", r->rounds);
    fprintf(stderr, "\n");
    if (r->stop_reason)
        fprintf(stderr, "  stopped: %s\n", r->stop_reason);
    fprintf(stderr, "  budget %s of %s usable (margin %s held back)%s%s\n", budget, usable, margin,
            r->gpu_count ? " on the tightest GPU, " : "",
            r->gpu_count ? r->gpus[r->budget_gpu].spec : "");
    print_gpus(r);
    for (size_t i = r->trial_count; !r->gpu_count && i-- > 0;) {
        const batchfit_trial *t = &r->trials[i];
        if (t->batch == r->batch_size && t->accepted && t->peak_known) {
            char peak[32], headroom[32];
            batchfit_format_bytes((double)t->peak_bytes, peak, sizeof peak);
            batchfit_format_bytes((double)r->budget.budget_bytes - (double)t->peak_bytes,
                                  headroom, sizeof headroom);
            fprintf(stderr, "  peak at batch %llu: %s, headroom %s\n",
                    (unsigned long long)t->batch, peak, headroom);
            break;
        }
    }
    /* One that no longer held is the library's warning, printed as it came;
     * one that still fits with a larger size fitting too is not one that
     * failed. */
    if (r->cache_hit && r->batch_size > r->cache_remembered)
        fprintf(stderr,
                "  the remembered batch size %llu still fits, and so does %llu now (a larger "
                "budget, less memory a sample, or an earlier probe that stopped short)\n",
                (unsigned long long)r->cache_remembered, (unsigned long long)r->batch_size);
    /* An answer at the bound (--max, --samples) says nothing of memory:
     * no percentage of it. */
    if (r->first_guess && r->batch_size == r->upper_bound && !r->smallest_failure)
        fprintf(stderr, "  the estimate of %llu is not compared: %llu is the bound, not a memory "
                        "limit\n",
                (unsigned long long)r->first_guess, (unsigned long long)r->batch_size);
    else if (r->first_guess)
        fprintf(stderr, "  the estimate of %llu was %.0f%% of the measured %llu\n",
                (unsigned long long)r->first_guess,
                100.0 * (double)r->first_guess / (double)r->batch_size,
                (unsigned long long)r->batch_size);
    /* Less than a byte a sample is no growth anyone could use. */
    if (r->fit.valid && r->fit.bytes_per_sample >= 1.0) {
        char fixed[40], per[32];
        batchfit_format_bytes(r->fit.intercept_bytes > 0 ? r->fit.intercept_bytes : 0, fixed,
                              sizeof fixed);
        batchfit_format_bytes(r->fit.bytes_per_sample, per, sizeof per);
        /* A line the points stray from by more than 1% of what it puts at
         * the answer is a summary, not the program's curve (memory flat,
         * then growing; pools that double; or peaks that wander between
         * runs, which the residual cannot tell apart): say so, with how
         * far. */
        double at = r->fit.intercept_bytes + r->fit.bytes_per_sample * (double)r->batch_size;
        char off[32], stray[192] = "";
        int below_zero = at > 0.0 && r->fit.intercept_bytes < -0.01 * at;
        if (below_zero) {
            /* Printed as 0 B + the slope, the line put 286 MiB at a size
             * that read 171 MiB (a B x B term over the points bisection
             * ran, all near the answer): the intercept is shown as it is. */
            char magnitude[32];
            batchfit_format_bytes(-r->fit.intercept_bytes, magnitude, sizeof magnitude);
            snprintf(fixed, sizeof fixed, "-%s", magnitude);
            snprintf(stray, sizeof stray,
                     " (below 0 at batch 0: memory grows faster than a line here, and the "
                     "line holds only near the sizes measured)");
        }
        if (at > 0.0 && r->fit.max_residual_bytes > 0.01 * at) {
            batchfit_format_bytes(r->fit.max_residual_bytes, off, sizeof off);
            /* Where the search followed a curve through them, the stop says
             * so: the line is then only the summary the JSON keeps. */
            int curve = r->stop_reason && strstr(r->stop_reason, "curve a + b B^p") != NULL;
            /* A remembered curve's residual is over the peaks the probe
             * that stored it measured, not this run's: "this run's peaks
             * lie on it, a line the measured peaks stray from by up to
             * 26.88 MiB" said both of one set of peaks. */
            snprintf(stray, sizeof stray,
                     ", a line the %s peaks stray from by up to %s (%s)",
                     r->fit_remembered ? "earlier probe's" : "measured", off,
                     curve ? "they lie on the curve a + b B^p the search followed, as it stopped"
                           : "memory does not grow linearly with the batch here, or its peaks "
                             "vary between runs");
        }
        fprintf(stderr, "  fitted memory: %s + %s per sample%s%s\n", fixed, per,
                r->fit_remembered ? " (the cache's curve; this run's peaks lie on it)" : "",
                stray);
    } else if (r->fit.valid) {
        /* A line that falls says the peaks did not grow with the batch
         * (noise, or memory the program holds regardless). */
        fprintf(stderr, "  fitted memory: no growth with the batch size was measured\n");
    }
}

/* What an interrupted search had: the trial it stopped and the largest
 * size that had fit, which is no answer (the search did not finish, and a
 * larger size may fit), but where a rerun with --max or an estimate can
 * start. */
static void print_interrupted(const batchfit_result *r)
{
    uint64_t fit = 0;
    for (size_t i = 0; i < r->trial_count; i++)
        if (r->trials[i].accepted && r->trials[i].batch > fit)
            fit = r->trials[i].batch;
    fprintf(stderr, "batchfit probe: interrupted%s%s", r->error && r->error[0] ? ": " : "",
            r->error ? r->error : "");
    if (fit)
        fprintf(stderr, "; batch size %llu had fit (not an answer: the search did not finish)",
                (unsigned long long)fit);
    fputc('\n', stderr);
}

/* Whether text names memory or an allocation, in any case, or OOM as a
 * word of its own ("boom" and "room" are not it). */
static int speaks_of_memory(const char *text)
{
    for (const char *c = text; *c; c++) {
        if (strncasecmp(c, "memory", 6) == 0 || strncasecmp(c, "alloc", 5) == 0)
            return 1;
        if (strncasecmp(c, "oom", 3) == 0 && (c == text || !isalnum((unsigned char)c[-1])) &&
            !isalnum((unsigned char)c[3]))
            return 1;
    }
    return 0;
}

void probe_print_failure(const session *s)
{
    const batchfit_result *r = s->result;
    if (s->mpi)
        fprintf(stderr, "batchfit probe: rank %d: %s\n", probe_mpi_rank(s->mpi),
                r && r->error ? r->error : batchfit_ctx_last_error(s->ctx));
    else if (r && r->interrupted)
        print_interrupted(r);
    else
        fprintf(stderr, "batchfit probe: %s\n",
                r && r->error ? r->error : batchfit_ctx_last_error(s->ctx));
    if (!r || r->status != BATCHFIT_E_TRIAL_ERROR || !r->trial_count)
        return;
    const batchfit_trial_process *d = &r->trials[r->trial_count - 1].process;
    if (d->tail[0]) {
        fprintf(stderr, "last lines of its output:\n");
        const char *p = d->tail;
        while (*p) {
            const char *nl = strchr(p, '\n');
            size_t len = nl ? (size_t)(nl - p) : strlen(p);
            fprintf(stderr, "  | %.*s\n", (int)len, p);
            p += len + (nl != NULL);
        }
    }
    if (d->ran && !s->cli->cmd.show_output)
        fprintf(stderr, "(--show-output shows the whole output of every trial)\n");
    /* An allocator batchfit has no signature for (a framework's own
     * wording) reads as a bug: where its last lines speak of memory, the
     * user can name it. */
    if (d->ran && speaks_of_memory(d->tail))
        fprintf(stderr, "(if this is the program running out of memory in words batchfit does "
                        "not know, name them with --oom-pattern REGEX)\n");
}

void probe_print_agreement(const session *s)
{
    const batchfit_result *r = s->result;
    const probe_cli *c = s->cli;
    if (!c->quiet) {
        fprintf(stderr, "batchfit: %zu rank%s agree%s (%s):\n", r->rank_count,
                r->rank_count == 1 ? "" : "s", r->rank_count == 1 ? "s" : "",
                r->agree_mode == BATCHFIT_AGREE_MIN ? "the smallest answer" : "each its own");
        for (size_t i = 0; i < r->rank_count; i++) {
            const batchfit_rank_outcome *o = &r->rank_outcomes[i];
            fprintf(stderr, "  rank %d  %-10s %-24s batch size %llu", o->rank, o->device_spec,
                    o->device_name, (unsigned long long)o->batch_size);
            if (!r->trial_ranks) {
                fprintf(stderr, " in %zu trials\n", o->trials);
                continue;
            }
            /* Trials across ranks: rank 0 searched, each rank ran its share. */
            size_t ran = 0;
            for (size_t t = 0; t < r->trial_count; t++)
                ran += r->trial_ranks[t] == o->rank;
            fprintf(stderr, ", ran %zu of the %zu trials\n", ran, r->trial_count);
        }
    }
    if (probe_stdout_is_a_document(s))
        return;
    if (r->agree_mode == BATCHFIT_AGREE_MIN) {
        printf("batch_size=%llu\n", (unsigned long long)r->agreed_batch_size);
        return;
    }
    for (size_t i = 0; i < r->rank_count; i++)
        printf("rank=%d batch_size=%llu\n", r->rank_outcomes[i].rank,
               (unsigned long long)r->rank_outcomes[i].batch_size);
}
