/* Search strategies over a trial oracle. Pure logic: no devices, no I/O.
 *
 * Every strategy works on lattice indices inside a bracket (lo, hi): lo is
 * the largest index that ran and was accepted (-1: none yet), hi the
 * smallest that ran and was not (count: none yet). Proposals always fall
 * strictly inside the bracket, so no size off the lattice or outside
 * [minimum, bound] is ever tried, every answer was run and accepted, and
 * each trial shrinks the bracket, which bounds the search. */
#include "internal.h"

#include <math.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define MAX_POINTS 64

/* The model's worst case, bounded by the classic strategies'. Inside a
 * bracket (after the first rejection) a rejected trial that did not halve
 * the bracket moved hi by less than bisection would have; after
 * MAX_WASTED of them bisection closes the rest. Near the boundary a good
 * model step shrinks the bracket from one side by less than half (the
 * failure just above the crossing, then the next size), so two such
 * rejections are normal and the third is the first that says the model
 * cannot place the crossing. A fitting trial always moves lo up, so
 * inside the bracket it never repeats. Before any rejection, galloping
 * bounds the search: MAX_CREEPS fits in a row that did not double the size
 * mean the model keeps aiming short of a boundary it cannot place (the
 * usual approach - a far point, one just below the crossing, the next size -
 * is two), and each step from there on is twice the last until one is
 * rejected: at most twice the base-2 logarithm of the distance to the
 * boundary. */
#define MAX_WASTED 3
#define MAX_CREEPS 3
/* Past MAX_CREEPS, quiet points whose own next size lies this close to lo
 * (a share of lo, or a number of sizes) run it instead of the gallop, at
 * most CREEP_PASSES times (see propose). */
#define CREEP_PASS_AT_MOST 0.01
#define CREEP_PASS_SIZES 3
#define CREEP_PASSES 2
/* Points with no resolvable rise that all lie within this share under lo
 * run the smallest size next, a far end for their line (see
 * propose_slope_unknown). */
#define ANCHOR_SPAN 0.02

/* With the slope unknown (points flat or within the noise), a proposal
 * goes at most this many times the largest size that ran: one overshoot
 * then costs three halvings of the bracket, not a dozen. */
#define WIDEN_AT_MOST 8.0
/* And from the first two points, along their own line up to this many
 * times the top size: a bound on the slope from the declared noise can put
 * the next size a step or two above the top, and the search then crept up
 * a size at a time on a noisy program (1, 2, 3, 4, 5, 7, 11 out of memory,
 * 8 over the threshold: 7 in 8 trials where the answer is 8; see
 * propose_slope_unknown). */
#define WIDEN_AT_LEAST 4.0
/* How many times its own rise a line through the points may be carried to
 * the threshold before the rise counts as noise (see propose_model). */
#define EXTRAPOLATE_AT_MOST 64.0
/* Nor, past WIDEN_AT_MOST times the top size, a rise across quiet points
 * under this many times what two readings and rounding can make
 * (resolvable): their line's slope is then known to a fraction of itself.
 * Quiet points over a pool's flat run (17.35 to 17.41 GiB from 1 to 192,
 * the kernel's wander) made a line that went from 192 to 7536 in one step
 * (446 GiB), and five halvings out of memory followed where the pool ran
 * out at 300; the flat run is widened into instead (propose_slope_unknown). */
#define RESOLVED_RISE 4.0
/* A coin toss at the next size that quiet points leave (the line puts it
 * within their scatter of the threshold) is run where that size is at
 * least this share larger than lo: at small sizes one step is a large part
 * of the batch (4 against bisection's 5), and a trial buys it; past them a
 * step is within the one-step rule and not worth one. */
#define TOSS_WORTH_A_TRIAL 0.05
/* A stop on a coin toss gives away at most this share of lo: where the
 * band of sizes that pass or fail by the draw reaches further above lo, a
 * size inside it is run (see inside_wide_band). Where the band is the
 * declared prior's (the points have not refuted it), at most
 * TOSS_WORTH_A_TRIAL. */
#define TOSS_GIVES_AWAY_AT_MOST 0.25
/* On the host under its default spread (a prior no one declared), the
 * band only that prior makes is tried a second time where more than this
 * share of lo is left in it (see inside_wide_band). */
#define PRIOR_BAND_AGAIN 0.02
/* Once sizes proposed along a smooth bend were run, and the bend ended, a
 * coin-toss stop gives away at most this share of lo (see
 * inside_wide_band). */
#define BENT_GAP_AT_MOST 0.02
/* The largest difference a few readings showed, stretched to the largest
 * that all draws can make: of five draws of a uniform wander the range is
 * two thirds of the whole on average (see own_draws_reach). With 2, a
 * reviewer's noisy pool (200 KiB a sample past a 300-sample pool, 0-5%
 * wander, 152 MiB) still stopped at 199 now and then, 10 MiB under the
 * threshold, where falls of 5.25 MiB had shown; with 1, a noisy profile of
 * the suite ran a trial more and its p95 rose. */
#define DRAWS_SEEN_TO_ALL 1.5

/* A stop on a prediction (the next size not run) carries the line one
 * lattice step past lo; where that step is more than one sample and more
 * than this share of lo (--power-of-two, --multiple-of at small sizes), the
 * curve can bend inside it, and the step is run instead (a reviewer's
 * program, flat past 1000 samples, stopped at 1024 under --power-of-two
 * where 16384 fits: the line through 1, 8, 256 and 1024 put 2048 at 427 MiB,
 * the program read 227). */
#define PREDICT_AT_MOST 0.10
/* How far above lo a coin toss on the host looks for memory that falls
 * again before it stops (see propose). */
#define LOOK_ABOVE 1.25
#define LOOK_AT_MOST 1.5

typedef struct search {
    batchfit_ctx *ctx;
    const batchfit_options *opts;
    batchfit_oracle_fn oracle;
    void *oracle_userdata;
    batchfit_result *result;
    batchfit_lattice lattice;
    int64_t lo;
    int64_t hi;
    int budget_known;
    double budget;      /* bytes a trial may use */
    double safe_budget; /* budget shrunk so that a peak below it stays below the budget on re-runs */
    double spread;      /* the declared (or device default) spread: acceptance only */
    double aim;         /* where proposals aim: the threshold less the measured noise */
    double hi_need;     /* lower bound on what the trial at hi needed; 0 = unknown */
    int hi_measured;    /* the trial at hi ran to the end: hi_need is its peak, not a bound */
    int hi_first_measured; /* and the one before it at hi was stopped: a first reading there */
    int hi_stopped;     /* the trial at hi was stopped by the watchdog or killed for memory:
                           hi_need is where it was when stopped, about the budget */
    unsigned misses;    /* consecutive rejected proposals of the model */
    int bracketed;      /* a trial was rejected: the bracket is finite */
    unsigned wasted;    /* rejections inside the bracket that did not halve it */
    unsigned creeps;    /* consecutive fits before any rejection that did not double lo */
    unsigned creep_passed; /* times quiet points ran their own next size past that bound */
    int remembered;     /* the model's last look followed the remembered curve */
    int toss;           /* and settled on a coin toss that noisy points leave (see propose) */
    char why[512];      /* why the model settled: the result's stop_reason */
    int quiet;          /* the model's last look at the points found them quiet (the prior
                           refuted): its stops rest on their measured scatter */
    int64_t step;       /* how far (in lattice indices) the last of them moved lo */
    int64_t lo_step;    /* inside the bracket: how far the last trial moved lo, if it did */
    int64_t hi_step;    /* and hi; 0 when the last trial halved the bracket */
    unsigned lo_streak; /* consecutive such moves of lo */
    unsigned hi_streak; /* and of hi */
    int64_t bend_next;  /* the size the model proposed along a smooth bend (-1: none) */
    int bend_used;      /* and a size so proposed was run (see inside_wide_band) */
    int64_t band_next;  /* the size proposed inside a band only the prior makes (-1: none) */
    int64_t anchor_next; /* a size proposed below lo, to give the line a second end (-1: none) */
    int anchor_ran;     /* the last trial was that size: lo stood still on purpose */
    int in_rounds;      /* trials run in rounds (batchfit__search_run_parallel) */
    int band_used;      /* and how many sizes so proposed were run (see inside_wide_band) */
} search;

/* Decides whether a trial counts as fitting: it must have finished, and a
 * measured peak must stay under the budget with room for the spread. */
static void judge(const search *s, batchfit_trial *t)
{
    t->accepted = 0;
    if (t->outcome != BATCHFIT_FITS)
        return;
    if (!t->peak_known || !s->budget_known) {
        t->accepted = 1;
        return;
    }
    char peak[32], limit[32];
    if ((double)t->peak_bytes > s->budget) {
        batchfit__format_bytes_apart((double)t->peak_bytes, s->budget, peak, limit, sizeof peak);
        t->outcome = BATCHFIT_OOM;
        t->over_budget = 1;
        snprintf(t->message, sizeof t->message, "peak %s exceeds the budget of %s", peak, limit);
        return;
    }
    if ((double)t->peak_bytes > s->safe_budget) {
        char budget[32];
        batchfit__format_bytes_apart((double)t->peak_bytes, s->safe_budget, peak, limit,
                                     sizeof peak);
        batchfit_format_bytes(s->budget, budget, sizeof budget);
        /* The threshold is budget x (1 - e) / (1 + e): this reading may be
         * e under what the step needs, and a re-run e over it. */
        snprintf(t->message, sizeof t->message,
                 "peak %s is above %s, the budget of %s x (1 - %.2f%%) / (1 + %.2f%%) for the "
                 "trial-to-trial spread; a re-run could exceed the budget",
                 peak, limit, budget, s->spread * 100.0, s->spread * 100.0);
        return;
    }
    t->accepted = 1;
}

/* What an oracle's (or a round's) return says about the n trials it was
 * given: a trial that did not run is never an outcome. A code ends the
 * search with the oracle's detail: what it set in the context's last error
 * (cleared before the call), else its trial's message, else the code's
 * name. Anything else nonzero aborts it. An outcome that is not a
 * batchfit_outcome is a bug, an error, as a step's run() returning one is
 * (read as out of memory, it ended the search as "the minimum does not
 * fit"). */
static int oracle_code(search *s, int orc, batchfit_trial *ts, size_t n)
{
    uint64_t batch = ts[0].batch;
    if (orc >= BATCHFIT_E_INVALID_ARGUMENT && orc <= BATCHFIT_E_OUTPUT &&
        orc != BATCHFIT_E_ABORTED) {
        if (s->ctx->last_error[0])
            return orc;
        for (size_t j = 0; j < n; j++)
            if (ts[j].message[0])
                return batchfit__fail(s->ctx, orc, "the trial at batch size %llu could not be run: %.*s",
                                      (unsigned long long)ts[j].batch,
                                      (int)sizeof ts[j].message, ts[j].message);
        return batchfit__fail(s->ctx, orc, "the trial at batch size %llu could not be run (%s)",
                              (unsigned long long)batch, batchfit_strerror(orc));
    }
    if (orc != 0)
        return batchfit__fail(s->ctx, BATCHFIT_E_ABORTED, "the trial at batch size %llu was aborted",
                              (unsigned long long)batch);
    for (size_t j = 0; j < n; j++)
        if (ts[j].outcome != BATCHFIT_FITS && ts[j].outcome != BATCHFIT_OOM &&
            ts[j].outcome != BATCHFIT_ERROR) {
            snprintf(ts[j].message, sizeof ts[j].message, "the oracle returned unknown outcome %d",
                     (int)ts[j].outcome);
            ts[j].outcome = BATCHFIT_ERROR;
        }
    return BATCHFIT_OK;
}

/* Clears the context's last error before an oracle runs: what it sets
 * there during the call is its detail (oracle_code). */
static void oracle_begins(search *s)
{
    s->ctx->last_error[0] = '\0';
}

/* A trial whose peak was measured to its end (it finished, within the
 * budget or over it), not only where it was stopped out of memory. */
static int measured_to_the_end(const batchfit_trial *t)
{
    return t->peak_known && (t->outcome == BATCHFIT_FITS || t->over_budget);
}

/* Killed by SIGKILL: under a wrapper (sh -c 'trainer; exit $?') the same
 * kill is the wrapper's exit status 128 + 9. */
static int sigkilled(const batchfit_trial *t)
{
    return t->process.signal == SIGKILL ||
           (t->process.exited && t->process.exit_code == 128 + SIGKILL);
}

/* A kill neither this probe's watchdog nor the kernel's OOM killer (as
 * far as its counts tell) sent. */
static int killed_from_outside(const batchfit_trial *t)
{
    return sigkilled(t) && !t->process.watchdog_stopped && !t->process.oom_killed;
}

/* A trial stopped where it crossed the budget, by the watchdog or the
 * kernel (a SIGKILL the kernel did not count as its own, a scheduler's
 * memory limit, stops it just the same): its reading is where it was
 * stopped, about the budget, not what it needed. */
static int stopped(const batchfit_trial *t)
{
    return !measured_to_the_end(t) && t->process.ran &&
           (t->process.watchdog_stopped || t->process.oom_killed || sigkilled(t));
}

/* A rejected trial at lattice index i becomes the bracket's upper end. */
static void set_hi(search *s, int64_t i, const batchfit_trial *t)
{
    int before = s->hi_measured || s->hi == (int64_t)s->lattice.count;
    s->hi = i;
    s->hi_need = t->peak_known ? (double)t->peak_bytes : 0.0;
    s->hi_measured = measured_to_the_end(t);
    s->hi_first_measured = s->hi_measured && !before;
    s->hi_stopped = stopped(t);
    /* What a trial that failed on its own held when it failed, at or under
     * the threshold, says nothing of where the threshold is crossed: its
     * out-of-memory was elsewhere (a GPU this probe does not measure, an
     * address-space limit, a message of the program's own). Read as a
     * point just above lo's, the bracket looked flat and the search
     * stopped at 40 where 100 fits. (A stopped trial's reading is where it
     * was stopped, at the budget: hi_stopped's rules read it as that.) */
    if (!s->hi_measured && !s->hi_stopped && s->budget_known && s->hi_need <= s->safe_budget)
        s->hi_need = 0.0;
}

/* Judges, records, logs and reports a trial that ran at lattice index i;
 * with move set, moves the bracket by it. Returns BATCHFIT_OK or a code
 * that ends the search. */
static int record_trial(search *s, int64_t i, batchfit_trial *tp, int move)
{
    batchfit_trial t = *tp;
    t.batch = batchfit__lattice_value(&s->lattice, (uint64_t)i);
    t.message[sizeof t.message - 1] = '\0';
    judge(s, &t);
    if (batchfit__result_add_trial(s->result, &t) != BATCHFIT_OK)
        return batchfit__fail(s->ctx, BATCHFIT_E_NO_MEMORY, "out of memory recording a trial");
    char peak[32] = "unknown";
    if (t.peak_known)
        batchfit_format_bytes((double)t.peak_bytes, peak, sizeof peak);
    batchfit__log(s->ctx, BATCHFIT_LOG_INFO, "trial %zu: batch %llu %s (%s %s, %.3f s)%s%s",
                  s->result->trial_count, (unsigned long long)t.batch,
                  batchfit_outcome_name(t.outcome),
                  t.outcome == BATCHFIT_OOM ? "needed at least" : "peak", peak, t.seconds,
                  t.message[0] ? ": " : "", t.message);
    /* Every trial is reported, a failed one too (the search ends there
     * whatever the callback says). */
    int stop = s->opts->progress &&
               s->opts->progress(s->result, &s->result->trials[s->result->trial_count - 1],
                                 s->opts->progress_userdata) != 0;
    if (t.outcome == BATCHFIT_ERROR) {
        /* The error says what had fit: the user's bug may lie only above it. */
        char known[80] = "", below[300] = "";
        if (s->lo >= 0)
            snprintf(known, sizeof known, " (batch size %llu fit before it)",
                     (unsigned long long)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo));
        /* Sizes between what fit and the failure were never run: if the
         * error belongs to large batches only, the user can search there.
         * A bound just under the failure only sends the search there again
         * (a reviewer's --max 1208 below 1209 ran 1208, which failed as
         * well): where a size fit, the bound that keeps it is named too. */
        char keep[96] = "";
        if (s->lo >= 0)
            snprintf(keep, sizeof keep, ", or to %llu to take the largest size that fit",
                     (unsigned long long)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo));
        if (i > s->lo + 1 && i > 0)
            snprintf(below, sizeof below,
                     "; sizes %llu to %llu were not run: if the error comes only with large "
                     "batches, find the size where it starts (run the command at sizes between) "
                     "and set max_batch_size (--max) below it%s",
                     (unsigned long long)batchfit__lattice_value(&s->lattice, (uint64_t)(s->lo + 1)),
                     (unsigned long long)batchfit__lattice_value(&s->lattice, (uint64_t)(i - 1)),
                     keep);
        return batchfit__fail(s->ctx, BATCHFIT_E_TRIAL_ERROR,
                              "the trial at batch size %llu failed with an error that is not "
                              "out-of-memory%s: %s%s",
                              (unsigned long long)t.batch, known,
                              t.message[0] ? t.message : "(no message)", below);
    }
    *tp = t;
    if (i == s->bend_next)
        s->bend_used = 1;
    s->bend_next = -1;
    if (i == s->band_next)
        s->band_used++;
    s->band_next = -1;
    s->anchor_ran = i == s->anchor_next;
    s->anchor_next = -1;
    if (!move) {
    } else if (t.accepted) {
        if (i > s->lo)
            s->lo = i;
    } else if (i < s->hi && i > s->lo) {
        /* A rejection at or below lo (a size that fitted, failing when run
         * again) is a reading, not the bracket's end: as hi it inverted
         * the bracket, and the search ran sizes past 2^62. */
        set_hi(s, i, &t);
    }
    if (stop)
        return batchfit__fail(s->ctx, BATCHFIT_E_ABORTED,
                              "the progress callback stopped the search after batch size %llu",
                              (unsigned long long)t.batch);
    return BATCHFIT_OK;
}

/* Runs the oracle at lattice index i into *t (zeroed first). */
static int call_oracle(search *s, int64_t i, batchfit_trial *t)
{
    memset(t, 0, sizeof *t);
    t->batch = batchfit__lattice_value(&s->lattice, (uint64_t)i);
    oracle_begins(s);
    return oracle_code(s, s->oracle(s->oracle_userdata, t->batch, t), t, 1);
}

/* Whether a trial at index i can be the minimum's first reading: nothing
 * accepted yet (an earlier reading was either accepted or ended the search). */
static int minimum_first(const search *s, int64_t i)
{
    return i == 0 && s->lo < 0;
}

/* The smallest size as a far end for the line (see propose_slope_unknown):
 * 0 where it ran already (a cold first reading dropped is no reason to run
 * it again), else its index, marked so that its fit is no miss. */
static int anchor_at_minimum(search *s, int64_t *next)
{
    /* A round runs sizes inside the bracket only: the anchor, below lo,
     * would give way to the bracket's middle (see propose_round). */
    if (s->in_rounds)
        return 0;
    uint64_t smallest = batchfit__lattice_value(&s->lattice, 0);
    for (size_t t = 0; t < s->result->trial_count; t++)
        if (s->result->trials[t].batch == smallest)
            return 0;
    s->anchor_next = 0;
    *next = 0;
    return 1;
}

/* Whether a judged trial at index i is the minimum's first reading, too
 * close to the budget: finished, over the threshold. */
static int too_close_minimum(const search *s, int64_t i, const batchfit_trial *judged)
{
    return minimum_first(s, i) && judged->outcome == BATCHFIT_FITS && !judged->accepted;
}

/* Runs one trial at lattice index i. Returns BATCHFIT_OK or a code that ends
 * the search.
 *
 * A minimum too close to the budget (it finished under the budget, over the
 * threshold) ends the search, as nothing smaller can run. With nothing
 * accepted yet, this is its first reading (an earlier one was either
 * accepted or ended the search), and that may be a draw (a PyTorch job's
 * batch 1 read 323.45 MiB once against a threshold of 318.88 MiB, 310.8 MiB
 * on every other run, and the probe failed with "even the minimum does not
 * fit"): that reading is
 * recorded (a point, and a re-run's scatter) without moving the bracket,
 * and the minimum runs once more; the second reading decides. So too for
 * the probe's first trial at any size (a first guess, a remembered size):
 * a first run's compilation and the caches it fills read there, and too
 * close by them it closed the bracket under the user's own guess (480 on
 * a program that held 12% more on its first run: 462), and with the cache
 * each probe remembered less than the one before (514, 484, 462, 461; test
 * search_model_a_cold_first_guess_too_close_runs_again). */
static int run_trial(search *s, int64_t i)
{
    batchfit_trial t;
    int rc = call_oracle(s, i, &t);
    if (rc)
        return rc;
    if ((minimum_first(s, i) || s->result->trial_count == 0) &&
        s->result->trial_count + 1 < s->opts->max_trials) {
        batchfit_trial judged = t;
        judge(s, &judged);
        if (judged.outcome == BATCHFIT_FITS && !judged.accepted) {
            rc = record_trial(s, i, &t, 0);
            if (!rc)
                rc = call_oracle(s, i, &t);
            if (rc)
                return rc;
        }
    }
    return record_trial(s, i, &t, 1);
}

static int64_t clamp_inside(const search *s, int64_t i)
{
    if (i <= s->lo)
        i = s->lo + 1;
    if (i >= s->hi)
        i = s->hi - 1;
    return i;
}

static int64_t index_floor_of(const search *s, double batch)
{
    /* NaN too: no size (a target from readings that fell to nothing). */
    if (!(batch >= 1.0))
        return -1;
    if (batch >= (double)INT64_MAX)
        return (int64_t)s->lattice.count - 1;
    return batchfit__lattice_index_floor(&s->lattice, (uint64_t)batch);
}

/* The number of lattice steps from lo to hi (lo >= -1, hi <= 2^63 - 1):
 * as an unsigned count, since hi - lo itself overflows when the bound is
 * the largest batch size allowed and nothing has fitted yet. */
static uint64_t span(int64_t lo, int64_t hi)
{
    return (uint64_t)hi - (uint64_t)lo;
}

/* from + 2 step, in lattice indices, no further than the last index: on a
 * lattice of 2^63 sizes (--max near 2^63) a creeping search's doubled step
 * overflowed int64_t and proposed sizes past the bound. */
static int64_t twice_past(const search *s, int64_t from, int64_t step)
{
    int64_t last = (int64_t)s->lattice.count - 1;
    return step > (last - from) / 2 ? last : from + 2 * step;
}

static int64_t propose_bisect(const search *s)
{
    return s->lo + (int64_t)(span(s->lo, s->hi) / 2);
}

/* Doubling from the last fitting size while nothing has failed; bisection
 * once something has. */
static int64_t propose_gallop(const search *s)
{
    if (s->hi < (int64_t)s->lattice.count)
        return propose_bisect(s);
    if (s->lo < 0)
        return 0;
    double doubled = 2.0 * (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo);
    return clamp_inside(s, index_floor_of(s, doubled));
}

/* Sixteen times the last fitting size (bisection once something failed):
 * a stride that lifts a point out of trial-to-trial noise quickly. */
static int64_t propose_leap(const search *s)
{
    if (s->hi < (int64_t)s->lattice.count || s->lo < 0)
        return propose_gallop(s);
    double far = 16.0 * (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo);
    return clamp_inside(s, index_floor_of(s, far));
}

/* Which readings to collect: trials that ran to their end with a measured
 * peak (fitting, or finished over the budget); rejected trials that said
 * what they needed (a peak over the threshold, or what an out-of-memory
 * trial reached at least); or those of them not stopped at the budget by a
 * watchdog or the kernel (what they read is what they needed). */
typedef enum reading { READ_FITS, READ_FAILURES, READ_NEEDS } reading;

/* The readings of one kind, at most one point per batch size (the highest
 * peak seen there, and in low, when given, the lowest), sorted by batch. */
static unsigned collect(const search *s, reading kind, double *x, double *y, double *low)
{
    unsigned n = 0;
    for (size_t t = 0; t < s->result->trial_count; t++) {
        const batchfit_trial *tr = &s->result->trials[t];
        int wanted = kind == READ_FITS
                         ? tr->outcome == BATCHFIT_FITS || tr->over_budget
                         : !tr->accepted && tr->outcome != BATCHFIT_ERROR &&
                               (kind == READ_FAILURES || !stopped(tr));
        if (!wanted || !tr->peak_known)
            continue;
        double bx = (double)tr->batch, py = (double)tr->peak_bytes;
        unsigned k = 0;
        while (k < n && x[k] < bx)
            k++;
        if (k < n && x[k] == bx) {
            if (py > y[k])
                y[k] = py;
            if (low && py < low[k])
                low[k] = py;
            continue;
        }
        if (n == MAX_POINTS)
            continue;
        memmove(&x[k + 1], &x[k], (n - k) * sizeof *x);
        memmove(&y[k + 1], &y[k], (n - k) * sizeof *y);
        if (low)
            memmove(&low[k + 1], &low[k], (n - k) * sizeof *low);
        x[k] = bx;
        y[k] = py;
        if (low)
            low[k] = py;
        n++;
    }
    return n;
}

static unsigned collect_points(const search *s, double *x, double *y, double *low)
{
    return collect(s, READ_FITS, x, y, low);
}

/* The index of batch among the sorted points x (n when it has none). */
static unsigned index_of(const double *x, unsigned n, double batch)
{
    unsigned i = 0;
    while (i < n && x[i] != batch)
        i++;
    return i;
}

/* A reading in bytes as a count: a peak at or past 2^64 - 1024 rounds to
 * 2^64 as a double, which no uint64_t holds (a trial that finished over the
 * budget reporting UINT64_MAX). */
static uint64_t bytes_u64(double v)
{
    if (!(v > 0.0))
        return 0;
    return v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Allocators round peaks to a granule (CUDA's caching allocator to 2 MiB,
 * the kernel to pages); the measured peaks share it as a common divisor.
 * Predictions are only trusted beyond that rounding. Peaks that are all the
 * same (memory flat over the points, a pool the batch has not outgrown)
 * show no granule: their common divisor is the peak itself, and read as
 * rounding it bounded the slope by the whole peak over the spacing, so the
 * search crept over a flat run adding a size, two, four (18 trials to
 * reach 32771). */
static double granule_of(const double *y, unsigned n)
{
    uint64_t g = 0;
    int differ = 0;
    for (unsigned i = 0; i < n; i++) {
        g = gcd_u64(g, bytes_u64(y[i]));
        differ |= y[i] != y[0];
    }
    return differ ? (double)g : 0.0;
}

/* The first trial of a probe can read high for reasons the batch has no
 * part in: a cold page cache, first-run compilation and caches of a
 * framework (a PyTorch MLP read 386 MiB at batch 1, then 276 MiB at 2 and
 * every size to 66). Where its reading stands above that of a larger size
 * by more than two draws can differ (the declared band) and a granule, and
 * two other points remain, it is a cold start: it is left out of the
 * points (its acceptance stands), so it neither bends the line nor reads
 * as the program's scatter. A size run again keeps its warm readings. */
static unsigned drop_cold_start(const search *s, double *x, double *y, double *low, unsigned n)
{
    if (s->result->trial_count == 0)
        return n;
    const batchfit_trial *first = &s->result->trials[0];
    unsigned j = index_of(x, n, (double)first->batch);
    if (j == n || !first->peak_known || (double)first->peak_bytes != y[j])
        return n;
    if (low[j] != y[j]) {
        /* Run again (the minimum too close on its first reading, see
         * run_trial) and read lower: the warm runs are the size's readings.
         * Kept as a re-run's scatter, the cold one stopped a search in
         * rounds at 16 where 202 fits (the bracket's whole rise under it). */
        double warm = 0.0;
        for (size_t t = 1; t < s->result->trial_count; t++) {
            const batchfit_trial *tr = &s->result->trials[t];
            if (tr->batch == first->batch && tr->peak_known && tr->outcome == BATCHFIT_FITS &&
                (double)tr->peak_bytes > warm)
                warm = (double)tr->peak_bytes;
        }
        if (warm > 0.0)
            y[j] = warm;
        return n;
    }
    if (n < 3)
        return n;
    double granule = granule_of(y, n);
    /* Three points or more besides it, quiet on their own line (a residual
     * under a tenth of the declared prior, the quiet cut): the program
     * shows no scatter, and a fall from the first reading of four times
     * their residual, and of the quiet cut, is the cold start, not a draw
     * (a NumPy step read 8.9% high at batch 1, under the declared band;
     * kept, it stood as the program's scatter and the search stopped at
     * 523 where 599 fits). A smaller fall is the wander a quiet triple can
     * hide by chance. */
    double quiet_fall = INFINITY;
    if (n >= 4 && s->spread > 0.0) {
        double ox[MAX_POINTS], oy[MAX_POINTS];
        unsigned m = 0;
        for (unsigned i = 0; i < n; i++)
            if (i != j) {
                ox[m] = x[i];
                oy[m++] = y[i];
            }
        batchfit_fit others;
        batchfit__fit_line(ox, oy, m, &others);
        double quiet_cut = 0.1 * s->spread * oy[m - 1];
        if (others.valid && others.max_residual_bytes < quiet_cut)
            quiet_fall = fmax(4.0 * others.max_residual_bytes, quiet_cut);
    }
    for (unsigned k = j + 1; k < n; k++)
        if (y[j] - y[k] > fmin(2.0 * s->spread * y[k], quiet_fall) + (y[k] - low[k]) + granule) {
            memmove(&x[j], &x[j + 1], (n - j - 1) * sizeof *x);
            memmove(&y[j], &y[j + 1], (n - j - 1) * sizeof *y);
            memmove(&low[j], &low[j + 1], (n - j - 1) * sizeof *low);
            return n - 1;
        }
    return n;
}

/* Memory that falls as the batch grows: a glibc-malloc PyTorch CPU job
 * peaked at 928 MiB at batch 56 and at 714 MiB at 64 (the adaptive mmap
 * threshold moved; ../shared/data). Two draws differ by at most the
 * declared band, and the kernel's accounting wander by a fraction of a
 * percent; a point that reads below a smaller size by more than that band
 * (1% of its peak at least), its own re-runs' spread and a granule stands
 * on another curve. The points below the last such fall are left out
 * (their acceptances stand): read as scatter, the fall made the coin-toss
 * band some 80 MiB wide and the search stopped at the first size past it
 * (60, 64, 83 where bisection found 91, 96, 96). Returns the points kept;
 * *fell, when given, says where the last fall was (from_x 0: none). Falls
 * wider than the declared spread allows are also what peaks wider than
 * declared look like: the warning says both (warn_not_monotone). */
/* A process's peak wanders by its loader's and allocator's pages whatever
 * the batch (/bin/true read 256 KiB and 512 KiB): a fall, or a spread
 * between readings, no larger than this says nothing of the program, and
 * its warnings advised a 34% spread for a program that used no memory. */
#define PAGE_WANDER (1024.0 * 1024.0)

typedef struct fall {
    double from_x, from_y; /* the smaller size and its lowest reading */
    double to_x, to_y;     /* the larger size that read below it, and its highest */
} fall;

static unsigned drop_below_fall(const search *s, double *x, double *y, double *low, unsigned n,
                                fall *fell)
{
    double granule = granule_of(y, n);
    unsigned from = 0;
    fall f = {0.0, 0.0, 0.0, 0.0};
    /* A fall ends at an accepted size: among the rejected sizes above lo
     * (finished over the threshold) one reading below another is that
     * rejection's business, and the curve up to lo is what the search
     * stands on. */
    double lo_x = s->lo >= 0 ? (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo) : 0.0;
    for (unsigned j = 1; j < n && x[j] <= lo_x; j++) {
        double band =
            fmax(fmax(2.0 * s->spread, 0.01) * y[j], PAGE_WANDER) + (y[j] - low[j]) + granule;
        /* From the highest reading below it: the warning names the whole fall. */
        unsigned top = from;
        for (unsigned i = from + 1; i < j; i++)
            if (low[i] > low[top])
                top = i;
        if (low[top] - y[j] > band) {
            f = (fall){x[top], low[top], x[j], y[j]};
            from = j;
        }
    }
    if (fell)
        *fell = f;
    if (from == 0)
        return n;
    memmove(x, x + from, (n - from) * sizeof *x);
    memmove(y, y + from, (n - from) * sizeof *y);
    memmove(low, low + from, (n - from) * sizeof *low);
    return n - from;
}

/* The points the model reads: the collected fitting readings, less a cold
 * first trial and the points below the last fall; *fell (when given) says
 * where that fall was. */
static unsigned model_points(const search *s, double *x, double *y, double *low, fall *fell)
{
    unsigned n = drop_cold_start(s, x, y, low, collect_points(s, x, y, low));
    return drop_below_fall(s, x, y, low, n, fell);
}

/* Where the line through (x0, y0) with the given slope reaches the aim.
 * The spread is already in the acceptance threshold; how far below it a
 * proposal stays is decided from the measurements (see propose_model). */
static double crossing(const search *s, double x0, double y0, double slope)
{
    return x0 + (s->aim - y0) / slope;
}

/* The slope of the curve up at the failures: the secant of the failure at
 * fail_x and the nearest one above it, where both read what they needed
 * (not where a watchdog or the kernel stopped them) and the upper one
 * needed more by over resolvable (the noise of two readings and a
 * granule: two rejections five sizes apart just over the threshold gave a
 * slope of noise, and the next size fell to the bracket's middle). 0 where
 * there is no such pair. */
static double failures_slope(const search *s, double fail_x, double resolvable)
{
    double fx[MAX_POINTS], fy[MAX_POINTS];
    unsigned m = collect(s, READ_NEEDS, fx, fy, NULL);
    unsigned k = index_of(fx, m, fail_x);
    return k + 1 < m && fy[k + 1] - fy[k] > resolvable ? (fy[k + 1] - fy[k]) / (fx[k + 1] - fail_x)
                                                       : 0.0;
}

/* Below a failure that said what it needed (a point above the curve). With
 * a local slope, the excess of that need over the line is treated as a
 * workspace that appears right after the top point: the line shifted up by
 * it crosses the budget at a size that fits wherever the jump really is.
 * Without a slope, interpolate (regula falsi); without a need, bisect. */
static int64_t propose_below_failure(search *s, double top_x, double top_y, double slope,
                                     double resolvable)
{
    if (s->hi >= (int64_t)s->lattice.count || !(s->hi_need > top_y))
        return propose_bisect(s);
    double fail_x = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->hi);
    if (!(fail_x > top_x))
        return propose_bisect(s);
    double target;
    double excess = slope > 0.0 ? s->hi_need - (top_y + slope * (fail_x - top_x)) : -1.0;
    if (excess > 0.0)
        target = crossing(s, top_x, top_y + excess, slope);
    else
        target = crossing(s, top_x, top_y, (s->hi_need - top_y) / (fail_x - top_x));
    /* Two failures above lo that read their needs: their secant is the
     * curve's slope up there, where lo's line to the failure can be
     * steeper by every jump in between (the remembered line went down one
     * failure at a time, three out of memory). Down from the failure along
     * it, where that is lower. */
    double local = failures_slope(s, fail_x, resolvable);
    if (local > 0.0 && fail_x - (s->hi_need - s->aim) / local < target)
        target = fail_x - (s->hi_need - s->aim) / local;
    int64_t c = index_floor_of(s, target);
    /* Nothing above lo fits after such a jump: whatever fits above lo lies
     * before the jump, which only bisection can find. */
    return c <= s->lo ? propose_bisect(s) : clamp_inside(s, c);
}

/* A failure just above lo that said what it needed is a point above the
 * curve. Where the slope from lo to it agrees (within 5%) with the slope of
 * the points below - two independent estimates, which a workspace jump
 * between them would pull apart - the next size's peak is bounded below by
 * the flatter of the two, shaved by 5% and a granule. */
static int certified_by_failure(const search *s, double top_x, double top_y, double slope,
                                double granule)
{
    if (s->hi >= (int64_t)s->lattice.count || !(s->hi_need > top_y) || !(slope > 0.0))
        return 0;
    double fail_x = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->hi);
    double next_x = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo + 1);
    if (!(fail_x > top_x))
        return 0;
    double need_slope = (s->hi_need - top_y) / (fail_x - top_x);
    double flatter = need_slope < slope ? need_slope : slope;
    double steeper = need_slope < slope ? slope : need_slope;
    if (steeper - flatter > 0.05 * steeper)
        return 0;
    return top_y + 0.95 * flatter * (next_x - top_x) - granule > s->safe_budget;
}

#define CERTIFIED                                                                                  \
    "the %s through the measured peaks predicts %llu (not run) over the acceptance threshold "    \
    "by more than their scatter and a granule"
#define BY_FAILURE                                                                                 \
    "the failure's reading and the slope below it predict %llu (not run) over the acceptance "    \
    "threshold"

/* The size after lo, for the reasons below. */
static unsigned long long next_size(const search *s)
{
    return (unsigned long long)batchfit__lattice_value(&s->lattice, (uint64_t)(s->lo + 1));
}

/* The model settles on lo: records why (the result's stop_reason) and
 * returns 1. */
static int settled(search *s, const char *fmt, ...) BATCHFIT_PRINTF(2, 3);
static int settled(search *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->why, sizeof s->why, fmt, ap);
    va_end(ap);
    return 1;
}

/* The remembered size fitted. Where the new peak agrees with the
 * remembered curve (within 1%, or within the declared band of two draws
 * and the curve's own residual), the program is the one remembered and
 * only the budget may have moved: the curve, anchored at the new peak,
 * says where the threshold is crossed now. Far above the remembered size,
 * go there (a larger budget); at the next size, the next size decides,
 * and even the curve's pessimistic end putting it over the threshold
 * settles the search without a trial. A curve the peak disagrees with
 * says nothing: the next size decides. */
static int verify_cached(search *s, int64_t *next)
{
    const batchfit_fit *fit = &s->opts->cached_fit;
    const batchfit_trial *t = &s->result->trials[0];
    *next = s->lo + 1;
    if (!fit->valid || !t->peak_known || !s->budget_known || !(fit->bytes_per_sample > 0.0) ||
        s->lo + 1 >= (int64_t)s->lattice.count)
        return 0;
    double x = (double)t->batch, y = (double)t->peak_bytes, miss = 0.0;
    if (!batchfit__fit_explains(fit, x, y, s->spread, &miss))
        return 0;
    /* Trust the remembered slope only beyond how far the curve moved and
     * the fit's own residual. */
    double next_x = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo + 1);
    double pessimistic = y + fit->bytes_per_sample * (next_x - x) - miss - fit->max_residual_bytes;
    if (pessimistic > s->safe_budget)
        return settled(s, "the remembered curve, through this probe's reading, predicts %llu (not "
                          "run) over the acceptance threshold",
                       next_size(s));
    /* Under a declared spread the one reading is a draw: aim the half band
     * a draw strays below the threshold. */
    double aim = s->safe_budget - s->spread * y - fit->max_residual_bytes;
    int64_t c = index_floor_of(s, x + (aim - y) / fit->bytes_per_sample);
    /* Unless the curve put the earlier probe's own crossing well above the
     * size it answered: the budget did not stop that probe (the program's
     * own limit, a jump the line does not know), and following the curve
     * to this budget's crossing ran eight sizes out of memory down to the
     * remembered 91 (a program that fails above 90 far under its budget).
     * The next size decides first, as on an unchanged budget. That is a
     * fact of the earlier probe: the remembered curve says it, not this
     * reading (which it explains to within 1% or the band: through a peak
     * 0.8% lower, the earlier crossing moved above the next size and a
     * re-run under a budget 30% larger crept up for up to nine trials). */
    if (s->opts->cached_budget_bytes) {
        double before = (double)s->opts->cached_budget_bytes * s->safe_budget / s->budget;
        double then = fit->intercept_bytes + fit->bytes_per_sample * x;
        double reach = before - 2.0 * (s->spread * then + fit->max_residual_bytes);
        if (index_floor_of(s, x + (reach - then) / fit->bytes_per_sample) > s->lo + 1)
            return 0;
    }
    if (c > s->lo + 1)
        *next = clamp_inside(s, c);
    return 0;
}

/* The largest batch that no line through two measured points puts over the
 * acceptance threshold, among pairs whose rise stands above the noise (a
 * smaller rise says nothing about the slope). A line that a larger measured
 * size lies below (by more than the noise) is refuted: it crossed a
 * workspace jump, which does not repeat. Infinite when no line caps. */
static double secant_cap_at(const search *s, const double *x, const double *y, unsigned n,
                            double resolvable, double level)
{
    double cap = INFINITY;
    for (unsigned i = 0; i + 1 < n; i++)
        for (unsigned j = i + 1; j < n; j++) {
            double rise = y[j] - y[i];
            /* Only accepted points: one over the threshold is a draw the
             * search already refused to build on. */
            if (!(rise > resolvable) || y[j] > s->safe_budget)
                continue;
            double slope = rise / (x[j] - x[i]);
            int refuted = 0;
            for (unsigned k = j + 1; k < n && !refuted; k++)
                refuted = y[k] < y[j] + slope * (x[k] - x[j]) - resolvable;
            double c = x[j] + (level - y[j]) / slope;
            if (!refuted && c < cap)
                cap = c;
        }
    return cap;
}

static double secant_cap(const search *s, const double *x, const double *y, unsigned n,
                         double resolvable)
{
    return secant_cap_at(s, x, y, n, resolvable, s->aim);
}

/* Where a parabola through the three largest accepted sizes up to lo
 * crosses the aim, when the lower secant shows a slope (a rise of twice
 * resolvable: not a pool's flat run, whose edge bends any parabola) and
 * the upper one is steeper by more than the noise of their readings can
 * make (resolvable over each spacing, twice): memory that grows faster
 * than a line (a B x B term, B^1.2-2). The secant carried past the top
 * point lies under such a curve: per-sample memory as B^1.7 over 700 MiB
 * ran 14 trials, three out of memory one overshoot after another (test
 * search_model_memory_growing_faster_than_a_line_is_not_overshot).
 * m: lo's index among the points (n: none). Infinite where the secants do
 * not steepen. */
static double convex_cap(const search *s, const double *x, const double *y, unsigned n, unsigned m,
                         double resolvable)
{
    if (m >= n || m < 2)
        return INFINITY;
    double x1 = x[m - 2], x2 = x[m - 1], x3 = x[m], y1 = y[m - 2], y2 = y[m - 1], y3 = y[m];
    double s1 = (y2 - y1) / (x2 - x1), s2 = (y3 - y2) / (x3 - x2);
    if (!(s2 - s1 > 2.0 * resolvable * (1.0 / (x2 - x1) + 1.0 / (x3 - x2))) ||
        !(y2 - y1 > 2.0 * resolvable))
        return INFINITY;
    double a = (s2 - s1) / (x3 - x1), d3 = s2 + a * (x3 - x2), room = s->aim - y3;
    if (!(room > 0.0))
        return INFINITY; /* the line's own crossing is at lo already */
    double cap = x3 + 2.0 * room / (d3 + sqrt(d3 * d3 + 4.0 * a * room));
    /* Near lo the secant's own crossing stands: the parabola bends a kink
     * (a pool's edge between the points) on past it, where the memory goes
     * on as a line, and it held a search two trials short of a crossing 1%
     * past lo. */
    return cap > (1.0 + PREDICT_AT_MOST) * x3 ? cap : (1.0 + PREDICT_AT_MOST) * x3;
}

/* Caps a proposal at a batch (lattice index floor). A cap at or below lo
 * says lo + 1 does not fit: the proposal becomes lo, which the caller
 * treats as "no further" (certify, or bisect what is left), never as a
 * creep one size at a time. */
static int64_t cap_at(const search *s, int64_t i, double batch)
{
    if (isinf(batch))
        return i;
    int64_t c = index_floor_of(s, batch);
    if (c < i)
        i = c;
    return i <= s->lo ? s->lo : i;
}

/* The remembered curve's slope, when there is one: the cache's fit from an
 * earlier probe of the same command. */
static double remembered_slope(const search *s)
{
    const batchfit_fit *fit = &s->opts->cached_fit;
    return fit->valid && fit->bytes_per_sample > 0.0 ? fit->bytes_per_sample : 0.0;
}

/* Nothing fitted yet, but a remembered size (or a first guess) failed. With
 * a remembered curve, go where it crosses the threshold, and no further than
 * where its slope through the failure's need does: a changed budget moves
 * the answer along the same curve. Otherwise start from the minimum. */
static int64_t propose_after_misses(const search *s);

static int64_t propose_without_points(const search *s)
{
    double slope = remembered_slope(s);
    if (!(slope > 0.0) || s->hi >= (int64_t)s->lattice.count)
        return propose_gallop(s);
    const batchfit_fit *fit = &s->opts->cached_fit;
    double target = (s->safe_budget - fit->intercept_bytes) / slope;
    if (s->hi_need > 0.0) {
        double fail_x = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->hi);
        double local = failures_slope(s, fail_x, 2.0 * s->spread * s->hi_need);
        if (local > 0.0 && local < slope)
            slope = local;
        double below = fail_x - (s->hi_need - s->safe_budget) / slope;
        if (below < target)
            target = below;
    }
    int64_t c = index_floor_of(s, target);
    /* A failure that said nothing of what it needed (a MemoryError) at a
     * size the curve puts under the budget, a draw of the spread over it
     * included: the curve is refuted there, and clamped under that failure
     * it stepped down one size a trial (9718, 9717, 9716, 9715 out of
     * memory after the program grew a hundredfold). The size it failed
     * at was the program's answer before: half of it fits a program that
     * grew up to twice (the geometric middle of the minimum and it, 93
     * where 6762 fits, cost a trial after a growth of 30%); after that,
     * as if nothing were remembered. */
    if (s->lo < 0 && !(s->hi_need > 0.0)) {
        double fail_x = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->hi);
        double then = fit->intercept_bytes + slope * fail_x;
        if (then * (1.0 + s->spread) <= s->budget)
            return s->misses <= 1 ? propose_bisect(s) : propose_after_misses(s);
    }
    /* Inside the bracket: with fits that read no peak, lo may already stand
     * above the minimum, and proposing it again ran it thirty times. */
    return clamp_inside(s, c < 0 ? 0 : c);
}

/* The geometric middle of low_x and hi's size where hi lies more than four
 * times above low_x (the crossing as likely at a tenth of hi as at half),
 * else (or where that lands outside the bracket) bisection. */
static int64_t geometric_middle(const search *s, double low_x)
{
    double hi_x = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->hi);
    int64_t i = hi_x > 4.0 * low_x ? index_floor_of(s, sqrt(low_x * hi_x)) : -1;
    return i > s->lo && i < s->hi ? i : propose_bisect(s);
}

/* Nothing has fitted and two sizes or more failed (a first guess or a
 * remembered size far too large). Where two failures said what they needed
 * (not stopped at the budget), the line through those needs crosses the
 * threshold about where the curve does (a need is a lower bound: what was
 * held when an allocation failed, and the allocation): go halfway there. A
 * point well below the crossing gives the line a slope; one run at the
 * crossing itself (0.04% under it) left a single point at the threshold
 * and the search closed a noise band one draw at a time, 11 trials where
 * halving took 4. Else the failures say only "smaller", and halving from an
 * estimate 86 times too large ran seven trials out of memory: take the
 * geometric middle of the minimum and the smallest failure where it spans
 * more than a factor of four (the crossing is as likely at a hundredth of
 * it as at half), else bisect. */
static int64_t propose_after_misses(const search *s)
{
    double fx[MAX_POINTS], fy[MAX_POINTS];
    unsigned m = collect(s, READ_NEEDS, fx, fy, NULL);
    if (m >= 2 && fx[1] > fx[0] && fy[1] > fy[0]) {
        double slope = (fy[1] - fy[0]) / (fx[1] - fx[0]);
        int64_t i = index_floor_of(s, 0.5 * (fx[0] - (fy[0] - s->safe_budget) / slope));
        if (i > s->lo && i < s->hi)
            return i;
    }
    return geometric_middle(s, (double)batchfit__lattice_value(&s->lattice, 0));
}

/* The slope is unknown here: the points show no rise, a fall, or a rise the
 * noise could have made. That is never "memory does not grow". Inside a
 * bracket, bisect. With a remembered curve (the cache's fit of the same
 * command), its slope stands: the points place it (the mean of what each
 * says the intercept is, so the draws average out), and the search goes
 * where it crosses the aim; where that is not above lo, the points agree
 * that lo is the last size below it and the search is settled (returns 1).
 * Otherwise move on only as far as the steepest slope the top point
 * allows: all it holds above the baseline (all of it, without a baseline)
 * is taken as growing with the batch, plus the noise it may hide. On a
 * line with an intercept at least the baseline that size still fits. */
static int propose_slope_unknown(search *s, const double *x, const double *y, unsigned n,
                                 double noise, double granule, int prior_bounds, int64_t *next)
{
    if (s->hi < (int64_t)s->lattice.count) {
        *next = propose_bisect(s);
        return 0;
    }
    double top_x = x[n - 1], top_y = y[n - 1];
    double remembered = remembered_slope(s);
    if (remembered > 0.0) {
        double intercept = 0.0;
        for (unsigned i = 0; i < n; i++)
            intercept += (y[i] - remembered * x[i]) / n;
        int64_t c = index_floor_of(s, (s->aim - intercept) / remembered);
        if (c <= s->lo && s->lo >= 0)
            return settled(s, "the remembered slope, through this probe's readings, crosses the "
                              "acceptance threshold before %llu",
                           next_size(s));
        *next = clamp_inside(s, c);
        return 0;
    }
    /* Every point lies within ANCHOR_SPAN under lo (a first guess near the
     * answer, and sizes next to it): their rise is lost in the band, and
     * widening from them leapt past the answer threefold and came down by
     * halves, four out of memory. The smallest size is cheap and gives the
     * line a second end far below (see the one-point rule in
     * propose_from_line). Not points further apart: along a curve the line
     * from the smallest size is a chord, and a B x B program's guess at 240
     * and 257 (rising 16.5 MiB under a 17 MiB band) ran 1, then 321 out of
     * memory, where the creep from them stopped at 258 in three trials. */
    if (s->spread > 0.0 && s->lo > 0 &&
        x[0] > (1.0 - ANCHOR_SPAN) * (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo) &&
        anchor_at_minimum(s, next))
        return 0;
    double base = s->result->baseline_known ? (double)s->result->baseline_bytes : 0.0;
    double grown = top_y + noise - base;
    if (!(grown > 0.0)) {
        *next = propose_leap(s);
        return 0;
    }
    /* Each point below the top bounds the slope too: the top rose above
     * it by at most its rise plus what two draws can differ by. */
    double all_grows = grown / top_x, steepest = all_grows;
    for (unsigned i = 0; i + 1 < n; i++) {
        double bound = (top_y - y[i] + noise + granule) / (top_x - x[i]);
        if (bound > 0.0 && bound < steepest)
            steepest = bound;
    }
    /* Those bounds hold on a line; memory flat over the points may still
     * turn up beyond them (a buffer sized in steps of the batch, a pool
     * that runs out). Widen the spacing from what is known, at most
     * WIDEN_AT_MOST times the top size a trial, unless all the top holds,
     * taken as growing with the batch, reaches further still. Where the
     * top rose above the point before it and the noise allowed for is the
     * declared prior (no quiet points have shrunk it), the bound itself is
     * the limit: a rise hidden in that band is the most the slope can be,
     * and a deterministic program under the host's default 5% (a rise of
     * 1% from batch 1 to 10) reached its boundary two trials later instead
     * of three. Quiet flat points bound the slope by their own scatter,
     * next to nothing, and that bound on a pool's flat run leapt a
     * thousandfold: it stays capped. */
    double target = crossing(s, top_x, top_y + granule, steepest);
    double largest = top_x;
    if (s->lo >= 0 && (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo) > largest)
        largest = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo);
    double widest = WIDEN_AT_MOST * largest;
    int rose = n >= 2 && top_y > y[n - 2];
    /* No point below the top bounds the slope (quiet points at one level):
     * the memory did not grow over them at all. Taking all of it as
     * growing with the batch then only doubled the size each trial where
     * the fixed part was half the threshold (22 trials over a pool's flat
     * run); the full factor overshot a pool's edge five sizes away. Widen
     * by the geometric middle of the two factors. */
    /* Unless the top did grow from the point before it by at least half
     * what all of it growing would make: points close together (a first
     * guess of 850, then 896, 11 MiB higher under 12 MiB of declared
     * noise) bound the slope by nothing, yet their rise says the memory
     * grows with the batch, and widening sent a program whose answer is
     * 948 to 2538, then three more out of memory. */
    int grows_with_all = rose && top_y - y[n - 2] >= 0.5 * all_grows * (top_x - x[n - 2]);
    if (n >= 2 && steepest == all_grows && target > 0.0 && target < widest && !grows_with_all)
        target = largest * sqrt(target / largest * WIDEN_AT_MOST);
    if (target > widest && !(prior_bounds && rose)) {
        double all = crossing(s, top_x, top_y + granule, all_grows);
        target = all > widest ? all : widest;
    }
    /* The first two points rising by less than the declared noise, yet by
     * more than a tenth of it (a slope the readings show but cannot
     * resolve): the bound from two draws of that noise (12 MiB a sample
     * from batch 1 to 2, under 27 MiB of noise) put the next size a size
     * or two above the top, and the search crept for six trials. Their own
     * line is the likelier one: the next size goes at least where it
     * crosses the aim, and no further than WIDEN_AT_LEAST times the top
     * (a fixed fourfold sent a program whose answer is 3, 100 MiB and 12
     * MiB a sample under 152 MiB, to 8, out of memory). Only the first
     * pair: further up, a rise of that size over a noisy pool's flat run
     * is the noise, and widening fourfold from it ran the search into four
     * out-of-memory trials past the pool's edge. */
    if (prior_bounds && n == 2 && rose && top_y - y[0] > 0.1 * noise) {
        double own = crossing(s, top_x, top_y, (top_y - y[0]) / (top_x - x[0]));
        if (own > WIDEN_AT_LEAST * largest)
            own = WIDEN_AT_LEAST * largest;
        if (target < own)
            target = own;
    }
    *next = clamp_inside(s, index_floor_of(s, target));
    return 0;
}

/* A remembered curve (the cache's fit of the same command, from points an
 * earlier probe spread over the sizes it ran) that every reading of this
 * probe agrees with is the same program under another budget: its slope
 * stands, better known than readings close together near the answer can
 * tell it (under noise their secants are draws), and the readings place it
 * (the mean of what each says the intercept is), to within that mean's
 * standard error: the scatter (a uniform draw's half width) over
 * sqrt(3 n). Go where the curve so placed crosses the threshold less that
 * error. Where that is above lo by less than the error itself, lo + 1
 * passes or fails by the draw, one reading more would only move the
 * estimate by as much, and the search is settled (returns 1): a stale
 * entry of a noisy program crept up one size at a time for eleven trials.
 * Where the curve crosses at or above a rejected size whose reading lies
 * within the scatter of the threshold (a draw from the high side), go down
 * from that size by the scatter. Returns -1 where the rule does not apply:
 * no remembered curve; no size accepted yet (every reading came from over
 * the threshold, and one reading placed the curve so that three proposals
 * in a row went over it under 6% noise, where a far size below gives the
 * line a second end); a reading the curve does not explain (the program
 * changed); a remembered fit whose residual exceeds the declared band
 * (not noise: a jump the line was fitted across, so its slope is not the
 * curve's anywhere, and readings on both sides of the jump placed it 4%
 * short); quiet readings (the prior refuted) whose intercepts along the
 * remembered slope differ by more than two draws of their scatter, or of
 * the remembered fit's residual (noise the earlier probe saw): the slope
 * is refuted (a program whose per-sample memory grew a tenth, followed
 * along the old slope, crept down one size at a time for ten trials; test
 * search_model_quiet_readings_refute_a_remembered_slope); or a rejection
 * further over the threshold than the scatter (a jump the curve does not
 * know lies below it). */
static int propose_remembered(search *s, const double *x, const double *y, unsigned n,
                              double scatter, double granule, int64_t *next)
{
    double r = remembered_slope(s);
    if (!(r > 0.0) || n == 0 || s->lo < 0)
        return -1;
    double intercept = 0.0, lowest = INFINITY, highest = -INFINITY;
    for (unsigned i = 0; i < n; i++) {
        if (!batchfit__fit_explains(&s->opts->cached_fit, x[i], y[i], s->spread, NULL))
            return -1;
        double b = y[i] - r * x[i];
        intercept += b / n;
        lowest = b < lowest ? b : lowest;
        highest = b > highest ? b : highest;
    }
    double residual = s->opts->cached_fit.max_residual_bytes;
    if (residual > s->spread * y[n - 1] ||
        (s->quiet && highest - lowest > 2.0 * (scatter > residual ? scatter : residual) + granule))
        return -1;
    double error = scatter / sqrt(3.0 * n);
    double at = (s->safe_budget - error - intercept) / r;
    int64_t c = index_floor_of(s, at);
    if (s->hi < (int64_t)s->lattice.count && c >= s->hi) {
        if (!(s->hi_need > 0.0) || s->hi_need - s->safe_budget > scatter)
            return -1;
        at = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->hi) - scatter / r;
        c = index_floor_of(s, at);
    }
    s->remembered = 1;
    double lo_x = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo);
    if (at < lo_x + error / r || c <= s->lo)
        return settled(s, "the remembered curve, placed by this probe's readings, crosses the "
                          "acceptance threshold within its error of %llu: %llu passes or fails by "
                          "the draw",
                       (unsigned long long)lo_x, next_size(s));
    *next = c;
    return 0;
}

/* The scatter the residuals about a line show, as it would be at the level
 * of the threshold. Memory's wander grows with the peak (page tables, slab,
 * an allocator's caches scale with what is allocated), so a residual is
 * read as a fraction of its own point's peak; and a point far out along the
 * batch axis pulls the line through itself, so its residual understates
 * the noise by sqrt(1 - h), h its leverage: one with h near 1 says nothing.
 * And the largest of few residuals understates the wander's half-width: n
 * points about a line of two parameters leave n - 2 independent residuals,
 * and the largest of m draws uniform in [0, w] averages w m / (m + 1), so
 * the largest is taken times (n - 1) / (n - 2): twice it for three points.
 * Read as it stood, three quiet points at 1, 10 and 773 set the aim 24 MiB
 * under the threshold, and the size it placed, 7644, read some 45 MiB over
 * the line: refused, and a fifth trial found 7641 (now 7641 in four). */
static double relative_scatter(const double *x, const double *y, unsigned n,
                               const batchfit_fit *fit)
{
    if (!fit->valid || n < 3)
        return 0.0;
    double mean_x = 0.0, sxx = 0.0, top = 0.0, worst = 0.0;
    for (unsigned i = 0; i < n; i++) {
        mean_x += x[i] / n;
        if (y[i] > top)
            top = y[i];
    }
    for (unsigned i = 0; i < n; i++)
        sxx += (x[i] - mean_x) * (x[i] - mean_x);
    for (unsigned i = 0; i < n; i++) {
        double h = 1.0 / n + (x[i] - mean_x) * (x[i] - mean_x) / sxx;
        if (h > 0.9 || !(y[i] > 0.0))
            continue;
        double r = fabs(y[i] - (fit->intercept_bytes + fit->bytes_per_sample * x[i]));
        /* A point far below the top carries an absolute floor of noise too
         * (page and allocator granularity: the example trainer's batch 1
         * reads 1.24-1.50 MiB): it is read at no less than a tenth of the
         * top's level. */
        double level = y[i] > 0.1 * top ? y[i] : 0.1 * top;
        double rel = r / sqrt(1.0 - h) / level;
        if (rel > worst)
            worst = rel;
    }
    return worst * (double)(n - 1) / (double)(n - 2);
}

/* Once quiet points have refuted the prior, the scatter that sets the aim
 * and the coin-toss band is the one expected at the threshold, not where
 * the points that showed it lie. Memory's wander grows with the peak, so
 * the quiet residual, as a fraction of its points' peaks (rel), is carried
 * up to the threshold, to at most half the quiet cut there (quiet_rel, a
 * fraction too: more would not have been quiet; the full cut held the
 * example trainer a size short under load); a quiet triple of small
 * sizes put the aim a twentieth of the wander below the threshold, and the
 * crossing failed by the draw. And points within a tenth below lo, three or
 * more, show the wander at the threshold directly: their own line's largest
 * residual (the triple that refuted the prior, far below, says nothing of
 * them), up to the quiet cut there too (beyond it a jump among them, not
 * wander, is the likelier cause). Where the memory has shown steps
 * (stepped: readings that repeat across sizes the line rises over), a
 * residual beyond the cut is such a step and no reading of the wander at
 * all: taken as the cut, it made a band of a few tenths of a percent where
 * lo's own reading lay a step below the threshold, and a program whose
 * memory comes in 32 MiB chunks was answered at 2159, in its chunk's
 * first tenth, where 2293 fits (a reviewer's C program, 300 MiB). */
static double quiet_scatter_at_threshold(const search *s, const double *x, const double *y,
                                         unsigned n, double scatter, double rel, double quiet_rel,
                                         int stepped)
{
    double cut = quiet_rel * s->safe_budget;
    double carried = (rel < 0.5 * quiet_rel ? rel : 0.5 * quiet_rel) * s->safe_budget;
    if (carried > scatter)
        scatter = carried;
    if (s->lo < 0 || s->hi >= (int64_t)s->lattice.count || scatter >= cut)
        return scatter;
    double from = 0.9 * (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo);
    unsigned first = 0;
    while (first < n && x[first] < from)
        first++;
    /* A point that read what the size below it read, to within that
     * scatter, stands where memory was flat (a pool not yet outgrown): its
     * residual about the line of the points rising above it is the bend,
     * not wander (flat to 1349, then 26 MiB a sample: 1306, 1369 and 1404
     * put the band 300 MiB wide, and the search stopped at 1404 where 1424
     * fits). */
    while (first > 0 && first < n && y[first] - y[first - 1] <= scatter)
        first++;
    if (n - first >= 3) {
        batchfit_fit near;
        batchfit__fit_line(x + first, y + first, n - first, &near);
        if (near.valid && near.max_residual_bytes > scatter &&
            (!stepped || near.max_residual_bytes < cut))
            scatter = near.max_residual_bytes < cut ? near.max_residual_bytes : cut;
    }
    return scatter;
}

/* The scatter the measurements show for certain: the largest disagreement
 * of two runs of one size, and the largest fall from a smaller size to a
 * larger one (peaks grow with the batch, so a fall is noise). Residuals
 * about a line are not used: a workspace jump between the points makes them
 * large on a program that has no scatter at all. */
static double shown_scatter(const double *y, const double *low, unsigned n)
{
    double shown = 0.0;
    for (unsigned i = 0; i < n; i++) {
        if (y[i] - low[i] > shown)
            shown = y[i] - low[i];
        for (unsigned j = i + 1; j < n; j++)
            if (y[i] - low[j] > shown)
                shown = y[i] - low[j];
    }
    return shown;
}

/* A workspace jump moves the curve up, not its slope: two pairs of
 * neighbouring points with a jump between them still rise at the same
 * rate. The top pair (the two points nearest the boundary, whose noise
 * matters) and each disjoint pair below it, fitted with one slope and an
 * intercept each: the largest residual of the quietest such fit is a
 * scatter reading like a triple's, which a jump between the pairs does not
 * inflate (infinite with fewer than four points). */
static double parallel_pairs_residual(const double *x, const double *y, unsigned n)
{
    double best = INFINITY;
    if (n < 4)
        return best;
    unsigned j = n - 2;
    double db = x[j + 1] - x[j], sb = (y[j + 1] - y[j]) / db;
    for (unsigned i = 0; i + 1 < j; i++) {
        double da = x[i + 1] - x[i], sa = (y[i + 1] - y[i]) / da;
        /* The least-squares common slope weighs each pair by its span squared. */
        double common = (sa * da * da + sb * db * db) / (da * da + db * db);
        double ra = 0.5 * fabs(sa - common) * da, rb = 0.5 * fabs(sb - common) * db;
        double worst = ra > rb ? ra : rb;
        if (worst < best)
            best = worst;
    }
    return best;
}

/* Points above lo (peaks that finished over the threshold) place lo + 1
 * on the line through them only when no jump lies between lo and them:
 * the first of them must lie on the line of lo and a point below it, to
 * within what rounding and the noise of the points allow (a step of the
 * line's slope error for each of its own spans). With lo the top point,
 * or the only point up to lo, there is nothing to contradict. */
static int continues_past_lo(const double *x, const double *y, unsigned n, double lo_x,
                             double resolvable)
{
    unsigned il = index_of(x, n, lo_x);
    if (il == n || il == 0 || il + 1 >= n)
        return 1;
    /* The line's base reaches at least as far below lo as the point above
     * it lies above: from a pair a few sizes apart the allowance grows with
     * the ratio of the spans, and a 60 MiB jump 24 sizes above a pair 3
     * apart passed as noise. */
    double above = x[il + 1] - x[il];
    unsigned j = il - 1;
    while (j > 0 && x[il] - x[j] < above)
        j--;
    double below = x[il] - x[j];
    double line = y[il] + (y[il] - y[j]) / below * above;
    return fabs(y[il + 1] - line) <= resolvable * (1.0 + above / below);
}

/* The top three points' own slope where they lie on their line within
 * quiet_below (the quiet cut; 0: not quiet), else 0. */
static double quiet_top3_slope(const double *x, const double *y, unsigned n, double quiet_below)
{
    if (!(quiet_below > 0.0) || n < 3)
        return 0.0;
    batchfit_fit top3;
    batchfit__fit_line(x + n - 3, y + n - 3, 3, &top3);
    return top3.valid && top3.max_residual_bytes < quiet_below ? top3.bytes_per_sample : 0.0;
}

/* The slope to carry from lo's own reading to lo + 1 (top3 as
 * quiet_top3_slope gives it). With lo the top point and the top three
 * quiet on their own but rising more slowly than the fit, a jump below
 * them steepened the fit (a workspace at batch 2 made a line of 8.6 GiB a
 * sample read 9.7, put batch 5 over the threshold by 0.6% and stopped the
 * search at 4, where 5 fits): their own slope. */
static double slope_from_lo(double top3, double lo_x, double top_x, double slope)
{
    return lo_x == top_x && top3 > 0.0 && top3 < slope ? top3 : slope;
}

/* The line's value at next_x, the size after lo, for the rules that stop
 * on it. A bend below the points (memory flat, then rising) makes the
 * least-squares slope too flat, and taken back from a rejected point above
 * lo it put lo + 1 over the threshold seven sizes early. So where quiet
 * points have refuted the prior and the top three points are quiet on
 * their own (a residual under quiet_below; 0: not quiet) but rise faster
 * than the fit, their slope from lo's own reading counts too, and the
 * lower value is taken. Only the top three: any quiet triple would make
 * every noisy program whose prior was refuted by chance run on. With lo
 * the top point, a flatter quiet top three carry lo's reading instead
 * (slope_from_lo). */
static double line_at_next(const double *x, const double *y, unsigned n, double lo_x,
                           double next_x, double top_x, double top_y, double slope,
                           double quiet_below)
{
    double at = top_y + slope * (next_x - top_x);
    unsigned il = index_of(x, n, lo_x);
    if (il >= n)
        return at;
    double top3 = quiet_top3_slope(x, y, n, quiet_below);
    if (lo_x < top_x && top3 > slope) {
        double local = y[il] + top3 * (next_x - lo_x);
        if (local < at)
            at = local;
    }
    /* Quiet points past a bend (the chord into lo rises past the quiet cut
     * and more than twice as fast as the points below it: memory flat
     * below, growing above): the chord from lo to the point just above it,
     * where the top three straddle the bend and are not quiet on their
     * own. On a convex curve it lies above the curve (flat 150.5 MiB up to
     * 150, then 0.8 MiB a sample: the fit's 0.12 MiB a sample taken back
     * from 192 put 170 at 181 MiB, over the threshold of 171.9 by nine
     * sizes' worth, and the search stopped at 169, or at 161 after 108,
     * where 176 fits). Not otherwise: across a workspace jump above lo the
     * chord spreads the jump over the sizes before it. */
    if (quiet_below > 0.0 && lo_x < top_x && il >= 2 && il + 1 < n &&
        y[il] - y[il - 1] > quiet_below) {
        batchfit_fit under;
        batchfit__fit_line(x, y, il, &under);
        double under_slope = under.valid && under.bytes_per_sample > 0.0 ? under.bytes_per_sample : 0.0;
        double chord = (y[il + 1] - y[il]) / (x[il + 1] - x[il]);
        double local = y[il] + chord * (next_x - lo_x);
        if ((y[il] - y[il - 1]) / (x[il] - x[il - 1]) > 2.0 * under_slope && chord > slope &&
            local < at)
            at = local;
    }
    double carried = slope_from_lo(top3, lo_x, top_x, slope);
    if (carried < slope)
        at = y[il] + carried * (next_x - lo_x);
    return at;
}

/* Whether the reading at batch is only where a stopped trial got to: out
 * of memory, not measured to the end, at no more than the budget and the
 * little a watchdog's sampling lets a program overshoot it (2%). Such a
 * reading is a lower bound that says nothing about the slope. */
static int stopped_at_budget(const search *s, double batch)
{
    for (size_t t = 0; t < s->result->trial_count; t++) {
        const batchfit_trial *tr = &s->result->trials[t];
        if ((double)tr->batch == batch && tr->peak_known &&
            (measured_to_the_end(tr) || (double)tr->peak_bytes > 1.02 * s->budget))
            return 0;
    }
    return 1;
}

static unsigned collect_failures(const search *s, double *x, double *y)
{
    return collect(s, READ_FAILURES, x, y, NULL);
}

/* Memory that bends upward across the bracket: the three accepted points
 * up to lo steepen (by a tenth at least, and by more than the noise of
 * their readings can make: a pool's flat run ending, a B x B term) and
 * hi read more than the line through the two up to lo puts there (by
 * more than twice the noise). On such a curve a line from lo along its
 * local slope crosses the threshold past the crossing, and the chord from
 * lo to hi crosses it before: the chord's crossing fits. Where the parabola
 * through the three points foretold hi's reading (to a tenth of the rise
 * from lo, and the noise), the parabola through the two up to lo and hi
 * places the crossing, no lower than the chord's. Three points on a line
 * (a workspace jump between lo and hi, whose place no curve can tell) do
 * not steepen. Returns the batch (not floored onto the lattice), NAN where
 * the readings do not bend upward. */
static double bends_up(const double *x, const double *y, int il, double xh, double yh, double T,
                       double noise)
{
    if (il < 2)
        return NAN;
    double x1 = x[il - 2], x2 = x[il - 1], x3 = x[il];
    double y1 = y[il - 2], y2 = y[il - 1], y3 = y[il];
    double s1 = (y2 - y1) / (x2 - x1), s2 = (y3 - y2) / (x3 - x2), s3 = (yh - y3) / (xh - x3);
    if (!(s2 - s1 > 2.0 * noise * (1.0 / (x2 - x1) + 1.0 / (x3 - x2))) || !(s2 > 1.1 * s1) ||
        !(y3 - y2 > noise) || !(yh - (y3 + s2 * (xh - x3)) > 2.0 * noise) || !(T > y3))
        return NAN;
    double room = T - y3, at = x3 + room / s3;
    double a = (s2 - s1) / (x3 - x1);
    double foretold = y3 + (xh - x3) * (s2 + a * (xh - x2));
    if (!(fabs(foretold - yh) <= 0.1 * (yh - y3) + noise))
        return at;
    double b = (s3 - s2) / (xh - x2), d = s2 + b * (x3 - x2);
    double u = 2.0 * room / (d + sqrt(d * d + 4.0 * b * room));
    return x3 + u > at ? x3 + u : at;
}

/* Inside a bracket whose ends both gave a reading: lo's peak (accepted) and
 * hi's (a peak over the threshold, or what an out-of-memory trial needed at
 * least). The threshold is crossed between them. The local slope is the
 * flattest of the secants of the readings nearest the crossing: across the
 * bracket, the two accepted sizes below it, the two rejected sizes above it
 * (each only where its rise stands above a granule and the shown scatter).
 * A workspace jump inside a pair only makes its secant steeper, so the
 * flattest is the curve's own where any pair holds no jump. The estimate
 * is taken along it from the end whose reading is nearer the threshold
 * (fewer jumps can lie between): on a line that finds the crossing in two
 * trials, the size there and its neighbour. Returns 1 when what is left of
 * the bracket rises by less than the shown scatter along the secant across
 * it (those sizes pass or fail by the draw; running them would only pick
 * one draw; along the flattest local slope, a flat run's wander below lo
 * stopped a search at 130 where 176 fits, 192 having read 33.5 MiB more),
 * or, under a
 * declared spread, when the local slope puts lo + 1 over the threshold by
 * more than the noise lo's reading may hide. */
static int propose_bracket(search *s, const double *x, const double *y, unsigned n,
                           double shown, double granule, double band, int64_t *next)
{
    double xl = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo);
    double xh = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->hi);
    double xm = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->hi - 1);
    double T = s->safe_budget;
    unsigned at = index_of(x, n, xl);
    int il = at < n ? (int)at : -1;
    double yh = s->hi_need;
    double yl = il >= 0 ? y[il] : 0.0;
    double resolvable = granule + shown;
    /* The slope of the two points up to lo, where their rise stands above
     * a granule and the shown scatter; 0 where it does not. */
    double below = il > 0 && yl - y[il - 1] > resolvable ? (yl - y[il - 1]) / (xl - x[il - 1]) : 0.0;
    if (il >= 0 && s->hi_stopped) {
        /* hi was stopped where it crossed the budget (a watchdog, a memory
         * limit): its reading says where it was stopped, not what it
         * needed, so the secant to it only bounds the slope from below,
         * and the estimate along it came down from hi a tenth at a time
         * (a pool's edge overshot tenfold: nine trials out of memory).
         * Go along the slope of the two points up to lo where they show
         * one, else to the bracket's middle: geometric where it spans more
         * than a factor of four (the crossing is as likely at a tenth of hi
         * as at half). */
        int64_t i = -1;
        /* Where the two points up to lo read alike (lo on one step of a
         * staircase, the point below on the same step), the nearest point
         * below that lo rises above by more than that: the geometric
         * middle under a stopped 944 ran 600, 428, 342 and 299 out of
         * memory above 256, 266 reading the next step (a program
         * allocating 16 samples at a time). */
        double along = below;
        for (unsigned k = (unsigned)il; !(along > 0.0) && k-- > 0;)
            if (yl - y[k] > resolvable)
                along = (yl - y[k]) / (xl - x[k]);
        /* lo the only reading up to it: on a line with an intercept of at
         * least the baseline (0 without one), the slope is at most all
         * that lo holds above it, taken as growing with the batch, so the
         * crossing lies no nearer than where that steepest line crosses
         * T. A first guess twice its answer, then half of it 0.6% under
         * T: the bracket's middle (255, 212, 191) ran out of memory three
         * times before 171, the size that steepest line gives. So too
         * where the reading before lo rose to it by at least half what
         * that line makes (a rise the band hides, yet memory that grows:
         * 5552, then 5754 1% under T, and the middle ran 8429 and 7091 out
         * of memory); not after a flatter pair (a pool's flat run, where
         * the steepest line would creep a tenth a trial and the geometric
         * middle crosses it: taken there too, twice a search, it cost the
         * shaped family's pools and staircases up to three trials). Under a
         * declared spread only: without one (a GPU's exact readings) the
         * middle stands. */
        if (!(along > 0.0) && s->spread > 0.0) {
            double base = s->result->baseline_known ? (double)s->result->baseline_bytes : 0.0;
            double steepest = yl > base ? (yl - base) / xl : 0.0;
            if (il == 0 || yl - y[il - 1] >= 0.5 * steepest * (xl - x[il - 1]))
                along = steepest;
        }
        if (along > 0.0) {
            i = index_floor_of(s, xl + (T - yl) / along);
            /* Not past where the points' curvature takes them over. */
            if (s->spread > 0.0)
                i = cap_at(s, i, convex_cap(s, x, y, n, at, resolvable + band));
            /* It puts lo + 1 over: run that, it closes the bracket. */
            if (i <= s->lo)
                i = s->lo + 1;
        }
        if (!(i > s->lo && i < s->hi))
            i = geometric_middle(s, xl);
        *next = clamp_inside(s, i);
        return 0;
    }
    if (il < 0 || !(yh > yl) || !(xh > xl)) {
        *next = propose_bisect(s);
        return 0;
    }
    double secant = (yh - yl) / (xh - xl), flat = secant;
    if (below > 0.0 && below < flat)
        flat = below;
    double fx[MAX_POINTS], fy[MAX_POINTS];
    unsigned m = collect_failures(s, fx, fy);
    int plateau = 0;
    double evident = 4.0 * (resolvable + band), failures = 0.0;
    for (unsigned k = 0; k < m; k++)
        if (fx[k] > xh) {
            if (!stopped_at_budget(s, fx[k])) {
                if (fy[k] - yh > resolvable) {
                    double above = (fy[k] - yh) / (fx[k] - xh);
                    failures = above;
                    if (above < flat)
                        flat = above;
                } else if (secant * (fx[k] - xh) > evident) {
                    plateau = 1;
                }
            }
            break;
        }
    /* Or below lo: the point under it read what lo read (lo stands on a
     * flat run, the crossing is its upper edge), and the secant puts the
     * crossing in the bracket's lowest eighth, a creep from lo (where it
     * reaches further, memory flat up to a pool's edge and then growing
     * finds its crossing along the secant in fewer trials than by
     * bisection). Either only where the secant across the bracket puts the
     * two readings apart by four times what rounding and the noise can
     * hide: two points a size apart on a gentle line read alike too, and
     * two over the threshold near a coin toss (28447 and 28450 on a line of
     * 2 MiB a sample under a 0.3% wander) fall as often as they rise. */
    if (il > 0 && yl - y[il - 1] <= resolvable && secant * (xl - x[il - 1]) > evident &&
        (T - yl) / secant < 0.125 * (xh - xl))
        plateau = 1;
    /* Where lo stands on a flat run (the point below it read the same) and
     * two failures above hi read what they needed, their secant is the
     * curve past the run's edge (a pool's, where per-sample memory
     * starts): down along it from hi. The flattest slope there is the
     * secant from lo, across the edge, and it came down 20 sizes short
     * (334, then 386, 360 out of memory, 352, 356: 14 trials for 356, 17.35
     * GiB flat to 300 and 59 MiB a sample; test
     * search_model_a_pools_edge_from_two_failures_needs). -1: none. */
    int flat_at_lo = il > 0 && yl - y[il - 1] <= resolvable;
    int64_t edge = flat_at_lo && failures > 0.0 ? index_floor_of(s, xh - (yh - T) / failures) : -1;
    if (shown > 0.0 && secant * (xm - xl) < shown)
        return settled(s, "what is left of the bracket, %llu to %llu, rises by less than the "
                          "scatter the readings show: those sizes pass or fail by the draw",
                       next_size(s), (unsigned long long)xm);
    if (plateau) {
        /* The rejected size above hi read what hi read, to within the
         * scatter: hi stands on a flat run (a pool or an allocator's block
         * that doubles, memory allocated in chunks of samples), and the
         * crossing is that run's lower edge, somewhere below hi; or lo
         * does, and the crossing is its upper edge. The secant across the
         * bracket is then a jump's, not the curve's: coming down from hi
         * along it placed the next size on the same run again (200, 179,
         * 157, 113 under a pool of 2^k MiB blocks), going up from lo along
         * it crept 769, 770, 772, 776, and its certificate stopped the
         * search at 807 where 819 fits. Go along the slope up to lo where
         * the points show one, else bisect. */
        /* Or down the failures' secant from hi (edge, above): bisection
         * from lo at 192 under failures at 7536 (446 GiB) and 3864 (230
         * GiB), whose secant crosses the threshold at 324, ran three more
         * out of memory (2028, 1110, 651) before 322. */
        int64_t i = below > 0.0 ? index_floor_of(s, xl + (T - yl) / below) : edge;
        if (!(i > s->lo && i < s->hi))
            i = propose_bisect(s);
        *next = clamp_inside(s, i);
        return 0;
    }
    /* Under a declared spread: the flattest local slope puts lo + 1 over
     * the threshold by more than the noise lo's reading may hide (the
     * declared band until the data refute it) and a granule. Only where a
     * slope was read at lo, or the bracket spans no more than lo again: a
     * secant across a wide bracket is a slope at lo only on a line, and on
     * memory that grows as B^2.9 the secant from 1 to a failure at 2^20
     * put 2 over the threshold where 512 fits. */
    double xn = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo + 1);
    if (s->spread > 0.0 && (below > 0.0 || xh <= 2.0 * xl) &&
        yl + flat * (xn - xl) - granule - band > T)
        return settled(s, "the local slope predicts %llu (not run) over the acceptance threshold "
                          "by more than the noise %llu's reading may hide",
                       next_size(s), (unsigned long long)xl);
    double up = xl + (T - yl) / flat;
    double down = xh - (yh - T) / flat;
    /* Memory that bends upward, where lo's reading is nearer the
     * threshold than hi's (the nearer end says more: from hi the estimate
     * below stands): from the chord's crossing (or the parabola's), no
     * lower than the estimate down from hi (along a slope no steeper than
     * the curve's there, it lies below the crossing too) and no higher
     * than the one up from lo (above it). A reading stopped at the budget
     * is no point of the curve. Where lo crept in small steps, each step
     * at least twice the last, as below, but not past the estimate up from
     * lo: the chord approaches from below by design, and a doubled step
     * past that estimate (B^1.2 under 308 GiB: 18157, then 21189 where
     * the estimate was 18259) ran out of memory. */
    double bent = NAN;
    if (T - yl < yh - T && !stopped_at_budget(s, xh))
        bent = bends_up(x, y, il, xh, yh, T, resolvable + band);
    if (!isnan(bent)) {
        int up_inside = up > xl + 1.0 && up < xh;
        if (down > xl + 1.0 && down < xh && down > bent)
            bent = down;
        if (up_inside && up < bent)
            bent = up;
        int64_t i = index_floor_of(s, bent);
        if (i > s->lo && s->lo_streak >= 2 && i < twice_past(s, s->lo, s->lo_step)) {
            i = twice_past(s, s->lo, s->lo_step);
            if (up_inside && i > index_floor_of(s, up))
                i = index_floor_of(s, up);
        }
        if (i > s->lo && i < s->hi) {
            *next = clamp_inside(s, i);
            return 0;
        }
    }
    /* The nearer end says more (fewer jumps can lie between); an estimate
     * that falls outside the bracket is refuted by the other end's trial
     * (a jump lies between it and the crossing): take the other one. When
     * both put lo + 1 over the threshold, run it (it closes the bracket
     * where it fails). Otherwise, both refuted, the crossing sits on a jump,
     * or hi's reading is no higher than the threshold (a need the budget
     * bounded: it places nothing), and only bisection finds it. */
    int64_t iu = index_floor_of(s, up), id = index_floor_of(s, down);
    int u_ok = iu > s->lo && iu < s->hi, d_ok = id > s->lo && id < s->hi;
    int64_t i;
    if (edge > s->lo && edge < s->hi)
        i = edge;
    else if (!u_ok && !d_ok)
        i = iu <= s->lo && id <= s->lo ? s->lo + 1 : propose_bisect(s);
    else if (u_ok && (!d_ok || T - yl < yh - T))
        i = iu;
    else
        i = id;
    /* A side that keeps moving by small steps is creeping toward a crossing
     * the readings misplace: each step from it at least twice the last. */
    if (s->lo_streak >= 2 && i < twice_past(s, s->lo, s->lo_step))
        i = twice_past(s, s->lo, s->lo_step);
    if (s->hi_streak >= 2 && i > s->hi - 2 * s->hi_step)
        i = s->hi - 2 * s->hi_step;
    /* A doubled step that would leave the bracket is bisection's to take
     * (clamped, it would creep from the other end one size at a time). */
    if (i <= s->lo || i >= s->hi)
        i = propose_bisect(s);
    *next = clamp_inside(s, i);
    return 0;
}

/* A smooth bend: the top SMOOTH_POINTS points lie on a curve a + b B^p
 * (p from 0.3 to 3, B in units of the top point) to within the quiet cut,
 * where their line leaves ten times that residual. Memory that grows as
 * B^0.5-0.85 (activations a framework shares between samples) or with a
 * B x B term (a contrastive loss's similarity matrix) bends that way on a
 * program with no scatter at all. Read as scatter about a line, the bend
 * kept the declared prior standing, and proposals two of its standard
 * errors short crept up a few percent a trial (1, 3, 20, 45, 58, 60, 70,
 * 90, 75: nine trials). Five points, not four: a curve of three
 * parameters fits four draws of noise within the cut by chance (a
 * replayed PyTorch run's 3, 27, 47 and 61 lay within 1.5 MiB of one), and
 * the search that trusted it ran eleven trials. Returns the residual (0:
 * no bend) and the curve in *b. */
#define SMOOTH_POINTS 5

typedef struct bend {
    double a, b, p, unit; /* a + b (B / unit)^p */
} bend;

/* The least-squares curve a + b (B / unit)^p through m points, p over the
 * grid; its largest residual (INFINITY where none rises). */
static double fit_bend(const double *x, const double *y, unsigned m, double unit, bend *out)
{
    double best = INFINITY;
    for (unsigned k = 0; k <= 270; k++) {
        double p = 0.3 + 0.01 * k, z[SMOOTH_POINTS];
        for (unsigned i = 0; i < m; i++)
            z[i] = pow(x[i] / unit, p);
        batchfit_fit f;
        batchfit__fit_line(z, y, m, &f);
        if (f.valid && f.bytes_per_sample > 0.0 && f.max_residual_bytes < best) {
            best = f.max_residual_bytes;
            *out = (bend){f.intercept_bytes, f.bytes_per_sample, p, unit};
        }
    }
    return best;
}

static double bend_at(const bend *b, double batch)
{
    return b->a + b->b * pow(batch / b->unit, b->p);
}

static double smooth_bend(const double *px, const double *py, unsigned n, double granule,
                          double quiet_below, bend *out)
{
    if (n < SMOOTH_POINTS)
        return 0.0;
    const double *x = px + n - SMOOTH_POINTS, *y = py + n - SMOOTH_POINTS;
    /* Every step between them rises by more than the quiet cut: a curve
     * through four points of a flat run and one past its end fits any
     * bend at all (a pool's edge, flat to 300 and 44 GiB at 384, read as
     * B^3, and the search stopped at 48). */
    for (unsigned i = 0; i + 1 < SMOOTH_POINTS; i++)
        if (!(y[i + 1] - y[i] > quiet_below))
            return 0.0;
    double unit = x[SMOOTH_POINTS - 1];
    batchfit_fit line;
    batchfit__fit_line(x, y, SMOOTH_POINTS, &line);
    bend found = {0.0, 0.0, 1.0, unit}, lower = found;
    double best = fit_bend(x, y, SMOOTH_POINTS, unit, &found);
    /* Within the quiet cut of the curve, and the line ten times as far
     * off (and past a quarter of the cut, and the pages a reading wanders
     * by): chunked memory (steps of 64 samples) lay within 108 MiB of a
     * curve and 528 MiB of its line, and the curve crept up its flat runs
     * a size at a time. */
    double floor = granule > PAGE_WANDER ? granule : PAGE_WANDER;
    if (!line.valid || isinf(best) || best > quiet_below ||
        line.max_residual_bytes <= 10.0 * best ||
        line.max_residual_bytes <= fmax(floor, 0.25 * quiet_below))
        return 0.0;
    /* And the curve through the lower four foretells the top one within
     * the cut: noise of 1-3% lies on some such curve by chance now and
     * then, and a curve that only fits what it was fitted to sent a
     * staircase's search to 2558, 35% over the threshold. */
    if (isinf(fit_bend(x, y, SMOOTH_POINTS - 1, unit, &lower)) ||
        !(fabs(bend_at(&lower, x[SMOOTH_POINTS - 1]) - y[SMOOTH_POINTS - 1]) <= quiet_below))
        return 0.0;
    *out = found;
    /* The residual read as the scatter is at least the larger of a
     * granule and a quarter of the pages a reading wanders by: at the whole wander, a
     * curve rising 12 KiB a sample at the threshold (10 MiB + 2 MiB x
     * B^0.5 under 190 MiB) had a band 80 sizes wide, and the search
     * stopped 1.0-1.3% short. */
    double least = fmax(granule, 0.25 * PAGE_WANDER);
    return best > least ? best : least;
}

/* The bend's slope at batch, and where it reaches level (INFINITY where it
 * does not above from). */
static double bend_slope(const bend *b, double batch)
{
    return b->b * b->p / b->unit * pow(batch / b->unit, b->p - 1.0);
}

static double bend_crossing(const bend *b, double level, double from)
{
    double above = level - b->a;
    if (!(above > 0.0))
        return INFINITY;
    double at = b->unit * pow(above / b->b, 1.0 / b->p);
    return at > from ? at : INFINITY;
}

/* What the model reads from its points (see propose_model): the line
 * nearest the boundary, the scatter the measurements show, what a rise
 * must exceed to be evidence, and where lo and the next size lie. */
typedef struct view {
    double x[MAX_POINTS], y[MAX_POINTS], low[MAX_POINTS];
    unsigned n;              /* the points, sorted by batch */
    unsigned use;            /* how many of the largest are fitted */
    double top_x, top_y;     /* the largest point */
    double granule;          /* the allocation granule the peaks share */
    batchfit_fit fit;        /* the line through the fitted points */
    double declared;         /* the declared band at the top: 2 spread top_y */
    double quiet_below;      /* a scatter under this refutes the declared prior */
    int scatter_known;       /* the measurements show a scatter of their own */
    int quiet;               /* and it refuted the prior */
    double scatter;          /* how far a draw strays: the aim and the coin-toss band */
    double noise;            /* how far two readings may differ */
    double top3_quiet;       /* line_at_next's quiet cut (0 unless quiet) */
    int collinear;           /* one line explains the fitted points */
    int certifiable;         /* to within 0.5% of the peak, for certificates */
    double slope;            /* the line's slope, else the top secant */
    double resolvable;       /* a rise beyond this is evidence of a slope */
    double lo_x, next_x;     /* lo's batch size and the next size's */
    unsigned il;             /* lo's index among the points (n: none) */
    double tolerance;        /* rounding and scatter allowed a certificate */
    int line_reaches_lo;     /* no jump lies between lo and the points above it */
    double bent;             /* a smooth bend's residual (0: none; see smooth_bend) */
    bend curve;              /* and the bend */
    int stepped;             /* readings that repeat, of memory that grows in steps */
} view;

/* What the model's stop reasons call what they read. */
static const char *model_name(const view *v)
{
    return v->bent > 0.0 ? "curve a + b B^p" : "line";
}

/* The model's reading at the size after lo: along a smooth bend the
 * curve's, else the line's (line_at_next). A line anchored at a top point
 * above lo, with the bend's slope at lo, would carry the whole bend
 * between them back to lo + 1. */
static double model_at_next(const view *v)
{
    if (v->bent > 0.0)
        return bend_at(&v->curve, v->next_x);
    return line_at_next(v->x, v->y, v->n, v->lo_x, v->next_x, v->top_x, v->top_y, v->slope,
                        v->top3_quiet);
}

/* Whether two sizes or more of the first m points (those up to lo) read
 * alike, to within flat, where the line through the m rises by four times
 * that across them: memory that grows in steps (per-sample memory allocated
 * a chunk of samples at a time, a pool not yet outgrown) on a program whose
 * readings repeat. Noise of the declared size leaves two readings that
 * close now and then (three next to never); a quiet program's wander, a few
 * tenths of a percent, now and then, so it is a guard against a coin toss
 * and no more (a chance pair costs trials, never the answer): taken as the
 * scatter too, the run's spread set the aim on the threshold, and a search
 * walked down inside one step (22 trials where 6 had stopped 30 sizes
 * short) and chased a pool's 0.3% wander (a reviewer's harness: 5% more
 * trials, the same answers). Two suffice: on memory in 16 MiB chunks the
 * first chunk often holds only the first two sizes run (1 and 5), and with
 * three required a line across the chunks above lo made a coin toss of a
 * size 3-5% short of the answer (2180-2223 where 2293 fits). */
static int steps_shown(const double *x, const double *y, unsigned m, double flat)
{
    batchfit_fit fit;
    batchfit__fit_line(x, y, m, &fit);
    if (m < 3 || !fit.valid || !(fit.bytes_per_sample > 0.0))
        return 0;
    for (unsigned k = 0; k + 2 < m; k++) {
        unsigned j = k + 1;
        while (j < m && fabs(y[j] - y[k]) <= flat)
            j++;
        if (j - k >= 2 && fit.bytes_per_sample * (x[j - 1] - x[k]) > 4.0 * flat)
            return 1;
    }
    return 0;
}

/* Reads the collected points into *v and sets the aim (and s->quiet). */
static void read_points(search *s, view *v)
{
    const double *x = v->x, *y = v->y, *low = v->low;
    unsigned n = v->n;
    double top_x = x[n - 1], top_y = y[n - 1];
    double granule = granule_of(y, n);
    double repeat = 0.0;
    for (unsigned i = 0; i < n; i++)
        if (y[i] - low[i] > repeat)
            repeat = y[i] - low[i];

    /* The points nearest the boundary: the largest three batch sizes. Under
     * noise every point counts: single draws near the boundary say little
     * about the slope, the whole range says much. */
    unsigned use = n < 3 || s->spread > 0.0 ? n : 3;
    const double *fx = x + (n - use), *fy = y + (n - use);
    batchfit_fit fit;
    batchfit__fit_line(fx, fy, use, &fit);
    /* The scatter the measurements show: residuals about the line (three
     * points or more) and re-runs of one size. */
    int scatter_known = use >= 3 || repeat > 0.0;
    double measured = use >= 3 && fit.max_residual_bytes > repeat ? fit.max_residual_bytes : repeat;
    double declared = 2.0 * s->spread * top_y;
    /* With two points, a failure above them that said what it needed is a
     * third reading of the same curve (a lower bound, as it stopped at the
     * allocation that failed): how far it lies from their line is the
     * scatter. Only a reading the line explains within the declared band
     * (two draws, each straying up to half of it) counts; one far above it
     * crossed a workspace jump, which says nothing about the noise. A
     * trial the watchdog stopped (or the kernel killed) read where it was
     * stopped, about the budget, not what it needed: 14 MiB under the line
     * of two fitting points, that reading was taken for scatter and the
     * search stopped at 149 where 165 fit. */
    if (use == 2 && s->spread > 0.0 && s->hi < (int64_t)s->lattice.count && !s->hi_stopped &&
        s->hi_need > top_y) {
        double fail_x = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->hi);
        double line = top_y + (fy[1] - fy[0]) / (fx[1] - fx[0]) * (fail_x - top_x);
        double off = fabs(s->hi_need - line);
        if (fail_x > top_x && off <= declared + granule) {
            scatter_known = 1;
            if (off > measured)
                measured = off;
        }
    }
    /* The declared spread is the prior for that scatter (half its band is
     * how far a draw typically strays), and it stands until the data refute
     * it: a scatter under a tenth of it. Noise of the declared size leaves
     * three points that close to their line in about one case in six, four
     * points in about one in forty; a deterministic program (the kernel's
     * accounting wander, a few tenths of a percent) does so every time.
     * Where the data show more scatter than declared, they win: re-runs and
     * falls, and residuals as far as those prove (see below). */
    double prior = 0.5 * declared, quiet_below = 0.1 * prior;
    int quiet = scatter_known && measured < quiet_below;
    s->quiet = 0;
    double rel = 0.0;
    if (quiet && use >= 3)
        rel = relative_scatter(fx, fy, use, &fit);
    /* A workspace jump between the points makes their residuals large on a
     * program with no scatter at all; three neighbouring points with no jump
     * between them still show the scatter, and so do two pairs of
     * neighbours with the jump between the pairs (they rise at one rate).
     * The quietest such triple or pair of pairs (with the shown scatter:
     * re-runs and falls) refutes the prior as well. The price: the more
     * points, the likelier one of them is quiet by chance (uniform noise of
     * the prior's size: about one in three with four points, one in two
     * with six), and such a program is then searched as a deterministic
     * one; acceptance still holds every answer to the threshold. */
    if (!quiet && s->spread > 0.0 && n >= 3) {
        double best = INFINITY, best_rel = 0.0;
        for (unsigned i = 0; i + 2 < n; i++) {
            batchfit_fit local;
            batchfit__fit_line(x + i, y + i, 3, &local);
            if (local.valid && local.max_residual_bytes < best) {
                best = local.max_residual_bytes;
                best_rel = relative_scatter(x + i, y + i, 3, &local);
            }
        }
        /* Held to a third of a triple's threshold: under noise of the
         * prior's size one pair of pairs is that quiet about one time in
         * ten, a triple at its own about one in six. */
        double pairs = 3.0 * parallel_pairs_residual(x, y, n);
        if (pairs < best) {
            best = pairs;
            best_rel = pairs / top_y;
        }
        double shown = shown_scatter(y, low, n);
        if (shown > best)
            best = shown;
        if (best < quiet_below) {
            quiet = 1;
            scatter_known = 1;
            measured = best;
            rel = best_rel;
        }
    }
    /* Residuals about one line are scatter only as far as the points show
     * it for certain (re-runs, falls): a bend (memory flat, then rising)
     * leaves large residuals on a program with none, and read as scatter
     * they widened the coin-toss band until the search stopped 8% short. */
    if (!quiet && s->spread > 0.0 && use >= 3) {
        double shown = shown_scatter(y, low, n);
        double certain = shown > prior ? shown : prior;
        if (measured > certain)
            measured = certain;
    }
    double scatter = quiet ? measured : (measured > prior ? measured : prior);
    s->quiet = quiet;
    double lo_x = s->lo >= 0 ? (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo) : 0;
    unsigned il = index_of(x, n, lo_x), up_to_lo = 0;
    while (up_to_lo < n && x[up_to_lo] <= lo_x)
        up_to_lo++;
    /* Sizes that read alike to within a tenth of the quiet cut where the
     * line rises across them: memory that grows in steps, on a program
     * whose readings repeat (see settle_at_lo). */
    int stepped = quiet && s->spread > 0.0 &&
                  steps_shown(x, y, up_to_lo, 0.1 * quiet_below + granule);
    if (quiet) {
        if (rel < measured / top_y)
            rel = measured / top_y;
        scatter = quiet_scatter_at_threshold(s, x, y, n, scatter, rel, quiet_below / top_y, stepped);
    }
    /* For line_at_next: the top three points count once the prior is refuted. */
    double top3_quiet = quiet ? quiet_below : 0.0;
    double noise = s->spread > 0.0 ? (quiet ? measured : (2.0 * measured > declared ? 2.0 * measured : declared)) : 0.0;
    /* A line explains the points when they stray from it by no more than
     * rounding and the noise they were declared to carry. */
    int collinear = use >= 3 && fit.max_residual_bytes <= 2.0 * granule + declared;
    /* Real measurements wander a little even with no spread declared (the
     * kernel charges page tables and slab to a cgroup): for the certificate
     * below, three points within 0.5% of the peak of a line count as one. A
     * jump that small moves its one-step extrapolation by far less than the
     * residual it adds to the tolerance. */
    int certifiable = use >= 3 && fit.max_residual_bytes <= 2.0 * granule + declared + 0.005 * top_y;
    /* Not a single line: extrapolate from the secant of the two points
     * nearest the boundary. */
    double slope = 0.0;
    if (n >= 2)
        slope = collinear ? fit.bytes_per_sample
                          : (fy[use - 1] - fy[use - 2]) / (fx[use - 1] - fx[use - 2]);
    /* A rise between two points is evidence of a slope only beyond what
     * rounding and the noise of both could make. */
    double resolvable = noise + granule;
    /* Under noise, two neighbours near the boundary can differ by less than
     * that, or even fall: their secant is noise. Reach down to the nearest
     * point the top one rises above by a resolvable amount. */
    if (!collinear && s->spread > 0.0 && use >= 3 &&
        fy[use - 1] - fy[use - 2] < resolvable) {
        for (unsigned k = use - 2; k-- > 0;)
            if (fy[use - 1] - fy[k] >= resolvable) {
                slope = (fy[use - 1] - fy[k]) / (fx[use - 1] - fx[k]);
                break;
            }
    }
    /* Along a smooth bend the curve is the model: its residual is the
     * points' scatter (the prior is refuted as by quiet points on a line),
     * and its slope at lo (at the top point before any size fitted)
     * carries lo to the next size. */
    bend curve = {0.0, 0.0, 1.0, 1.0};
    double bent = 0.0;
    int jump_past_bend = 0;
    if (s->spread > 0.0 && use == n) {
        /* Fitted to the points up to lo: a rejected reading above lo that
         * the curve does not explain is a workspace above it (read far
         * over the curve) or a curve that turned (read under it). */
        unsigned upto = il < n ? il + 1 : n;
        /* And through the first reading above lo where the points up to lo
         * are one short of SMOOTH_POINTS: a run refused near the threshold
         * read the same curve, and smooth_bend still asks the curve
         * through the four below it to foretell it (a workspace jump there
         * fails that). The B x B program from an estimate three times its
         * answer read 19, 85, 181 and 245 up to lo and 266 over the
         * threshold: no bend, the prior stood, and the search stopped at
         * 245 where 259 fits (test
         * search_model_a_bend_counts_the_reading_above_lo). */
        if (upto < n && upto + 1 == SMOOTH_POINTS)
            upto++;
        bent = smooth_bend(x, y, upto, granule, quiet_below, &curve);
        for (unsigned k = upto; k < n && bent > 0.0; k++) {
            double off = y[k] - bend_at(&curve, x[k]);
            if (off < -quiet_below)
                bent = 0.0;
            else if (off > quiet_below)
                jump_past_bend = 1;
        }
        /* A failure above lo where the curve puts that size under the
         * threshold: a workspace past lo as well. Proposed along the curve
         * past such a jump, the search ran seven sizes out of memory one
         * after another; the bracket is searched instead. */
        if (bent > 0.0 && s->hi < (int64_t)s->lattice.count &&
            bend_at(&curve, (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->hi)) <
                s->safe_budget)
            jump_past_bend = 1;
    }
    if (bent > 0.0) {
        quiet = 1;
        s->quiet = 1;
        scatter_known = 1;
        certifiable = 1;
        top3_quiet = 0.0;
        scatter = noise = bent;
        slope = bend_slope(&curve, s->lo >= 0 ? lo_x : top_x);
        resolvable = noise + granule;
    }
    /* Proposals aim below the threshold by the scatter the points show
     * (half the declared band while too few points show any): a size there
     * passes on most draws. Points on a line show next to none, and the aim
     * is then the threshold itself. */
    s->aim = s->safe_budget;
    if (s->spread > 0.0)
        s->aim -= scatter;

    double next_x = s->lo + 1 < (int64_t)s->lattice.count
                        ? (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo + 1)
                        : lo_x + 1.0;
    double tolerance = granule + (s->spread > 0.0 ? scatter : fit.max_residual_bytes);
    /* These hold with or without misses: after a rejection the line still
     * says where acceptance turns into a coin toss, but only where no jump
     * lies between lo and the points above it. A jump is told from noise by
     * the declared band as well: the prior is refuted by chance one time in
     * six, and a stop must not hang on that. */
    double jump_band = (declared > noise ? declared : noise) + granule;
    /* Unless five points or more up to lo lie on one line within the quiet
     * cut: noise of the declared size does that next to never, and the
     * declared band then hid a bend (memory flat to 1349, then 26 MiB a
     * sample: the line from 1561 across the flat points stopped the search
     * at 543, bisection's answer being 1424). */
    if (quiet && il < n && il + 1 >= 5) {
        batchfit_fit below;
        batchfit__fit_line(x, y, il + 1, &below);
        if (below.valid && below.max_residual_bytes < quiet_below)
            jump_band = 2.0 * scatter + granule;
    }
    int line_reaches_lo = !jump_past_bend && continues_past_lo(x, y, n, lo_x, jump_band);
    /* Nor where lo stands on a flat run under quiet points: it read what the
     * point below it read, to within twice the quiet points' own residual
     * and a granule, where the line has memory rise by four times that.
     * The sizes after lo are then likelier on that run too (memory
     * allocated 64 samples at a time: a line anchored at a rejected size on
     * the next chunk made 1575 a coin toss, 9 MiB above 1574's reading, and
     * the search stopped there where 1600 fits), and the bracket is
     * searched instead. The scatter carried to the threshold cannot tell
     * it: the steps among the points near lo inflate it. */
    if (line_reaches_lo && quiet && il > 0 && il + 1 < n && slope > 0.0) {
        double flat = 2.0 * measured + granule;
        if (y[il] - y[il - 1] <= flat && slope * (x[il] - x[il - 1]) > 4.0 * flat)
            line_reaches_lo = 0;
    }

    v->use = use;
    v->top_x = top_x;
    v->top_y = top_y;
    v->granule = granule;
    v->fit = fit;
    v->declared = declared;
    v->quiet_below = quiet_below;
    v->scatter_known = scatter_known;
    v->quiet = quiet;
    v->scatter = scatter;
    v->noise = noise;
    v->top3_quiet = top3_quiet;
    v->collinear = collinear;
    v->certifiable = certifiable;
    v->slope = slope;
    v->resolvable = resolvable;
    v->lo_x = lo_x;
    v->next_x = next_x;
    v->il = il;
    v->tolerance = tolerance;
    v->line_reaches_lo = line_reaches_lo;
    v->bent = bent;
    v->curve = curve;
    v->stepped = stepped;
}

/* Whether the search measures host memory (the trials' peaks are glibc's,
 * and the advice differs there). */
static int on_host(const batchfit_result *r)
{
    return r->device_spec && strcmp(r->device_spec, "host") == 0;
}

/* Whether the draws a program showed reach lo + 1 (shown: shown_scatter's
 * largest difference two readings showed, from re-runs and falls): lo's own
 * reading, a step along the steeper of the line's slope and the chord to
 * the reading above lo, within DRAWS_SEEN_TO_ALL such differences of the
 * threshold. Without a reading at lo nothing says otherwise. */
static int own_draws_reach(const search *s, const view *v, double chord, double shown)
{
    if (v->il >= v->n)
        return 1;
    double step = chord > v->slope ? chord : v->slope;
    double local = v->y[v->il] + step * (v->next_x - v->lo_x);
    return local >= s->safe_budget - DRAWS_SEEN_TO_ALL * shown;
}

/* settle_at_lo found lo + 1 inside the coin-toss band, where a size passes
 * or fails by the draw. Where that band reaches more than
 * TOSS_GIVES_AWAY_AT_MOST of lo above lo, a stop there gives away that much
 * of the batch for a threshold that already holds the spread back. The
 * band is the declared prior's where the points did not refute it: a
 * program that allocates its per-sample memory 64 samples at a time under a
 * budget 4 MiB over its 23 MiB of fixed memory (host 5%: a band of 70
 * sizes) stopped anywhere from 24 to 126 where 128 fit, the bracket above lo
 * never tried. Quiet points make it narrow in memory, but not in sizes
 * where a sample adds next to nothing: a PyTorch CPU job holding 310 MiB
 * of weights and 40 KiB a sample stopped at 163 where 212 fits. The middle
 * of lo and the band's top (the line's crossing of the threshold plus the
 * scatter, below hi) is run instead; its pass or failure narrows the band
 * like any trial, and the stop is taken once what is left of it is under
 * that share. Not where re-runs or falls have shown half the prior's
 * scatter: there the program's own draws make the band (on the replayed
 * PyTorch family that raised p95 and max by a trial for +0.003-0.005 of
 * ratio).
 *
 * Where the band is the declared prior's, not a scatter the points showed,
 * the share is TOSS_WORTH_A_TRIAL, once in a search: the prior is an
 * assumption, and a size inside its band says more than a draw (a C program
 * allocating its per-sample memory 16 samples at a time, 8 MiB steps that
 * keep three points off their line by more than the quiet cut, stopped at
 * 239 or 251 where bisection finds 256; now 249-256 in 5-12 trials,
 * bisection taking 20). Once, because on a noisy program (a PyTorch CPU
 * decoder, its peaks 1-3% apart between runs) every size in the band is a
 * draw, and trying it again and again ran 5-9 trials where the stop had
 * taken 4-5. On the host under its default spread (opts->peak_spread
 * unset: the 5% is the host's guess at glibc's and PyTorch's noise, no
 * one's declaration), a second time where more than PRIOR_BAND_AGAIN of lo
 * is left in the band: that size makes a triple near the threshold with lo
 * and the first, which refutes the prior where the program is quiet (a C
 * program holding 40.5 MiB and a B x B buffer of 2 KiB a sample pair,
 * under 1 GiB: 1, 21, 266 and 635 lay too far apart for a quiet triple and
 * too bent for their line, the band trial 661 was refused, and the search
 * stopped at 635 where 655 fits; now 655 in 9 trials, test
 * search_model_tries_the_default_prior_s_band_twice_on_the_host). A
 * declared spread is the user's floor, and its band stands after one.
 * Before any rejection on the host, the look above lo (see
 * propose) comes first: a size inside the band of a replayed PyTorch run
 * landed on the hump of glibc's mmap threshold and closed the bracket at
 * 52, where the look at 61 passed it and found 85. *prior says the size is
 * run for this rule's sake (the caller marks it, see band_used).
 *
 * The band is placed from lo's own reading too, along the chord to the
 * reading above lo, where that reaches further than the line: a line fitted
 * across a flat run and anchored at a rejected size far above lo carries
 * that size's reading back to lo + 1 at the flat run's slope, and no line
 * can place lo + 1 where lo's own reading, a size below it, contradicts it.
 * And the program's own draws make the band only where they reach lo + 1:
 * lo's reading, a step along the steeper of the line and that chord, lies
 * within DRAWS_SEEN_TO_ALL times the largest difference they showed of the
 * threshold (own_draws_reach).
 * A C program with a 75 MiB pool for its first 300 samples, 256 KiB a
 * sample past it and a 0-5% wander per run, under 152 MiB (threshold
 * 130.65 MiB): 193 read 117.1 MiB and 385 read 140.6 MiB, the line through
 * them and the flat run rose 0.05 MiB a sample and put 194 at 130 MiB, and
 * the search stopped at 193, 214 or 259 in five runs of eleven where
 * bisection finds 349-355 (a reviewer's program; the falls across the flat
 * run, up to 4.5 MiB, had made the band the program's own).
 *
 * -1 where the stop stands. */
static int64_t inside_wide_band(const search *s, const view *v, double predicted, int *prior)
{
    *prior = 0;
    if (!(v->slope > 0.0))
        return -1;
    double chord = 0.0;
    if (v->il + 1 < v->n)
        chord = (v->y[v->il + 1] - v->y[v->il]) / (v->x[v->il + 1] - v->lo_x);
    if (!v->quiet) {
        double shown = shown_scatter(v->y, v->low, v->n);
        if (shown >= 0.5 * v->scatter && own_draws_reach(s, v, chord, shown))
            return -1;
    }
    double top = v->next_x + (s->safe_budget + v->scatter - predicted) / v->slope;
    if (chord > 0.0) {
        double from_lo = v->lo_x + (s->safe_budget + v->scatter - v->y[v->il]) / chord;
        if (from_lo > top)
            top = from_lo;
    }
    if (s->hi < (int64_t)s->lattice.count) {
        double below_hi = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->hi - 1);
        if (top > below_hi)
            top = below_hi;
    }
    /* After steps along a smooth bend that ended (the curve turned: a
     * kink, a saturation), the points up to lo lie far apart and the line
     * through them across the turn leaves the prior's band: a band that
     * bisection's creep from below would have closed. BENT_GAP_AT_MOST of
     * lo is given away at most there: a concave curve whose slope fell by
     * 42% at 68% of the answer stopped at 6653 (5001 and 6653 along the
     * bend, 8316 refused above it) where 8253 fits. */
    double at_most = s->bend_used && !(v->bent > 0.0) ? BENT_GAP_AT_MOST : TOSS_GIVES_AWAY_AT_MOST;
    int tries = on_host(s->result) && s->opts->peak_spread < 0.0 ? 2 : 1;
    if (!v->quiet && (s->bracketed || !on_host(s->result)) && at_most > TOSS_WORTH_A_TRIAL &&
        s->band_used < tries) {
        *prior = !(top - v->lo_x > at_most * v->lo_x);
        at_most = s->band_used ? PRIOR_BAND_AGAIN : TOSS_WORTH_A_TRIAL;
    }
    if (!(top - v->lo_x > at_most * v->lo_x))
        return -1;
    int64_t i = index_floor_of(s, 0.5 * (v->lo_x + top));
    if (i <= s->lo)
        i = s->lo + 1;
    return i < s->hi ? i : -1;
}

/* Whether a line that predicts lo + 1 at predicted certifies it over the
 * threshold: the points are certifiable, the prediction less the
 * tolerance is over, and lo's own reading agrees: one step of the slope
 * from it, less the tolerance, is over too. A line anchored at a point
 * above lo reaches back across any jump between them (memory allocated 64
 * samples at a time: the line from a rejected size on the next chunk put
 * 1595 over the threshold, 9 MiB above 1594's own reading, where 1600
 * fits), and no line can certify what lo's own reading contradicts.
 * Without a reading at lo (a failure's bracket), nothing contradicts it. */
static int certifies(const search *s, const view *v, double predicted)
{
    if (!v->certifiable || !(predicted - v->tolerance > s->safe_budget))
        return 0;
    return v->il >= v->n ||
           v->y[v->il] + v->slope * (v->next_x - v->lo_x) - v->tolerance > s->safe_budget;
}

/* Whether the line speaks for lo + 1: a point other than lo lies within a
 * factor of two of it, or lo's own reading, a step along the slope, is not
 * below the coin-toss band by more than a draw. Parallel rounds can leave lo
 * the only point near it, the line fitted to sizes far above: batch 1 and
 * three that finished past the budget at 127553-1048576 (a curve that grows
 * as log B) put 2 in the band, 50 GB over batch 1's own reading, and the
 * search stopped at 1 where 398 fits. */
static int line_near_lo(const search *s, const view *v)
{
    if (v->il >= v->n)
        return 1;
    for (unsigned k = 0; k < v->n; k++)
        if (k != v->il && v->x[k] >= 0.5 * v->lo_x && v->x[k] <= 2.0 * v->next_x)
            return 1;
    return v->y[v->il] + v->slope * (v->next_x - v->lo_x) >= s->aim - 2.0 * v->scatter;
}

/* Whether lo + 1 is settled (returns 1): certified over the threshold, or
 * a coin toss the points cannot decide; or, inside a bracket, the next
 * size from the readings at both ends (returns 0). -1: neither applies. */
static int settle_at_lo(search *s, const view *v, int64_t *next)
{
    const double *x = v->x, *y = v->y, *low = v->low;
    unsigned n = v->n, use = v->use, il = v->il;
    const double *fy = v->y + (n - use);
    double top_x = v->top_x, top_y = v->top_y, granule = v->granule, slope = v->slope;
    double scatter = v->scatter, noise = v->noise, resolvable = v->resolvable;
    double lo_x = v->lo_x, next_x = v->next_x;
    double quiet_below = v->quiet_below;
    int quiet = v->quiet, scatter_known = v->scatter_known;
    int line_reaches_lo = v->line_reaches_lo;
    if (s->spread > 0.0 && scatter_known && s->lo >= 0 && n >= 2 && slope > 0.0 &&
        fy[use - 1] - fy[0] >= resolvable && line_reaches_lo) {
        double predicted = model_at_next(v);
        int lo_passes = 0;
        if (quiet && il < n && !(v->bent > 0.0)) {
            /* Quiet points place lo + 1 a step above lo's own reading too:
             * the line through them all sits under it by any jump between
             * lo and the line's anchor, the top point. One far below left
             * it a few tenths of a percent under the points at the
             * threshold, and the band was never reached (fifteen trials,
             * one coin toss at a time). */
            double top3 = quiet_top3_slope(x, y, n, quiet_below);
            double local = y[il] + slope_from_lo(top3, lo_x, top_x, slope) * (next_x - lo_x);
            if (local > predicted)
                predicted = local;
            /* Memory in steps, readings that repeat: lo's own, a step of
             * the slope above it, under the threshold by more than the
             * scatter three times over and a granule is no coin toss,
             * whatever a line across a step above lo says (535, rejected a
             * step above 497, put 498 in the band, where 528 fits). */
            lo_passes = v->stepped && local < s->safe_budget - 3.0 * scatter - v->granule;
        }
        /* Certified: even the low end of the measured scatter puts the next
         * size over the threshold. */
        if (certifies(s, v, predicted))
            return settled(s, CERTIFIED, model_name(v), next_size(s));
        /* The line puts the next size within the measured scatter below
         * the aim (the threshold less that scatter once more, or above it):
         * it passes or fails by the draw, and
         * points nearer the boundary would only move the line by that
         * scatter again. Where the points lie on a line to within
         * rounding, that band is under one lattice step wide and the answer
         * is at most one step short of where a re-run decides. */
        if (predicted > s->aim - scatter && line_near_lo(s, v) && !lo_passes) {
            /* Unless that band (2 scatter) is under two sizes wide and the
             * line puts the next size no more than the scatter over the
             * threshold: a coin toss that close is cheaper to run than to
             * guess, where the band is the declared prior (not refuted)
             * or, from quiet points, where the next size is worth a trial
             * (TOSS_WORTH_A_TRIAL). */
            if ((quiet && next_x - lo_x < TOSS_WORTH_A_TRIAL * lo_x) ||
                predicted - scatter > s->safe_budget || scatter > slope * (next_x - lo_x)) {
                int prior_only;
                int64_t i = inside_wide_band(s, v, predicted, &prior_only);
                if (i >= 0 && prior_only)
                    s->band_next = i;
                if (i < 0) {
                    /* Not along a smooth bend: the line's residual
                     * there is the bend, not noise. */
                    int misfit = quiet && v->fit.max_residual_bytes > v->quiet_below &&
                                 !(v->bent > 0.0);
                    s->toss = !quiet || misfit;
                    /* Where the peaks repeat and stray from the line, the
                     * band is the line's misfit (a bend, a step), not a
                     * re-run's wander: said so. */
                    char band[256] = "their scatter of the acceptance threshold, where a "
                                     "re-run could go either way";
                    if (misfit) {
                        char stray[32];
                        batchfit_format_bytes(v->fit.max_residual_bytes, stray, sizeof stray);
                        snprintf(band, sizeof band,
                                 "its misfit of the acceptance threshold: the peaks repeat and "
                                 "stray from it by up to %s (memory grows in steps or bends "
                                 "here), so larger sizes may still fit, which only more trials "
                                 "(--strategy bisect) would find",
                                 stray);
                    }
                    return settled(s, "the %s through the measured peaks predicts %llu "
                                      "(not run) within %s",
                                   model_name(v), next_size(s), band);
                }
                *next = i;
                return 0;
            }
            *next = s->lo + 1;
            return 0;
        }
    }
    if (s->lo >= 0 && s->hi < (int64_t)s->lattice.count && s->hi_need > 0.0) {
        if (slope > 0.0 && (lo_x == top_x || (s->spread > 0.0 && line_reaches_lo)) &&
            certifies(s, v, model_at_next(v)))
            return settled(s, CERTIFIED, model_name(v), next_size(s));
        if (lo_x == top_x && certified_by_failure(s, top_x, top_y, slope, granule))
            return settled(s, BY_FAILURE, next_size(s));
        double shown = shown_scatter(y, low, n);
        if (s->spread > 0.0 && !quiet && scatter > shown)
            shown = scatter;
        int b = propose_bracket(s, x, y, n, shown, granule, noise, next);
        if (b >= 0)
            return b;
    }
    return -1;
}

/* Past lo: the next size from the line (or, with the slope unknown, from
 * what bounds it), or lo + 1 certified over the threshold (returns 1). */
static int propose_from_line(search *s, const view *v, int64_t *next)
{
    const double *x = v->x, *y = v->y;
    unsigned n = v->n, use = v->use;
    const double *fx = v->x + (n - use), *fy = v->y + (n - use);
    double top_x = v->top_x, top_y = v->top_y, granule = v->granule, slope = v->slope;
    double noise = v->noise, resolvable = v->resolvable, declared = v->declared;
    double lo_x = v->lo_x, next_x = v->next_x, tolerance = v->tolerance;
    int quiet = v->quiet, scatter_known = v->scatter_known;
    int collinear = v->collinear, line_reaches_lo = v->line_reaches_lo;
    batchfit_fit fit = v->fit;
    if (s->misses >= 2) {
        /* After repeated misses, bisect so the worst case stays bounded;
         * before anything fitted, the readings of the sizes that finished
         * over the budget place the crossing as needs do (halving from a
         * first guess a million times too large, each trial finishing over
         * the budget and reading its exact peak, ran sixteen of them). */
        *next = s->lo < 0 ? propose_after_misses(s) : propose_gallop(s);
        return 0;
    }
    /* One point and nothing fitted: the point is a size that finished over
     * the budget, read to its end. Where it read over twice the aim, half
     * that size fails too on any line with a non-negative intercept, and
     * the one-point rule below carries the reading down to the crossing as
     * it carries a fit up (the bracket's middle halved 9718 to 4859, then
     * on, after a program grew a hundredfold). */
    if (s->misses && !(n == 1 && s->lo < 0 && top_y > 2.0 * s->aim)) {
        /* With one point, the baseline bounds the per-sample slope from above. */
        if (n == 1 && s->result->baseline_known && top_y > (double)s->result->baseline_bytes)
            slope = (top_y - (double)s->result->baseline_bytes) / top_x;
        *next = propose_below_failure(s, top_x, top_y, slope, resolvable);
        if (s->spread > 0.0 && cap_at(s, *next, secant_cap(s, x, y, n, resolvable)) > s->lo)
            *next = cap_at(s, *next, secant_cap(s, x, y, n, resolvable));
        return 0;
    }
    if (n == 1) {
        /* One point. Assume the memory that grows with the batch is at most
         * what this trial added to the baseline (all of it, without a
         * baseline): on a line with a non-negative intercept the size this
         * predicts still fits, one granule of rounding aside. */
        double base = s->result->baseline_known ? (double)s->result->baseline_bytes : 0.0;
        double grown = top_y - base;
        /* The allocation granule divides both, hence what grew. */
        double g = s->result->baseline_known && base > 0.0 && grown > 0.0
                       ? (double)gcd_u64(bytes_u64(top_y), bytes_u64(base))
                       : 0.0;
        if (!(grown > 0.0) || grown < declared) {
            /* What the batch added is lost in the noise. */
            return propose_slope_unknown(s, x, y, n, declared, g, s->spread > 0.0, next);
        }
        double target = crossing(s, top_x, top_y + g, grown / top_x);
        double remembered = remembered_slope(s);
        if (remembered > grown / top_x)
            target = crossing(s, top_x, top_y + g, remembered);
        /* The point lies inside the band the declared spread leaves under
         * the threshold (a first guess close under the answer): along any
         * slope the aim is behind it, and the sizes just above it rise by
         * less than that band, which no line can resolve. The smallest
         * size gives the line a second end, far below. Without it a first
         * guess at 95% of the answer ran the next two sizes, read no rise
         * between them, widened to three times the guess, and came down
         * by halves: 10 trials, 4 out of memory (test
         * search_model_a_guess_inside_the_band_takes_the_minimum_next). */
        if (s->spread > 0.0 && !(remembered > 0.0) && s->lo > 0 &&
            index_floor_of(s, target) <= s->lo && anchor_at_minimum(s, next))
            return 0;
        *next = clamp_inside(s, index_floor_of(s, target));
        return 0;
    }
    /* Under a declared spread, a rise extrapolated more than
     * EXTRAPOLATE_AT_MOST times over is not evidence of the slope either:
     * quiet points over a pool's flat run rise by their wander, a few
     * hundredths of a percent, and the line through them put the crossing
     * at the search's upper limit (16 to 65535, then twenty trials out of
     * memory on the way down). Without one, the user says the readings are
     * exact, and a small rise is the slope (a 1 MiB line over 20 GiB goes
     * from 3 to its crossing at 61439 in one step). */
    if (!(slope > 0.0) || fy[use - 1] - fy[0] < resolvable ||
        (s->spread > 0.0 && s->aim - top_y > EXTRAPOLATE_AT_MOST * (fy[use - 1] - fy[0])) ||
        (s->spread > 0.0 && quiet && !(v->bent > 0.0) &&
         fy[use - 1] - fy[0] < RESOLVED_RISE * resolvable &&
         crossing(s, top_x, top_y, slope) > WIDEN_AT_MOST * top_x)) {
        /* No rise, a fall, or one lost in the noise: the slope is unknown. */
        return propose_slope_unknown(s, x, y, n, noise, granule, s->spread > 0.0 && !quiet, next);
    }
    /* Anchor the line at the largest measured point: extrapolating a short
     * distance from a measurement is far less sensitive to a wrong slope.
     * Under noise that point is itself a random draw, and a line through
     * all the points nearest the boundary says more. */
    if (s->spread > 0.0 && collinear && !quiet)
        top_y = fit.intercept_bytes + fit.bytes_per_sample * top_x;
    double bent = v->bent;
    /* Under noise the slope itself is uncertain: propose with a slope two
     * standard errors steeper (from the scatter and the spacing of the
     * points), so the proposal lands below the boundary and fits. */
    double proposal_slope = slope;
    if (s->spread > 0.0) {
        double mean_x = 0.0, sxx = 0.0;
        for (unsigned i = 0; i < use; i++)
            mean_x += fx[i] / use;
        for (unsigned i = 0; i < use; i++)
            sxx += (fx[i] - mean_x) * (fx[i] - mean_x);
        /* Uniform noise of full width w has a standard deviation of
         * w / sqrt(12); the scatter is such a width. */
        double sigma = noise / 3.4641016151377544;
        if (sxx > 0.0)
            proposal_slope += 2.0 * sigma / sqrt(sxx);
    }
    /* Two points show no scatter of their own. The declared band then only
     * makes the certificate harder: the next size must be over the
     * threshold by that band and a granule beyond the line. */
    if (s->spread > 0.0 && !scatter_known && use == 2 && s->lo >= 0 && lo_x == top_x &&
        top_y + slope * (next_x - top_x) - declared - granule > s->safe_budget)
        return settled(s, "the line through the two measured peaks predicts %llu (not run) over the "
                          "acceptance threshold by more than two draws of the declared spread",
                       next_size(s));
    int64_t c = index_floor_of(s, crossing(s, top_x, top_y, proposal_slope));
    /* Along a smooth bend, where the curve crosses the aim. */
    double bend_cross = bent > 0.0 ? bend_crossing(&v->curve, s->aim, top_x) : INFINITY;
    int along_bend = !isinf(bend_cross);
    if (along_bend)
        c = index_floor_of(s, bend_cross);
    if (s->spread > 0.0 && c <= s->lo) {
        /* The careful slope says no further, the central one says there is
         * room: go halfway into it. */
        int64_t central = index_floor_of(s, crossing(s, top_x, top_y, slope));
        if (central > s->lo + 1)
            c = s->lo + 1 + (central - s->lo - 1) / 2;
    }
    /* Along a smooth bend, no line through two points may put the next
     * size over the budget (a concave curve lies under its secants, and
     * their crossings of the aim stood where the curve's did not). */
    if (s->spread > 0.0 && c > s->lo)
        c = cap_at(s, c, bent > 0.0 ? secant_cap_at(s, x, y, n, resolvable, s->budget)
                                    : secant_cap(s, x, y, n, resolvable));
    if (s->spread > 0.0 && c > s->lo && !(bent > 0.0))
        c = cap_at(s, c, convex_cap(s, x, y, n, v->il, resolvable));
    if (c > s->lo && c < s->hi) {
        *next = c;
        if (along_bend)
            s->bend_next = c;
        return 0;
    }
    if (c >= s->hi) {
        /* The line says hi - 1 fits, but a larger size already failed:
         * something above the line lies in between. */
        *next = propose_below_failure(s, top_x, top_y, slope, resolvable);
        return 0;
    }
    /* The model says lo + 1 does not fit. Trust the line only where even
     * its pessimistic end (a granule of rounding and the scatter below it)
     * is over. */
    if (s->lo >= 0 && (lo_x == top_x || (s->spread > 0.0 && line_reaches_lo)) &&
        certifies(s, v, model_at_next(v)))
        return settled(s, CERTIFIED, model_name(v), next_size(s));
    if (s->lo >= 0 && lo_x == top_x && certified_by_failure(s, top_x, top_y, slope, granule))
        return settled(s, BY_FAILURE, next_size(s));
    /* Otherwise try the optimistic end, which bisects the band of uncertainty. */
    *next = clamp_inside(s, index_floor_of(s, crossing(s, top_x, top_y - tolerance, slope)));
    if (*next > s->lo + 1 && *next < s->hi)
        *next = s->lo + 1 + (*next - s->lo - 1) / 2;
    return 0;
}

/* The model strategy: fit the measured peaks, propose the largest lattice
 * point predicted to fit, verify it by running it. Returns 1 when the
 * bracket is settled by the fit (the next size is certified not to fit).
 *
 * Two quantities are kept apart. The declared spread e sets the acceptance
 * threshold (safe_budget) and nothing else, except as the prior for the
 * noise of points before the measurements can show their own scatter.
 * How far the search goes and when it stops come from the scatter the
 * measurements show: the largest residual of the points about the fitted
 * line, and the largest disagreement of a size run twice.
 *
 * In order: read_points reads the line and the scatter (and sets the aim);
 * a remembered curve the readings agree with places the next size
 * (propose_remembered); settle_at_lo decides lo + 1 (certified, or a coin
 * toss) or the next size inside a bracket; propose_from_line goes on past
 * the points. */
static int propose_model(search *s, int64_t *next)
{
    view v;
    v.n = model_points(s, v.x, v.y, v.low, NULL);
    unsigned n = v.n;
    s->remembered = 0;
    s->toss = 0;

    if (s->result->trial_count == 0) {
        *next = 0;
        uint64_t guess = s->opts->cached_batch ? s->opts->cached_batch : s->opts->first_guess;
        if (guess)
            *next = clamp_inside(s, index_floor_of(s, (double)guess));
        return 0;
    }
    /* After a re-run of a first reading too close (see run_trial) the
     * remembered curve is placed by both readings instead (see
     * propose_remembered): through the re-run alone, verify_cached ran
     * the next size where the curve had settled the search. */
    if (s->result->trial_count == 1 && s->opts->cached_batch && s->lo >= 0 &&
        s->lo == index_floor_of(s, (double)s->opts->cached_batch))
        return verify_cached(s, next);
    if (!s->budget_known ||
        (s->misses >= 2 && n == 0 && (s->hi_stopped || !(remembered_slope(s) > 0.0)))) {
        /* No budget to fit against (or nothing to fit after repeated
         * misses): gallop while nothing failed, then bisect. A remembered
         * curve goes on placing the next size below a failure that read
         * what it needed; below one stopped at the budget it could only
         * step down by the little that reading is over the threshold
         * (135, 116, 100, 84: 15% a trial, eight out of memory after the
         * program grew tenfold). */
        *next = s->budget_known && s->lo < 0 ? propose_after_misses(s) : propose_gallop(s);
        return 0;
    }
    if (n == 0) {
        *next = propose_without_points(s);
        return 0;
    }
    read_points(s, &v);

    if (s->spread > 0.0) {
        int b = propose_remembered(s, v.x, v.y, v.n, v.scatter, v.granule, next);
        if (b >= 0)
            return b;
    }

    int b = settle_at_lo(s, &v, next);
    if (b >= 0)
        return b;
    return propose_from_line(s, &v, next);
}

/* Whether the size after lo, not yet run, lies too far above lo for a
 * prediction to stand for it (PREDICT_AT_MOST). */
static int coarse_step_ahead(const search *s)
{
    if (s->lo < 0 || s->lo + 1 >= s->hi)
        return 0;
    double lo_x = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo);
    double next_x = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo + 1);
    return next_x - lo_x > 1.0 && next_x - lo_x > PREDICT_AT_MOST * lo_x;
}

/* Returns 1 when the strategy has its answer, else sets *next. */
static int propose(search *s, int64_t *next)
{
    int64_t count = (int64_t)s->lattice.count;
    switch (s->opts->strategy) {
    case BATCHFIT_STRATEGY_BISECT:
        *next = propose_bisect(s);
        return 0;
    case BATCHFIT_STRATEGY_BINSEARCH:
        *next = propose_gallop(s);
        return 0;
    case BATCHFIT_STRATEGY_POWER:
        if (s->hi < count)
            return settled(s, "the power strategy doubles until the first failure");
        *next = propose_gallop(s);
        return 0;
    case BATCHFIT_STRATEGY_HALVING:
        if (s->lo >= 0)
            return settled(s, "the halving strategy halves until the first fit");
        if (s->hi == count) {
            *next = count - 1;
            return 0;
        }
        *next = clamp_inside(
            s, index_floor_of(s, (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->hi) / 2.0));
        return 0;
    case BATCHFIT_STRATEGY_MODEL:
        break;
    }
    /* At most MAX_WASTED trials more than bisection of the first bracket. */
    if (s->wasted >= MAX_WASTED) {
        *next = propose_bisect(s);
        return 0;
    }
    /* Before any rejection, galloping's bound (see MAX_CREEPS): each step
     * from lo twice the last, until one is rejected; unless quiet points
     * give the model its answer (a deterministic line 0.4 GiB a size ran
     * 150 above a certified 148, a trial for nothing). Under noise the
     * creep goes on: a coin-toss stop there ended replayed PyTorch runs in
     * the allocator's dip, 67 where bisection finds 96. Quiet points whose
     * own next size lies within CREEP_PASS_AT_MOST of lo (or
     * CREEP_PASS_SIZES sizes) run it instead, CREEP_PASSES times at most:
     * they have placed the crossing, and twice the last step is a refusal
     * for nothing (a first guess under the answer made 737, 1050, 1087 and
     * 1145 creeps, and 1261 was refused before the model's 1160: test
     * search_model_quiet_points_run_their_next_size_past_the_creep_bound).
     * Twice: after one pass the next size can still be a step short of
     * the crossing (940, 941, 942, 946, then 949 passed, and the gallop's
     * 955 and 952 were refused before 951: 8 trials where 6 had sufficed).
     * The bound stands for points that are not quiet, and after that. */
    if (!s->bracketed && s->creeps >= MAX_CREEPS) {
        int64_t own = -1;
        int settled_now = propose_model(s, &own);
        if (settled_now == 1 && (s->quiet || s->remembered) && !coarse_step_ahead(s))
            return 1;
        if (settled_now == 0 && s->quiet && s->creep_passed < CREEP_PASSES && own > s->lo &&
            (own - s->lo <= CREEP_PASS_SIZES ||
             (double)batchfit__lattice_value(&s->lattice, (uint64_t)own) <=
                 (1.0 + CREEP_PASS_AT_MOST) *
                     (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo))) {
            s->creep_passed++;
            *next = own;
            return 0;
        }
        s->why[0] = '\0';
        *next = clamp_inside(s, twice_past(s, s->lo, s->step > 0 ? s->step : 1));
        return 0;
    }
    if (propose_model(s, next) == 0)
        return 0;
    /* On the host, a coin toss that noisy points leave (not quiet, or their
     * line strays from them by more than the quiet cut: a quiet triple can
     * hide the noise) before any rejection is not taken at once: LOOK_ABOVE times lo
     * is run first. glibc's malloc keeps buffers under its dynamic mmap
     * threshold (32 MiB at most) in the heap, resident, and maps larger ones,
     * returning them at free: where a program's largest buffers cross it,
     * its peak falls as the batch grows, and the same threshold's movement
     * is what makes its peaks vary between runs. A PyTorch CPU CNN read
     * 630.83 MiB at 57 and stopped there (the line predicting 58 inside the
     * band) where 64 reads 520.57 MiB and 88 fits; bisection's power of two
     * lands in that dip. A refusal there brackets the search and the coin
     * toss stands; a pass moves lo past the fall. Quiet programs (C
     * programs, a fixed mmap threshold) stop as they did. */
    if (s->toss && !s->bracketed && !s->remembered && on_host(s->result) &&
        s->result->trial_count + 1 < s->opts->max_trials) {
        double lo_x = (double)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo);
        int64_t above = index_floor_of(s, LOOK_ABOVE * lo_x);
        if (above < s->lo + 2)
            above = s->lo + 2;
        /* Not a leap: on a coarse lattice (powers of two) the size after
         * lo + 1 is several times lo. */
        if (above < s->hi &&
            (double)batchfit__lattice_value(&s->lattice, (uint64_t)above) <= LOOK_AT_MOST * lo_x) {
            s->why[0] = '\0';
            *next = above;
            return 0;
        }
    }
    if (!coarse_step_ahead(s))
        return 1;
    s->why[0] = '\0';
    *next = s->lo + 1;
    return 0;
}

/* The line through the model's points, and the last fall below them. */
static fall final_fit(const search *s, batchfit_fit *fit)
{
    double x[MAX_POINTS], y[MAX_POINTS], low[MAX_POINTS];
    fall f;
    batchfit__fit_line(x, y, model_points(s, x, y, low, &f), fit);
    return f;
}

static void search_init(search *s, batchfit_ctx *ctx, const batchfit_options *opts,
                        batchfit_result *result)
{
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    s->opts = opts;
    s->result = result;
    uint64_t extra = result->lattice == BATCHFIT_LATTICE_POW2 && opts->requested_max ? opts->requested_max : 0;
    batchfit__lattice_init(&s->lattice, result->lattice, result->lattice_multiple, extra,
                           result->min_batch, result->upper_bound);
    s->lo = -1;
    s->hi = (int64_t)s->lattice.count;
    s->bend_next = -1;
    s->band_next = -1;
    s->anchor_next = -1;
    s->budget_known = result->budget.known && result->budget.budget_bytes > 0;
    s->budget = (double)result->budget.budget_bytes;
    s->spread = result->budget.peak_spread > 0 ? result->budget.peak_spread : 0.0;
    /* A peak p measured with a relative spread e can come back as
     * p (1 + e) / (1 - e) on a re-run; accept only peaks that stay within the
     * budget even then. */
    s->safe_budget = s->budget * (1.0 - s->spread) / (1.0 + s->spread);
    s->aim = s->safe_budget;
}

/* The model's bookkeeping after the bracket moved from (before_lo,
 * before_hi): after one trial, or after a round of them. */
static void after_moves(search *s, int64_t before_lo, int64_t before_hi)
{
    uint64_t width_before = span(before_lo, before_hi);
    /* A size run below lo on purpose is no miss. */
    if (!s->anchor_ran)
        s->misses = s->lo == before_lo ? s->misses + 1 : 0;
    /* Before the first rejection, a fit that did not double the size
     * is a creep toward a boundary the model cannot place. */
    if (s->hi == (int64_t)s->lattice.count && before_lo >= 0) {
        s->creeps = s->lo > before_lo && batchfit__lattice_value(&s->lattice, (uint64_t)s->lo) <
                                             2 * batchfit__lattice_value(&s->lattice, (uint64_t)before_lo)
                        ? s->creeps + 1
                        : 0;
        s->step = s->lo - before_lo;
    }
    /* A rejection inside the bracket that did not halve it spends
     * slack (see MAX_WASTED). */
    if (s->bracketed && s->lo == before_lo && span(s->lo, s->hi) > width_before / 2)
        s->wasted++;
    else if (s->bracketed && s->wasted >= MAX_WASTED && span(s->lo, s->hi) <= width_before / 2)
        s->wasted = MAX_WASTED - 1;
    if (s->bracketed) {
        int halved = span(s->lo, s->hi) <= width_before / 2;
        s->lo_step = s->lo > before_lo && !halved ? s->lo - before_lo : 0;
        s->hi_step = s->hi < before_hi && !halved ? before_hi - s->hi : 0;
        s->lo_streak = s->lo_step ? s->lo_streak + 1 : 0;
        /* A first reading at hi measured to the end (after readings that
         * were only what stopped trials reached) places the crossing anew:
         * how the bounds misplaced it says nothing about the estimate now. */
        s->hi_streak = s->hi_step && !s->hi_first_measured ? s->hi_streak + 1 : 0;
    }
    s->bracketed = s->hi < (int64_t)s->lattice.count;
}

static int stop_at_limit(search *s)
{
    if (s->lo < 0)
        return BATCHFIT_OK;
    return batchfit__result_warn(
        s->ctx, s->result,
        "the search stopped at its limit of %u trials; the largest size that fits "
        "lies between %llu and %llu",
        s->opts->max_trials, (unsigned long long)batchfit__lattice_value(&s->lattice, (uint64_t)s->lo),
        (unsigned long long)(s->hi < (int64_t)s->lattice.count
                                 ? batchfit__lattice_value(&s->lattice, (uint64_t)s->hi) - 1
                                 : s->result->upper_bound));
}

/* Why the search settled on lo, into the result (and the log): the
 * model's reason, else the bracket that closed, the bound, or the limit. */
static int stop_reason(search *s)
{
    const batchfit_result *r = s->result;
    if (!s->why[0]) {
        unsigned long long lo = (unsigned long long)r->batch_size;
        if (s->hi == s->lo + 1 && s->hi < (int64_t)s->lattice.count) {
            const batchfit_trial *t = NULL;
            uint64_t hi = batchfit__lattice_value(&s->lattice, (uint64_t)s->hi);
            for (size_t i = r->trial_count; i-- > 0 && !t;)
                if (r->trials[i].batch == hi)
                    t = &r->trials[i];
            snprintf(s->why, sizeof s->why, "%llu, the next size, was run: %s",
                     (unsigned long long)hi,
                     !t                           ? "it did not fit"
                     : t->over_budget             ? "over the budget, having finished"
                     : t->outcome == BATCHFIT_OOM ? "out of memory"
                                                  : "over the acceptance threshold");
        } else if (s->hi == s->lo + 1) {
            snprintf(s->why, sizeof s->why, "%llu is the upper bound", lo);
        } else {
            snprintf(s->why, sizeof s->why, "the limit of %u trials", s->opts->max_trials);
        }
    }
    batchfit__log(s->ctx, BATCHFIT_LOG_INFO, "settled on %llu: %s",
                  (unsigned long long)r->batch_size, s->why);
    return batchfit__result_keep(s->result, &s->result->stop_reason, s->why);
}

/* The setting that makes glibc malloc's peaks repeat (bench/data). */
#define FIXED_MMAP_THRESHOLD "MALLOC_MMAP_THRESHOLD_=131072"

static const char GLIBC_ADVICE[] =
    "for a program on glibc malloc (PyTorch, NumPy on the CPU), run the probe and the training "
    "with " FIXED_MMAP_THRESHOLD ", which makes its peaks repeat";

/* Peaks that disagree by more than the declared spread allows: a larger
 * size reading less than a smaller one, or one size run twice, apart by
 * more than the ratio (1 + e) / (1 - e) that two draws within e of the
 * same peak can reach. The threshold guards a re-run against e only, so
 * the answer may then exceed the budget when it runs again: the warning
 * names the two readings and the spread they show (the first trial of a
 * probe is left out: a cold start reads high for reasons the batch has no
 * part in). On the host, PyTorch and NumPy on glibc malloc read up to 16%
 * apart between identical runs (bench/data) and repeat to 0.1% with a
 * fixed mmap threshold. */
static int warn_wide_spread(search *s, const fall *f)
{
    const batchfit_result *r = s->result;
    double e = s->spread;
    if (!(e > 0.0) || e >= 1.0)
        return BATCHFIT_OK;
    double worst = (1.0 + e) / (1.0 - e);
    const batchfit_trial *high = NULL, *low = NULL;
    for (size_t i = 1; i < r->trial_count; i++) {
        const batchfit_trial *a = &r->trials[i];
        if (a->outcome != BATCHFIT_FITS || !a->peak_known || a->peak_bytes == 0)
            continue;
        for (size_t j = 1; j < r->trial_count; j++) {
            const batchfit_trial *b = &r->trials[j];
            if (j == i || b->outcome != BATCHFIT_FITS || !b->peak_known || b->batch < a->batch ||
                b->peak_bytes == 0)
                continue;
            /* A pair across the fall warn_not_monotone names is that warning's. */
            if (f->from_x > 0.0 && (double)a->batch < f->to_x && (double)b->batch >= f->to_x)
                continue;
            double ratio = (double)a->peak_bytes / (double)b->peak_bytes;
            if (ratio > worst && (double)a->peak_bytes - (double)b->peak_bytes > PAGE_WANDER) {
                worst = ratio;
                high = a;
                low = b;
            }
        }
    }
    if (!high)
        return BATCHFIT_OK;
    char hb[32], lb[32];
    batchfit_format_bytes((double)high->peak_bytes, hb, sizeof hb);
    batchfit_format_bytes((double)low->peak_bytes, lb, sizeof lb);
    double shown = (worst - 1.0) / (worst + 1.0);
    return batchfit__result_warn(
        s->ctx, s->result,
        "peaks varied more than the declared spread of %.1f%%: batch %llu read %s, batch %llu "
        "%s%s, a spread of %.1f%%; a re-run of batch %llu may exceed the budget. Declare the "
        "spread the program shows (peak_spread, --peak-spread %.0f%%)%s%s",
        100.0 * e, (unsigned long long)high->batch, hb, (unsigned long long)low->batch,
        low->batch == high->batch ? "read again " : "read ", lb, 100.0 * shown,
        (unsigned long long)r->batch_size, ceil(100.0 * shown),
        on_host(r) ? ", or, " : "", on_host(r) ? GLIBC_ADVICE : "");
}

/* The smallest failure ran out of memory on its own (not stopped at the
 * budget, not measured over it) holding no more than the acceptance
 * threshold: the budget did not stop it, something else did. A reviewer's
 * program under an address-space limit (ulimit -v) failed at a quarter of
 * the budget and the summary read as if the budget were the limit. The
 * answer stands (it ran and fitted); the warning names what may limit it. */
/* The smallest failure, where it held less than the threshold and not by
 * being stopped there: the budget did not stop it (NULL where none). A
 * SIGKILL that neither the watchdog nor the kernel's OOM killer sent is a
 * stop too, where it came at the budget (a scheduler's memory limit); one
 * holding less than the threshold came from something else (20 MiB of a
 * 200 MiB budget: the minimum was said not to fit, "try a smaller model"). */
static const batchfit_trial *failure_under_threshold(const search *s)
{
    const batchfit_result *r = s->result;
    if (!s->budget_known || !r->smallest_failure)
        return NULL;
    for (size_t i = 0; i < r->trial_count; i++) {
        const batchfit_trial *t = &r->trials[i];
        if (t->batch == r->smallest_failure && t->outcome == BATCHFIT_OOM && t->peak_known &&
            t->peak_bytes > 0 && !measured_to_the_end(t) &&
            (!stopped(t) || killed_from_outside(t)) &&
            (double)t->peak_bytes <= s->safe_budget)
            return t;
    }
    return NULL;
}

/* What may have stopped the failure f under the budget, and what to do:
 * probe the GPU whose message it printed, or the limits a program meets
 * besides the budget. */
static const char *limit_hint(const search *s, const batchfit_trial *f, char *gpu, size_t len)
{
    const batchfit_result *r = s->result;
    /* A GPU allocator's message on the host: the memory that ran out is
     * the one this probe does not measure, and the way out is to say so. */
    const char *signature = f->process.oom_signature;
    if (on_host(r) && signature[0] && batchfit__oom_on_device(signature)) {
        snprintf(gpu, len,
                 "its message is a GPU's (%.60s), and this probe measured host memory: probe "
                 "that GPU (--device cuda:N; `batchfit info` lists the GPUs batchfit sees) to "
                 "search its memory",
                 signature);
        return gpu;
    }
    if (killed_from_outside(f))
        return "a container's or a scheduler's memory limit under the budget, the kernel's "
               "out-of-memory killer short of memory elsewhere on the host, or a process of its "
               "own or another's that kills it";
    return on_host(r) ? "an address-space limit (ulimit -v), a container's or a scheduler's "
                        "memory limit under the budget, memory on a device this probe does not "
                        "measure (--device), or one allocation larger than all the memory that "
                        "was left"
                      : "memory that other processes hold on the device, fragmentation, or one "
                        "allocation larger than all the memory that was left";
}

static int warn_failure_under_threshold(search *s)
{
    const batchfit_trial *f = failure_under_threshold(s);
    if (!f)
        return BATCHFIT_OK;
    char held[32], threshold[32], budget[32], gpu[256];
    batchfit_format_bytes((double)f->peak_bytes, held, sizeof held);
    batchfit_format_bytes(s->safe_budget, threshold, sizeof threshold);
    batchfit_format_bytes(s->budget, budget, sizeof budget);
    /* The cap the user asked for, not something else: the address space
     * counts what a program reserves and maps besides what it uses. */
    uint64_t cap = batchfit__result_address_space_cap(s->result);
    if (cap && !killed_from_outside(f)) {
        char limit[32];
        batchfit_format_bytes((double)cap, limit, sizeof limit);
        return batchfit__result_warn(
            s->ctx, s->result,
            "batch %llu ran out of memory holding %s, under the acceptance threshold of %s: the "
            "address-space cap of %s that --enforce-address-space puts on each trial stopped "
            "it, which counts what a program reserves and maps as well as what it uses; batch "
            "%llu is what fits under that cap (--enforce caps the memory used instead)",
            (unsigned long long)f->batch, held, threshold, limit,
            (unsigned long long)s->result->batch_size);
    }
    return batchfit__result_warn(
        s->ctx, s->result,
        "batch %llu %s holding %s, under the acceptance threshold of %s (budget %s): the budget "
        "did not stop it. Something else limits the program: %s; batch %llu is what fits under "
        "that limit",
        (unsigned long long)f->batch,
        killed_from_outside(f) ? "was killed by SIGKILL (not this probe's watchdog)"
                               : "ran out of memory",
        held, threshold, budget, limit_hint(s, f, gpu, sizeof gpu),
        (unsigned long long)s->result->batch_size);
}

/* The epoch's last batch is smaller than the answer, and so is a
 * recovery's micro-batch; above a fall, one of those sizes may need more
 * memory than the answer does. A fall that wide is also what peaks that
 * vary more than declared look like (two draws of one line), and then a
 * re-run of the answer may exceed the budget: the warning says both, with
 * what to do about each (it replaces warn_wide_spread's for that pair).
 * The answer stands (it ran and passed). */
static int warn_not_monotone(search *s, const fall *f)
{
    const batchfit_result *r = s->result;
    if (!(f->from_x > 0.0))
        return BATCHFIT_OK;
    char high[32], fell[32];
    batchfit_format_bytes(f->from_y, high, sizeof high);
    batchfit_format_bytes(f->to_y, fell, sizeof fell);
    double shown = (f->from_y - f->to_y) / (f->from_y + f->to_y);
    return batchfit__result_warn(
        s->ctx, s->result,
        "batch %llu read %s, batch %llu (larger) %s: memory falls as the batch grows here (an "
        "allocator changing strategy) or varies more than the declared %.1f%% (by %.1f%%). The "
        "search fitted the sizes from %llu up. A smaller batch (an epoch's last) may need more "
        "than batch %llu, and its re-run may exceed the budget: drop the last partial batch, "
        "declare --peak-spread %.0f%%%s",
        (unsigned long long)f->from_x, high, (unsigned long long)f->to_x, fell,
        100.0 * s->spread, 100.0 * shown, (unsigned long long)f->to_x,
        (unsigned long long)r->batch_size, ceil(100.0 * shown),
        on_host(r) ? ", or run the probe and the training with " FIXED_MMAP_THRESHOLD
                     " (glibc malloc's peaks then repeat)"
                   : "");
}

/* The minimum finished under the budget but over the acceptance threshold,
 * read twice (too_close_minimum) no further apart than a spread that would
 * let it pass: the declared spread (the host's 5% by default) is what
 * refuses it, not the memory. A reviewer's program read 265.74 and 265.75
 * MiB at batch 1 under 285 MiB (threshold 257.86 MiB) and was told to
 * shrink its model; --peak-spread 1% found 2743. Replaces the advice with
 * the spread under which the minimum passes. */
static void minimum_spread_advice(const search *s, char *advice, size_t len)
{
    const batchfit_result *r = s->result;
    double low = 0.0, high = 0.0;
    unsigned readings = 0;
    for (size_t i = 0; i < r->trial_count; i++) {
        const batchfit_trial *t = &r->trials[i];
        if (t->batch != r->min_batch || t->outcome != BATCHFIT_FITS || !t->peak_known ||
            t->peak_bytes == 0)
            continue;
        double v = (double)t->peak_bytes;
        low = readings && low < v ? low : v;
        high = readings && high > v ? high : v;
        readings++;
    }
    if (readings < 2 || !s->budget_known || !(s->spread > 0.0) || high > s->budget)
        return;
    /* The largest spread e with budget (1 - e) / (1 + e) >= high, in whole
     * percent, and what the readings show. */
    double most = floor(100.0 * (s->budget - high) / (s->budget + high));
    /* A spread e holds readings within e of their middle: two readings
     * apart by d (of the lower) show a spread of about d / 2. */
    double shown = 100.0 * (high - low) / (high + low);
    if (most < 1.0 || shown >= most)
        return;
    char text[512];
    int n = snprintf(text, sizeof text,
             "; its %u readings differ by %.2f%% (a spread of %.2f%% about their middle): if the "
             "program's peaks repeat within %.0f%% (the declared spread is %.1f%%), declare that "
             "(--peak-spread %.0f%%) and batch %llu passes; else try a smaller model, gradient "
             "checkpointing or lower precision",
             readings, 100.0 * (high - low) / low, shown, most, 100.0 * s->spread, most,
             (unsigned long long)r->min_batch);
    if (n > 0 && (size_t)n < len && (size_t)n < sizeof text)
        memcpy(advice, text, (size_t)n + 1);
}

/* An in-process probe's trials count what the process held before it
 * began: where the budget stopped the minimum and that alone is half the
 * acceptance threshold or more, it is the advice (a process holding 619.50
 * MiB under a budget of 500 MiB was told to try a smaller model). */
static void held_before_probe(const search *s, const batchfit_trial *failed, char *advice,
                              size_t len)
{
    uint64_t held = batchfit__result_held_before(s->result);
    if (!held || (double)held < 0.5 * s->safe_budget || !failed->peak_known ||
        (double)failed->peak_bytes < s->safe_budget)
        return;
    char held_text[32], threshold[32], budget[32];
    batchfit__format_bytes_apart((double)held, s->safe_budget, held_text, threshold,
                                 sizeof held_text);
    batchfit_format_bytes(s->budget, budget, sizeof budget);
    snprintf(advice, len,
             "; this process held %s before the probe began, which every in-process trial's "
             "peak counts, against an acceptance threshold of %s (of the budget %s): free what "
             "it holds before probing (a dataset, a model built outside the step's factory), "
             "raise the memory budget, or probe the training as a command (batchfit probe -- "
             "...)",
             held_text, threshold, budget);
}

/* The answer from the settled bracket (or the error that says why none). */
static int search_finish(search *s, int rc)
{
    batchfit_ctx *ctx = s->ctx;
    const batchfit_options *opts = s->opts;
    batchfit_result *result = s->result;
    fall f = final_fit(s, &result->fit);
    if (s->hi < (int64_t)s->lattice.count)
        result->smallest_failure = batchfit__lattice_value(&s->lattice, (uint64_t)s->hi);
    if (rc)
        return rc;
    if (s->lo >= 0) {
        result->batch_size = batchfit__lattice_value(&s->lattice, (uint64_t)s->lo);
        result->source = BATCHFIT_SOURCE_MEASURED;
        int why = stop_reason(s);
        if (why)
            return why;
        if (opts->first_guess && (s->hi < (int64_t)s->lattice.count ||
                                  result->batch_size < result->upper_bound))
            batchfit__log(ctx, BATCHFIT_LOG_INFO,
                          "the first guess of %llu was %.0f%% of the measured %llu",
                          (unsigned long long)opts->first_guess,
                          100.0 * (double)opts->first_guess / (double)result->batch_size,
                          (unsigned long long)result->batch_size);
        /* A fall above the answer (among sizes it never reached) is none of its business. */
        if ((double)result->batch_size < f.to_x)
            f.from_x = 0.0;
        int warned = warn_failure_under_threshold(s);
        if (!warned)
            warned = warn_not_monotone(s, &f);
        return warned ? warned : warn_wide_spread(s, &f);
    }
    if (s->hi == 0) {
        char budget[32] = "unknown";
        if (s->budget_known)
            batchfit_format_bytes(s->budget, budget, sizeof budget);
        const batchfit_trial *last = &result->trials[result->trial_count - 1];
        const batchfit_trial_process *d = &last->process;
        /* A command that printed an out-of-memory line and still exited 0
         * with little memory used may have recovered from it (a retry at a
         * smaller size), or run out on a device this probe does not
         * measure: say that rather than only "use a smaller model". */
        char advice[BATCHFIT_ERRMSG_MAX];
        /* Under a cgroup's limit (a container's, a job's) the device is
         * that limit: raising it is the larger device. */
        snprintf(advice, sizeof advice,
                 "; try a smaller model, gradient checkpointing, lower precision (mixed 16-bit), "
                 "a smaller margin, or %s%s%s",
                 result->memory_note ? "a higher memory limit for this container or job ("
                                     : "a larger device",
                 result->memory_note ? result->memory_note : "", result->memory_note ? ")" : "");
        /* What it used in the budget's terms: on GPUs the device's peak. */
        int on_gpu = result->gpu_count > 0;
        uint64_t used_bytes = on_gpu ? d->device_peak_bytes : d->host_peak_bytes;
        const batchfit_trial *f_under;
        if (last->outcome == BATCHFIT_OOM && d->ran && d->exited && d->exit_code == 0 &&
            d->oom_signature[0] && s->budget_known && (!on_gpu || d->device_peak_known) &&
            (double)used_bytes < 0.5 * s->budget) {
            char used[48] = "";
            if (used_bytes) {
                char amount[32];
                batchfit_format_bytes((double)used_bytes, amount, sizeof amount);
                snprintf(used, sizeof used, " having used %s", amount);
            }
            snprintf(advice, sizeof advice,
                     "; it printed an out-of-memory line yet exited 0%s: if it recovers from "
                     "out-of-memory on its own, make it exit non-zero there; if it runs on a "
                     "device this probe does not measure, name that device (--device)",
                     used);
        } else if ((f_under = failure_under_threshold(s)) != NULL) {
            /* Not the budget's doing: a smaller model is no advice. */
            char held[32], threshold[32], gpu[256];
            batchfit_format_bytes((double)f_under->peak_bytes, held, sizeof held);
            batchfit_format_bytes(s->safe_budget, threshold, sizeof threshold);
            const char *hint = limit_hint(s, f_under, gpu, sizeof gpu);
            snprintf(advice, sizeof advice,
                     "; it held %s, under the acceptance threshold of %s: the budget did not "
                     "stop it, %s",
                     held, threshold,
                     hint == gpu ? gpu : "something else did (see its message); a smaller model "
                                         "may not help");
        } else if (s->budget_known) {
            /* Where the budget stopped it, what the process held before may
             * be why (a message of a device's own, "CUDA out of memory" on
             * the host, read no peak past it: not this). */
            held_before_probe(s, last, advice, sizeof advice);
        }
        minimum_spread_advice(s, advice, sizeof advice);
        return batchfit__fail(ctx, BATCHFIT_E_MIN_DOES_NOT_FIT,
                              "even the minimum batch size %llu does not fit in the budget "
                              "(%s)%s%s%s",
                              (unsigned long long)result->min_batch, budget,
                              last->message[0] ? ": " : "", last->message, advice);
    }
    return batchfit__fail(ctx, BATCHFIT_E_TRIAL_LIMIT,
                          "no batch size fitted within the limit of %u trials (smallest tried: "
                          "%llu); raise max_trials (--max-trials)",
                          opts->max_trials,
                          (unsigned long long)batchfit__lattice_value(&s->lattice, (uint64_t)s->hi));
}

int batchfit__search_run(batchfit_ctx *ctx, const batchfit_options *opts,
                         batchfit_oracle_fn oracle, void *oracle_userdata,
                         batchfit_result *result)
{
    search s;
    search_init(&s, ctx, opts, result);
    s.oracle = oracle;
    s.oracle_userdata = oracle_userdata;

    int rc = BATCHFIT_OK;
    while (span(s.lo, s.hi) > 1) {
        int64_t next;
        if (propose(&s, &next))
            break;
        /* The trials recorded, not the loop's turns: a minimum too close
         * on its first reading runs twice in one turn (run_trial), and a
         * count of turns let max_trials = 2 run three. */
        if (result->trial_count >= opts->max_trials) {
            rc = stop_at_limit(&s);
            break;
        }
        int64_t before_lo = s.lo, before_hi = s.hi;
        size_t before_count = result->trial_count;
        rc = run_trial(&s, next);
        /* A serial search's rounds are its trials: a first reading run
         * again in the same turn is a round of its own (counted as one,
         * the summary said "5 trials ... in 4 rounds of trials at once"). */
        result->rounds += result->trial_count > before_count ? result->trial_count - before_count : 1;
        if (rc)
            break;
        after_moves(&s, before_lo, before_hi);
    }
    return search_finish(&s, rc);
}

/* Adds lattice index i to a round's proposals when it lies strictly inside
 * the bracket and is not there yet. */
static void add_proposal(const search *s, int64_t *props, unsigned *n, unsigned k, int64_t i)
{
    if (*n >= k || i <= s->lo || i >= s->hi)
        return;
    for (unsigned j = 0; j < *n; j++)
        if (props[j] == i)
            return;
    props[(*n)++] = i;
}

/* Up to k distinct lattice indices inside the bracket for one round; 0
 * when the strategy has its answer. The strategy's own proposal comes
 * first (what a serial search would run next). With no trial yet, a
 * geometric spread from it up to the bound: wherever the boundary is, one
 * gap of the spread holds it, and the first round brackets it within a
 * factor of (bound / minimum)^(1/k). Afterwards the next size (which
 * certifies the proposal as the answer when the proposal fits and it does
 * not), then midpoints of the widest gaps between the bracket's ends and
 * the proposals: the points that split what is left of the bracket, so
 * that whichever way the proposal goes, the next round starts from a
 * bracket a fraction of this one. */
static unsigned propose_round(search *s, unsigned k, int64_t *props)
{
    int64_t first;
    if (propose(s, &first))
        return 0;
    unsigned n = 0;
    add_proposal(s, props, &n, k, first);
    if (n == 0)
        add_proposal(s, props, &n, k, propose_bisect(s));
    if (s->result->trial_count == 0 && s->opts->strategy == BATCHFIT_STRATEGY_MODEL) {
        double v0 = (double)batchfit__lattice_value(&s->lattice, (uint64_t)first);
        double top = (double)batchfit__lattice_value(&s->lattice, (uint64_t)(s->hi - 1));
        for (unsigned j = 1; j < k && v0 < top; j++)
            add_proposal(s, props, &n, k,
                         index_floor_of(s, v0 * pow(top / v0, (double)j / (double)k)));
    } else {
        add_proposal(s, props, &n, k, first + 1);
    }
    while (n < k) {
        /* The widest gap, by the ratio of its ends' sizes, between
         * consecutive points of {lo, proposals, hi} that holds a size not
         * run yet: its geometric middle splits it (a boundary near a small
         * size is found by doubling, one near a large size by bisection). */
        int64_t best_a = 0, best_b = 0;
        double best_w = -1.0;
        int64_t a = s->lo;
        for (;;) {
            int64_t b = s->hi;
            for (unsigned j = 0; j < n; j++)
                if (props[j] > a && props[j] < b)
                    b = props[j];
            if (span(a, b) >= 2) {
                double va = (double)batchfit__lattice_value(&s->lattice, (uint64_t)(a < 0 ? 0 : a));
                double vb = (double)batchfit__lattice_value(
                    &s->lattice, (uint64_t)(b >= (int64_t)s->lattice.count ? b - 1 : b));
                double w = log(vb / va);
                if (w > best_w) {
                    best_w = w;
                    best_a = a;
                    best_b = b;
                }
            }
            if (b >= s->hi)
                break;
            a = b;
        }
        if (best_w < 0.0)
            break;
        double va = (double)batchfit__lattice_value(&s->lattice,
                                                    (uint64_t)(best_a < 0 ? 0 : best_a));
        double vb = (double)batchfit__lattice_value(
            &s->lattice,
            (uint64_t)(best_b >= (int64_t)s->lattice.count ? best_b - 1 : best_b));
        int64_t m = index_floor_of(s, sqrt(va * vb));
        if (m <= best_a)
            m = best_a + 1;
        if (m >= best_b)
            m = best_b - 1;
        unsigned before = n;
        add_proposal(s, props, &n, k, m);
        if (n == before)
            break;
    }
    return n;
}

int batchfit__search_run_parallel(batchfit_ctx *ctx, const batchfit_options *opts, unsigned k,
                                  batchfit_round_fn round, void *round_userdata,
                                  batchfit_result *result)
{
    enum { MAX_ROUND = BATCHFIT_MAX_PARALLEL };
    if (k > MAX_ROUND)
        k = MAX_ROUND;
    search s;
    search_init(&s, ctx, opts, result);
    s.in_rounds = 1;
    int rc = BATCHFIT_OK;
    unsigned trials = 0;
    int64_t props[MAX_ROUND];
    uint64_t batches[MAX_ROUND];
    batchfit_trial ts[MAX_ROUND];
    while (span(s.lo, s.hi) > 1) {
        unsigned n = propose_round(&s, k, props);
        if (n == 0)
            break;
        if (trials == opts->max_trials) {
            rc = stop_at_limit(&s);
            break;
        }
        if (n > opts->max_trials - trials)
            n = opts->max_trials - trials;
        memset(ts, 0, n * sizeof *ts);
        for (unsigned j = 0; j < n; j++) {
            batches[j] = batchfit__lattice_value(&s.lattice, (uint64_t)props[j]);
            ts[j].batch = batches[j];
        }
        oracle_begins(&s);
        rc = oracle_code(&s, round(round_userdata, batches, n, ts), ts, n);
        if (rc)
            break;
        result->rounds++;
        trials += n;
        for (unsigned j = 0; j < n && rc == BATCHFIT_OK; j++) {
            rc = record_trial(&s, props[j], &ts[j], 0);
            /* The minimum too close on its first reading runs once more,
             * alone, as in run_trial; the second reading decides. (Only
             * the minimum: a round's first readings are several sizes.) */
            if (rc == BATCHFIT_OK && too_close_minimum(&s, props[j], &ts[j]) &&
                trials < opts->max_trials) {
                memset(&ts[j], 0, sizeof ts[j]);
                ts[j].batch = batches[j];
                oracle_begins(&s);
                rc = oracle_code(&s, round(round_userdata, &batches[j], 1, &ts[j]), &ts[j], 1);
                if (rc)
                    break;
                result->rounds++;
                trials++;
                rc = record_trial(&s, props[j], &ts[j], 0);
            }
        }
        if (rc)
            break;
        /* The smallest rejected size bounds the bracket; of the accepted
         * sizes only those below it count (under noise a larger size can
         * pass where a smaller one failed: the failure wins). */
        int64_t before_lo = s.lo, before_hi = s.hi;
        int measured_before = s.hi_measured || s.hi == (int64_t)s.lattice.count;
        for (unsigned j = 0; j < n; j++)
            if (!ts[j].accepted && props[j] < s.hi)
                set_hi(&s, props[j], &ts[j]);
        /* Against hi as the round found it, whatever order its trials came in. */
        s.hi_first_measured = s.hi_measured && !measured_before;
        for (unsigned j = 0; j < n; j++)
            if (ts[j].accepted && props[j] > s.lo && props[j] < s.hi)
                s.lo = props[j];
        /* A failure's reading at or below what a smaller size was measured
         * to use (what a framework had allocated when the first allocation
         * failed) says nothing about what it needed. One trial at a time
         * meets such a failure only above a size it extrapolated to; a
         * round meets it far above the boundary. */
        if (s.hi_need > 0.0 && s.hi < (int64_t)s.lattice.count) {
            uint64_t hi_x = batchfit__lattice_value(&s.lattice, (uint64_t)s.hi);
            for (size_t t = 0; t < result->trial_count; t++) {
                const batchfit_trial *tr = &result->trials[t];
                if (tr->accepted && tr->peak_known && tr->batch < hi_x &&
                    (double)tr->peak_bytes >= s.hi_need) {
                    s.hi_need = 0.0;
                    break;
                }
            }
        }
        after_moves(&s, before_lo, before_hi);
    }
    return search_finish(&s, rc);
}

int batchfit_search(batchfit_ctx *ctx, const batchfit_options *opts, batchfit_oracle_fn oracle,
                    void *oracle_userdata, batchfit_result *result)
{
    if (!ctx || !oracle || !result)
        return BATCHFIT_E_INVALID_ARGUMENT;
    batchfit_options own;
    int rc = batchfit__options_take(ctx, &opts, &own);
    if (rc)
        return rc;
    if (result->min_batch == 0 || result->upper_bound < result->min_batch)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "result: bounds not decided (call batchfit_decide first)");
    return batchfit__search_run(ctx, opts, oracle, oracle_userdata, result);
}

/* A serial search over a round function, one size a round. */
typedef struct one_round {
    batchfit_round_fn round;
    void *userdata;
} one_round;

static int one_round_trial(void *userdata, uint64_t batch, batchfit_trial *trial)
{
    const one_round *o = userdata;
    return o->round(o->userdata, &batch, 1, trial);
}

int batchfit_search_parallel(batchfit_ctx *ctx, const batchfit_options *opts, unsigned parallel,
                             batchfit_round_fn round, void *round_userdata,
                             batchfit_result *result)
{
    if (!ctx || !round || !result || parallel == 0)
        return BATCHFIT_E_INVALID_ARGUMENT;
    batchfit_options own;
    int rc = batchfit__options_take(ctx, &opts, &own);
    if (rc)
        return rc;
    if (result->min_batch == 0 || result->upper_bound < result->min_batch)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "result: bounds not decided (call batchfit_decide first)");
    if (parallel == 1) {
        one_round o = {round, round_userdata};
        return batchfit__search_run(ctx, opts, one_round_trial, &o, result);
    }
    return batchfit__search_run_parallel(ctx, opts, parallel, round, round_userdata, result);
}
