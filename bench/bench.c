/* make bench: batchfit's strategies against the peers', side by side.
 *
 * The simulated suite runs every strategy on the same seeded profiles (see
 * profiles.c) and judges each answer against the brute-force truth. The
 * real-process run drives the CLI on the example trainer with a host
 * budget. Writes results.json, RESULTS.md and trials.svg.
 *
 * Usage: bench [--seed N] [--profiles N] [--out DIR] [--no-real] [--verbose] [--case F:I]
 *              [--batchfit PATH] [--trainer PATH] [--childtool PATH] */
#include <batchfit.h>

#include "profiles.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BOUND 65536
#define MAX_PROFILES 5000
/* A trial costs a fixed start-up plus time per sample; an OOM trial half of
 * that. Start-up is a tenth of a step at the true maximum. */
#define STARTUP_STEPS 0.1
#define OOM_COST 0.5

typedef enum kind {
    LIB_MODEL,
    LIB_BISECT,
    LIB_BINSEARCH,
    LIB_POWER,
    LIB_HALVING,
    PEER_ULTRA60,
    PEER_ULTRA90,
    PEER_LLNODE,
    KIND_COUNT
} kind;

static const char *const kind_names[KIND_COUNT] = {
    "model", "bisect", "binsearch", "power", "halving",
    "ultralytics-60%", "ultralytics-90%", "learning-loop-pow2",
};

static const char *const kind_notes[KIND_COUNT] = {
    "batchfit default: fit, propose, verify",
    "bisection over [1, 65536]",
    "double, then bisect (Lightning binsearch)",
    "double until failure (Lightning power)",
    "start at the bound, halve on failure",
    "profile 1..16, extrapolate to 60% of free memory, unverified",
    "the same, aiming at 90%",
    "powers of two upward plus the requested size",
};

typedef struct outcome {
    uint64_t answer;
    unsigned trials;
    unsigned ooms;
    unsigned rounds;
    double cost;
} outcome;

typedef struct column {
    double trials[MAX_PROFILES];
    double ooms[MAX_PROFILES];
    double costs[MAX_PROFILES];
    unsigned cost_count;
    unsigned count;
    unsigned exact;
    unsigned exact_noise_free;
    unsigned noise_free;
    unsigned unsafe;
    unsigned failed;
    double accuracy_sum;
} column;

static column columns[KIND_COUNT];


/* ------------------------------------------------------------------ */
/* The peers, written to behave as their sources do, over the same      */
/* simulated device (ballast held as "used" memory).                     */
/* ------------------------------------------------------------------ */

typedef struct peer {
    batchfit_device *dev;
    void *state;
    unsigned trials;
    unsigned ooms;
    double cost_samples; /* in samples: start-up + batch per trial, halved for OOMs */
    double startup;
} peer;

/* Runs one step at batch; returns 1 if it fitted, with its peak. */
static int peer_trial(peer *p, uint64_t batch, uint64_t *peak)
{
    batchfit_step_report rep;
    memset(&rep, 0, sizeof rep);
    batchfit_device_peak_reset(p->dev);
    batchfit_outcome o = batchfit_sim_step()->run(p->state, batch, &rep);
    p->trials++;
    double cost = p->startup + (double)batch;
    if (o != BATCHFIT_FITS) {
        p->ooms++;
        p->cost_samples += OOM_COST * cost;
        return 0;
    }
    p->cost_samples += cost;
    batchfit_device_peak(p->dev, peak);
    return 1;
}

/* Ultralytics AutoBatch: profile 1, 2, 4, 8, 16; fit memory = a + b * batch;
 * aim at fraction of the free memory; the result is never run. */
static uint64_t peer_ultralytics(peer *p, double fraction, uint64_t usable)
{
    double xs[5], ys[5];
    unsigned n = 0;
    for (uint64_t b = 1; b <= 16; b *= 2) {
        uint64_t peak;
        if (!peer_trial(p, b, &peak))
            break;
        xs[n] = (double)b;
        ys[n] = (double)peak;
        n++;
    }
    if (n < 2)
        return n ? 1 : 0;
    double mx = 0, my = 0, sxx = 0, sxy = 0;
    for (unsigned i = 0; i < n; i++) {
        mx += xs[i];
        my += ys[i];
    }
    mx /= n;
    my /= n;
    for (unsigned i = 0; i < n; i++) {
        sxx += (xs[i] - mx) * (xs[i] - mx);
        sxy += (xs[i] - mx) * (ys[i] - my);
    }
    double slope = sxy / sxx, intercept = my - slope * mx;
    if (!(slope > 0))
        return 16;
    double b = (fraction * (double)usable - intercept) / slope;
    if (b < 1)
        b = 1;
    if (b > BOUND)
        b = BOUND;
    return (uint64_t)b;
}

/* learning_loop_node's probe: powers of two upward, then the requested
 * size once as an extra candidate. */
static uint64_t peer_llnode(peer *p, uint64_t requested)
{
    uint64_t best = 0, peak;
    uint64_t b = 1;
    for (; b <= requested; b *= 2) {
        if (!peer_trial(p, b, &peak))
            break;
        best = b;
    }
    if (best && best < requested && b > requested && peer_trial(p, requested, &peak))
        best = requested;
    return best;
}

static int run_peer(kind k, const bench_profile *prof, uint64_t budget, double truth_max,
                    outcome *out)
{
    char extra[64], spec[1024];
    snprintf(extra, sizeof extra, ",used=%llu",
             (unsigned long long)(prof->capacity - budget));
    bench_profile_spec(prof, extra, spec, sizeof spec);
    batchfit_ctx *ctx = NULL;
    peer p;
    memset(&p, 0, sizeof p);
    p.startup = STARTUP_STEPS * truth_max;
    if (batchfit_ctx_create(NULL, &ctx) != BATCHFIT_OK ||
        batchfit_device_open(ctx, spec, &p.dev) != BATCHFIT_OK) {
        batchfit_ctx_free(ctx);
        return -1;
    }
    char msg[256];
    uint64_t answer = 0;
    if (batchfit_sim_step()->build(NULL, p.dev, &p.state, msg, sizeof msg) == BATCHFIT_FITS) {
        if (k == PEER_LLNODE)
            answer = peer_llnode(&p, BOUND);
        else
            answer = peer_ultralytics(&p, k == PEER_ULTRA60 ? 0.6 : 0.9, budget);
        batchfit_sim_step()->release(p.state);
    }
    out->answer = answer;
    out->trials = p.trials;
    out->ooms = p.ooms;
    out->cost = answer ? p.cost_samples / (double)answer : NAN;
    batchfit_device_free(p.dev);
    batchfit_ctx_free(ctx);
    return 0;
}

static int run_library_k(kind k, unsigned parallel, const bench_profile *prof, double truth_max,
                         uint64_t *budget_out, outcome *out)
{
    char spec[1024];
    bench_profile_spec(prof, NULL, spec, sizeof spec);
    batchfit_ctx *ctx = NULL;
    batchfit_device *dev = NULL;
    batchfit_result *r = NULL;
    if (batchfit_ctx_create(NULL, &ctx) != BATCHFIT_OK ||
        batchfit_device_open(ctx, spec, &dev) != BATCHFIT_OK) {
        fprintf(stderr, "bench: cannot open %s: %s\n", spec, batchfit_ctx_last_error(ctx));
        batchfit_ctx_free(ctx);
        return -1;
    }
    batchfit_options o;
    batchfit_options_init(&o);
    o.requested_max = BOUND;
    o.strategy = (batchfit_strategy)k;
    o.parallel = parallel;
    batchfit_probe(ctx, &o, dev, batchfit_sim_step(), NULL, &r);
    out->answer = r && r->source == BATCHFIT_SOURCE_MEASURED ? r->batch_size : 0;
    out->trials = r ? (unsigned)r->trial_count : 0;
    out->ooms = r ? (unsigned)r->oom_trials : 0;
    out->rounds = r ? (unsigned)r->rounds : 0;
    double samples = 0;
    for (size_t i = 0; r && i < r->trial_count; i++) {
        double c = STARTUP_STEPS * truth_max + (double)r->trials[i].batch;
        samples += r->trials[i].outcome == BATCHFIT_OOM ? OOM_COST * c : c;
    }
    out->cost = out->answer ? samples / (double)out->answer : NAN;
    if (budget_out && r)
        *budget_out = r->budget.budget_bytes;
    batchfit_result_free(r);
    batchfit_device_free(dev);
    batchfit_ctx_free(ctx);
    return 0;
}

static int run_library(kind k, const bench_profile *prof, double truth_max, uint64_t *budget_out,
                       outcome *out)
{
    return run_library_k(k, 1, prof, truth_max, budget_out, out);
}

/* The model strategy with K identical devices: rounds of up to K trials.
 * On the simulated device a round's trials run one after another; rounds
 * are what wall time would be with K devices. */
#define PARALLEL_KS 4
static const unsigned parallel_ks[PARALLEL_KS] = {1, 2, 4, 8};

typedef struct parallel_column {
    double rounds[MAX_PROFILES];
    double trials_total;
    unsigned count;
    unsigned mismatches;          /* answers that differ from K = 1's */
    unsigned mismatches_noise_free;
    unsigned noise_free;
    unsigned exact_noise_free;
    unsigned exact;               /* the suite's "exact": the largest size safe at the top of the noise */
    unsigned unsafe;
    double ratio_sum;             /* answer / K = 1's answer */
    unsigned failed;
} parallel_column;

static parallel_column parallel_columns[PARALLEL_KS];

static void record(kind k, const bench_profile *prof, uint64_t budget, uint64_t truth_exact,
                   uint64_t truth_safe, const outcome *o)
{
    column *c = &columns[k];
    unsigned i = c->count++;
    c->trials[i] = o->trials;
    c->ooms[i] = o->ooms;
    if (!isnan(o->cost))
        c->costs[c->cost_count++] = o->cost;
    if (!o->answer) {
        c->failed++;
        return;
    }
    /* The answer fails on a re-run if the top of the noise band takes it
     * over the budget. */
    if (bench_profile_peak(prof, o->answer, prof->noise) > budget)
        c->unsafe++;
    if (o->answer == truth_safe)
        c->exact++;
    if (prof->noise == 0.0) {
        c->noise_free++;
        c->exact_noise_free += o->answer == truth_exact;
    }
    c->accuracy_sum += (double)o->answer / (double)truth_exact;
}

/* ------------------------------------------------------------------ */
/* The families that model real processes (see profiles.h)              */
/* ------------------------------------------------------------------ */

#define CASES_PER_FAMILY 100
#define LIB_KINDS (PEER_ULTRA60 - LIB_MODEL)

typedef struct family_summary {
    double trials_median, trials_p95, trials_max, oom_median;
    double ratio_mean; /* answer / bisection's answer on the same case */
    double ratio_clear_mean; /* the same, where bisection's answer is no trap */
    unsigned clear;          /* how many such cases */
    double exact_share;
    unsigned below_bisect; /* more than one lattice step below bisection */
    unsigned below_narrow; /* of them, cases where the draw decides at most one size */
    unsigned gap_below;    /* answers above a smaller size that can run out of memory */
    unsigned unsafe;
    unsigned failed;
} family_summary;

static family_summary family_results[BENCH_CASE_FAMILIES][LIB_KINDS];
static unsigned family_narrow[BENCH_CASE_FAMILIES]; /* cases where it does */

static int run_families(uint64_t seed, unsigned cases, int verbose)
{
    static double trials[LIB_KINDS][MAX_PROFILES], ooms[LIB_KINDS][MAX_PROFILES];
    for (unsigned f = 0; f < BENCH_CASE_FAMILIES; f++) {
        double ratio_sum[LIB_KINDS] = {0}, clear_sum[LIB_KINDS] = {0};
        unsigned exact[LIB_KINDS] = {0}, ratios[LIB_KINDS] = {0}, clears[LIB_KINDS] = {0};
        for (unsigned i = 0; i < cases; i++) {
            bench_case c;
            bench_case_make(seed, f, i, &c);
            uint64_t truth = bench_case_exact(&c, BOUND);
            int narrow = bench_case_draw_band(&c, BOUND) <= 1;
            family_narrow[f] += narrow;
            uint64_t first_over = bench_case_first_over_budget(&c, BOUND);
            uint64_t first_refused = bench_case_first_refused(&c, BOUND);
            bench_case_outcome o[LIB_KINDS];
            for (int k = 0; k < LIB_KINDS; k++)
                if (bench_case_run(&c, (batchfit_strategy)k, BOUND, &o[k]) != 0)
                    return -1;
            if (verbose)
                printf("case %u:%u: truth %llu, model %llu in %u trials (%u oom)%s, bisect %llu%s%s\n",
                       f, i, (unsigned long long)truth, (unsigned long long)o[LIB_MODEL].answer,
                       o[LIB_MODEL].trials, o[LIB_MODEL].ooms,
                       o[LIB_MODEL].answer &&
                               bench_case_peak_max(&c, o[LIB_MODEL].answer) > c.budget
                           ? ", unsafe"
                           : "",
                       (unsigned long long)o[LIB_BISECT].answer,
                       f == BENCH_REPLAYED ? (c.replay ? " (fixed mmap threshold)" : " (default malloc)")
                                           : "",
                       narrow ? ", the draw decides at most one size" : "");
            for (int k = 0; k < LIB_KINDS; k++) {
                family_summary *fs = &family_results[f][k];
                trials[k][i] = o[k].trials;
                ooms[k][i] = o[k].ooms;
                if (!o[k].answer) {
                    fs->failed++;
                    continue;
                }
                if (bench_case_peak_max(&c, o[k].answer) > c.budget)
                    fs->unsafe++;
                fs->gap_below += first_over && first_over < o[k].answer;
                exact[k] += o[k].answer == truth;
                if (o[LIB_BISECT].answer) {
                    double ratio = (double)o[k].answer / (double)o[LIB_BISECT].answer;
                    ratio_sum[k] += ratio;
                    ratios[k]++;
                    if (!first_refused || first_refused >= o[LIB_BISECT].answer) {
                        clear_sum[k] += ratio;
                        clears[k]++;
                    }
                    fs->below_bisect += o[k].answer + 1 < o[LIB_BISECT].answer;
                    fs->below_narrow += narrow && o[k].answer + 1 < o[LIB_BISECT].answer;
                }
            }
        }
        for (int k = 0; k < LIB_KINDS; k++) {
            family_summary *fs = &family_results[f][k];
            fs->trials_median = bench_quantile(trials[k], cases, 0.5);
            fs->trials_p95 = bench_quantile(trials[k], cases, 0.95);
            fs->trials_max = bench_quantile(trials[k], cases, 1.0);
            fs->oom_median = bench_quantile(ooms[k], cases, 0.5);
            fs->ratio_mean = ratios[k] ? ratio_sum[k] / ratios[k] : NAN;
            fs->ratio_clear_mean = clears[k] ? clear_sum[k] / clears[k] : NAN;
            fs->clear = clears[k];
            fs->exact_share = (double)exact[k] / cases;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* The real-process run                                                 */
/* ------------------------------------------------------------------ */

typedef struct real_run {
    const char *strategy;
    unsigned long long trials;
    unsigned long long answer;
    double wall;
    int ok;
} real_run;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The real programs, probed with the user's defaults (the host's 5%
 * spread: no --peak-spread): the example trainer (a CNN whose activations
 * grow with the batch), a plain C program that allocates a fixed block
 * plus a block per sample (the test suite's childtool), the same program
 * allocating its per-sample memory 16 samples at a time (memory in steps
 * of 8 MiB, as an allocator's blocks make it), the same program with a
 * pool for its first 300 samples and up to 5% more memory drawn anew each
 * run (a noisy program whose memory is flat, then grows), and, where
 * /usr/bin/python3 has PyTorch, a small transformer decoder trained on the
 * CPU by examples/torch_train.py (the interpreter's own 250 MiB, then
 * glibc-malloc'd activations; --max bounds bisection's range, as a user
 * would for a job whose trials take seconds). */
typedef struct real_program {
    const char *key;     /* short name, for results.json and the log */
    const char *label;   /* the program and its arguments, for RESULTS.md */
    const char *budget;
    const char *options; /* batchfit options besides the budget and strategy */
    const char *args;    /* after the program's path */
} real_program;

enum { REAL_TRAINER, REAL_CHILDTOOL, REAL_CHUNKS, REAL_NOISY_POOL, REAL_TORCH, REAL_PROGRAMS };

static const real_program real_programs[REAL_PROGRAMS] = {
    {"trainer", "examples/trainer --steps 2", "58.05MiB", "", "--batch-size {batch} --steps 2"},
    {"childtool", "tests/progs/childtool grow 1024 4096", "160MiB", "", "grow 1024 4096"},
    {"childtool-chunks", "tests/progs/childtool grow 512 4096 16", "160MiB", "", "grow 512 4096 16"},
    {"childtool-noisy-pool", "tests/progs/childtool grow 256 40960 1 300 5", "152MiB", "",
     "grow 256 40960 1 300 5"},
    {"torch-decoder",
     "python3 examples/torch_train.py --model decoder --width 64 --layers 2 --seq 64 --vocab "
     "1000 --steps 2",
     "400MiB", "--max 256",
     "examples/torch_train.py --model decoder --width 64 --layers 2 --seq 64 --vocab 1000 "
     "--steps 2 --quiet --batch-size {batch}"},
};
#define REAL_STRATEGIES 3

static int run_real(const char *batchfit, const char *program, const real_program *rp,
                    real_run *run)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "'%s' probe --device host --memory-budget %s %s --strategy %s --no-cache --quiet "
             "--export-json - -- '%s' %s 2>/dev/null",
             batchfit, rp->budget, rp->options, run->strategy, program, rp->args);
    double start = now();
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    static char json[1 << 18];
    size_t n = fread(json, 1, sizeof json - 1, p);
    json[n] = '\0';
    int status = pclose(p);
    run->wall = now() - start;
    run->ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    run->trials = bench_json_result_number(json, "trials");
    run->answer = bench_json_result_number(json, "batch_size");
    return run->ok ? 0 : -1;
}

/* ------------------------------------------------------------------ */
/* Output                                                               */
/* ------------------------------------------------------------------ */

typedef struct summary {
    double trials_median, trials_p95, trials_max, oom_median, cost_median;
    double exact_share, exact_noise_free_share, unsafe_share, accuracy_mean;
    unsigned failed;
} summary;

static void summarize(kind k, summary *s)
{
    column *c = &columns[k];
    s->trials_median = bench_quantile(c->trials, c->count, 0.5);
    s->trials_p95 = bench_quantile(c->trials, c->count, 0.95);
    s->trials_max = bench_quantile(c->trials, c->count, 1.0);
    s->oom_median = bench_quantile(c->ooms, c->count, 0.5);
    s->cost_median = bench_quantile(c->costs, c->cost_count, 0.5);
    s->exact_share = (double)c->exact / c->count;
    s->exact_noise_free_share = c->noise_free ? (double)c->exact_noise_free / c->noise_free : NAN;
    unsigned answered = c->count - c->failed;
    s->unsafe_share = (double)c->unsafe / c->count;
    s->accuracy_mean = answered ? c->accuracy_sum / answered : NAN;
    s->failed = c->failed;
}

static void write_svg(const char *path, const summary *s)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    double scale = 22.0; /* pixels per trial */
    int width = 760, row = 34, top = 50, left = 170;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"10\" y=\"22\" font-size=\"15\">Trials per probe over the suite "
            "(bar: median, light bar: p95, tick: max)</text>\n",
            width, top + row * KIND_COUNT + 40);
    for (int t = 0; t <= 24; t += 4) {
        double x = left + t * scale;
        fprintf(f,
                "<line x1=\"%.0f\" y1=\"%d\" x2=\"%.0f\" y2=\"%d\" stroke=\"#ddd\"/>\n"
                "<text x=\"%.0f\" y=\"%d\" text-anchor=\"middle\" fill=\"#666\">%d</text>\n",
                x, top - 8, x, top + row * KIND_COUNT, x, top + row * KIND_COUNT + 16, t);
    }
    for (int k = 0; k < KIND_COUNT; k++) {
        int y = top + k * row;
        const char *color = k == LIB_MODEL ? "#1b7f3b" : k < PEER_ULTRA60 ? "#3a6ea5" : "#b5651d";
        double p95 = fmin(s[k].trials_p95, 32), max = fmin(s[k].trials_max, 32);
        fprintf(f,
                "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n"
                "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"20\" fill=\"%s\" "
                "opacity=\"0.3\"/>\n"
                "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"20\" fill=\"%s\"/>\n"
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"black\" "
                "stroke-width=\"2\"/>\n"
                "<text x=\"%.1f\" y=\"%d\" fill=\"#333\">%.0f / %.0f / %.0f</text>\n",
                left - 8, y + 15, kind_names[k], left, y, p95 * scale, color, left, y,
                s[k].trials_median * scale, color, left + max * scale, y - 2, left + max * scale,
                y + 22, left + max * scale + 6, y + 15, s[k].trials_median, s[k].trials_p95,
                s[k].trials_max);
    }
    fprintf(f, "</svg>\n");
    fclose(f);
}

static void json_summary(FILE *f, const char *name, const summary *s, int last)
{
    fprintf(f,
            "    \"%s\": {\"trials_median\": %g, \"trials_p95\": %g, \"trials_max\": %g, "
            "\"oom_trials_median\": %g, \"cost_median\": %.3f, \"exact_share\": %.4f, "
            "\"exact_share_noise_free\": %.4f, \"unsafe_share\": %.4f, \"accuracy_mean\": %.4f, "
            "\"failed\": %u}%s\n",
            name, s->trials_median, s->trials_p95, s->trials_max, s->oom_median,
            isnan(s->cost_median) ? 0.0 : s->cost_median, s->exact_share,
            isnan(s->exact_noise_free_share) ? 0.0 : s->exact_noise_free_share, s->unsafe_share,
            isnan(s->accuracy_mean) ? 0.0 : s->accuracy_mean, s->failed, last ? "" : ",");
}

static void trace_line(batchfit_log_level level, const char *message, void *userdata)
{
    (void)level;
    (void)userdata;
    printf("  %s\n", message);
}

/* --case F:I: one family case searched by model and bisect, every trial and
 * decision the search logs printed, for a person reading why it went so. */
static int trace_case(uint64_t seed, const char *which)
{
    unsigned f, i;
    char end;
    if (sscanf(which, "%u:%u%c", &f, &i, &end) != 2 || f >= BENCH_CASE_FAMILIES ||
        i >= CASES_PER_FAMILY) {
        fprintf(stderr, "bench: --case wants FAMILY:INDEX with FAMILY 0..%d and INDEX 0..%d, "
                        "not '%s'\n",
                BENCH_CASE_FAMILIES - 1, CASES_PER_FAMILY - 1, which);
        return 2;
    }
    bench_case c;
    bench_case_make(seed, f, i, &c);
    printf("case %u:%u (%s): budget %llu, truth %llu, first refused %llu, first over budget "
           "%llu\n",
           f, i, bench_case_family_name(f), (unsigned long long)c.budget,
           (unsigned long long)bench_case_exact(&c, BOUND),
           (unsigned long long)bench_case_first_refused(&c, BOUND),
           (unsigned long long)bench_case_first_over_budget(&c, BOUND));
    bench_case_set_log(trace_line, NULL);
    for (int k = 0; k < 2; k++) {
        bench_case_outcome o;
        printf("%s:\n", kind_names[LIB_MODEL + k]);
        if (bench_case_run(&c, (batchfit_strategy)(LIB_MODEL + k), BOUND, &o) != 0)
            return 1;
        printf("%s answers %llu in %u trials (%u oom)\n", kind_names[LIB_MODEL + k],
               (unsigned long long)o.answer, o.trials, o.ooms);
    }
    bench_case_set_log(NULL, NULL);
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t seed = 20261129;
    unsigned profiles = 300;
    const char *out = "bench";
    const char *batchfit = "build/batchfit";
    const char *trainer = "build/examples/trainer";
    const char *childtool = "build/tests/childtool";
    int real = 1, verbose = 0;
    const char *trace = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--profiles") == 0 && i + 1 < argc)
            profiles = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (strcmp(argv[i], "--batchfit") == 0 && i + 1 < argc)
            batchfit = argv[++i];
        else if (strcmp(argv[i], "--trainer") == 0 && i + 1 < argc)
            trainer = argv[++i];
        else if (strcmp(argv[i], "--childtool") == 0 && i + 1 < argc)
            childtool = argv[++i];
        else if (strcmp(argv[i], "--no-real") == 0)
            real = 0;
        else if (strcmp(argv[i], "--verbose") == 0)
            verbose = 1;
        else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc)
            trace = argv[++i];
        else {
            fprintf(stderr, "usage: bench [--seed N] [--profiles N] [--out DIR] [--no-real] [--verbose] "
                            "[--case FAMILY:INDEX] [--batchfit PATH] [--trainer PATH] [--childtool PATH]\n");
            return 2;
        }
    }
    if (trace)
        return trace_case(seed, trace);
    if (profiles == 0 || profiles > MAX_PROFILES) {
        fprintf(stderr, "bench: --profiles must be 1..%d\n", MAX_PROFILES);
        return 2;
    }
    unsigned per_family[16] = {0};
    double model_trials_family[16] = {0};
    for (unsigned i = 0; i < profiles; i++) {
        bench_profile prof;
        bench_profile_make(seed, i, &prof);
        outcome o[KIND_COUNT];
        uint64_t budget = 0;
        /* The truth needs the budget, which the first probe settles. */
        if (run_library(LIB_MODEL, &prof, 1.0, &budget, &o[LIB_MODEL]) != 0)
            return 1;
        uint64_t truth_exact = bench_profile_truth(&prof, budget, BOUND, 0.0);
        uint64_t truth_safe = bench_profile_truth(&prof, budget, BOUND, prof.noise);
        for (int k = 0; k < KIND_COUNT; k++) {
            int rc = k < PEER_ULTRA60 ? run_library((kind)k, &prof, (double)truth_exact, NULL, &o[k])
                                      : run_peer((kind)k, &prof, budget, (double)truth_exact, &o[k]);
            if (rc != 0)
                return 1;
            record((kind)k, &prof, budget, truth_exact, truth_safe, &o[k]);
        }
        for (int j = 0; j < PARALLEL_KS; j++) {
            outcome po;
            if (run_library_k(LIB_MODEL, parallel_ks[j], &prof, (double)truth_exact, NULL, &po) != 0)
                return 1;
            parallel_column *pc = &parallel_columns[j];
            pc->rounds[pc->count++] = po.rounds;
            pc->trials_total += po.trials;
            pc->failed += po.answer == 0;
            pc->mismatches += po.answer != o[LIB_MODEL].answer;
            pc->exact += po.answer && po.answer == truth_safe;
            pc->unsafe += po.answer && bench_profile_peak(&prof, po.answer, prof.noise) > budget;
            if (po.answer && o[LIB_MODEL].answer)
                pc->ratio_sum += (double)po.answer / (double)o[LIB_MODEL].answer;
            if (prof.noise == 0.0) {
                pc->noise_free++;
                pc->mismatches_noise_free += po.answer != o[LIB_MODEL].answer;
                pc->exact_noise_free += po.answer == truth_exact;
            }
            if (verbose && po.answer != o[LIB_MODEL].answer)
                printf("profile %u: K=%u answers %llu, K=1 %llu (truth %llu, noise %g)\n", i,
                       parallel_ks[j], (unsigned long long)po.answer,
                       (unsigned long long)o[LIB_MODEL].answer, (unsigned long long)truth_exact,
                       prof.noise);
        }
        if (verbose) {
            char spec[1024];
            bench_profile_spec(&prof, NULL, spec, sizeof spec);
            printf("profile %u: truth %llu (safe %llu), model %llu in %u trials (%u oom), "
                   "bisect %u: %s\n",
                   i, (unsigned long long)truth_exact, (unsigned long long)truth_safe,
                   (unsigned long long)o[LIB_MODEL].answer, o[LIB_MODEL].trials,
                   o[LIB_MODEL].ooms, o[LIB_BISECT].trials, spec);
        }
        size_t fam = i % bench_family_count();
        per_family[fam]++;
        model_trials_family[fam] += o[LIB_MODEL].trials;
    }
    summary s[KIND_COUNT];
    for (int k = 0; k < KIND_COUNT; k++)
        summarize((kind)k, &s[k]);
    double par_median[PARALLEL_KS], par_p95[PARALLEL_KS], par_max[PARALLEL_KS];
    for (int j = 0; j < PARALLEL_KS; j++) {
        parallel_column *pc = &parallel_columns[j];
        par_median[j] = bench_quantile(pc->rounds, pc->count, 0.5);
        par_p95[j] = bench_quantile(pc->rounds, pc->count, 0.95);
        par_max[j] = bench_quantile(pc->rounds, pc->count, 1.0);
    }
    if (run_families(seed, CASES_PER_FAMILY, verbose) != 0) {
        fprintf(stderr, "bench: a family case could not be searched\n");
        return 1;
    }

    static const char *const real_strategies[REAL_STRATEGIES] = {"model", "bisect", "binsearch"};
    real_run runs[REAL_PROGRAMS][REAL_STRATEGIES];
    memset(runs, 0, sizeof runs);
    int real_ok = 0;
    /* The PyTorch program only where the interpreter has PyTorch. */
    int real_count = REAL_PROGRAMS;
    if (real && system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
        real_count = REAL_TORCH;
        fprintf(stderr, "bench: /usr/bin/python3 has no PyTorch: the torch-decoder run is "
                        "skipped (scripts/install-deps.sh --test installs it)\n");
    }
    if (real) {
        real_ok = 1;
        const char *paths[REAL_PROGRAMS] = {trainer, childtool, childtool, childtool,
                                            "/usr/bin/python3"};
        for (int p = 0; p < real_count; p++)
            for (int i = 0; i < REAL_STRATEGIES; i++) {
                runs[p][i].strategy = real_strategies[i];
                if (run_real(batchfit, paths[p], &real_programs[p], &runs[p][i]) != 0) {
                    fprintf(stderr, "bench: the real-process run of %s with %s failed\n",
                            real_programs[p].key, runs[p][i].strategy);
                    real_ok = 0;
                }
            }
    }

    char path[4096];
    snprintf(path, sizeof path, "%s/results.json", out);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "bench: %s: %s\n", path, strerror(errno));
        return 1;
    }
    fprintf(f, "{\n  \"suite\": {\n");
    for (int k = 0; k < KIND_COUNT; k++)
        json_summary(f, kind_names[k], &s[k], k == KIND_COUNT - 1);
    fprintf(f, "  },\n  \"families\": {\n");
    for (unsigned fam = 0; fam < BENCH_CASE_FAMILIES; fam++) {
        fprintf(f, "    \"%s\": {\n", bench_case_family_name(fam));
        for (int k = 0; k < LIB_KINDS; k++) {
            const family_summary *fs = &family_results[fam][k];
            fprintf(f,
                    "      \"%s\": {\"trials_median\": %g, \"trials_p95\": %g, "
                    "\"trials_max\": %g, \"oom_trials_median\": %g, \"ratio_to_bisect_mean\": "
                    "%.4f, \"ratio_to_bisect_mean_where_bisect_is_no_trap\": %.4f, "
                    "\"cases_where_bisect_is_no_trap\": %u, "
                    "\"below_bisect_by_more_than_one_step\": %u, "
                    "\"below_bisect_where_the_draw_decides_at_most_one_size\": %u, "
                    "\"cases_where_the_draw_decides_at_most_one_size\": %u, "
                    "\"exact_share\": %.4f, \"unsafe\": %u, "
                    "\"above_a_smaller_size_that_can_run_out_of_memory\": %u, \"failed\": %u}%s\n",
                    kind_names[k], fs->trials_median, fs->trials_p95, fs->trials_max,
                    fs->oom_median, isnan(fs->ratio_mean) ? 0.0 : fs->ratio_mean,
                    isnan(fs->ratio_clear_mean) ? 0.0 : fs->ratio_clear_mean, fs->clear,
                    fs->below_bisect, fs->below_narrow, family_narrow[fam], fs->exact_share,
                    fs->unsafe, fs->gap_below, fs->failed, k == LIB_KINDS - 1 ? "" : ",");
        }
        fprintf(f, "    }%s\n", fam == BENCH_CASE_FAMILIES - 1 ? "" : ",");
    }
    fprintf(f, "  },\n  \"parallel\": {\n");
    for (int j = 0; j < PARALLEL_KS; j++) {
        const parallel_column *pc = &parallel_columns[j];
        fprintf(f,
                "    \"%u\": {\"rounds_median\": %g, \"rounds_p95\": %g, \"rounds_max\": %g, "
                "\"trials_total\": %.0f, \"answers_differing_from_k1\": %u, "
                "\"answers_differing_from_k1_noise_free\": %u, \"exact_noise_free\": %u, "
                "\"noise_free_profiles\": %u, \"exact_share\": %.4f, \"unsafe\": %u, "
                "\"answer_over_k1_mean\": %.4f, \"failed\": %u}%s\n",
                parallel_ks[j], par_median[j], par_p95[j], par_max[j], pc->trials_total,
                pc->mismatches, pc->mismatches_noise_free, pc->exact_noise_free, pc->noise_free,
                pc->count ? (double)pc->exact / pc->count : 0.0, pc->unsafe,
                pc->count - pc->failed ? pc->ratio_sum / (pc->count - pc->failed) : 0.0,
                pc->failed, j == PARALLEL_KS - 1 ? "" : ",");
    }
    fprintf(f, "  },\n  \"cases_per_family\": %d,\n  \"real\": {", CASES_PER_FAMILY);
    for (int p = 0; real_ok && p < real_count; p++)
        for (int i = 0; i < REAL_STRATEGIES; i++)
            fprintf(f,
                    "%s\n    \"%s %s\": {\"budget\": \"%s\", \"trials\": %llu, "
                    "\"wall_seconds\": %.2f, \"batch_size\": %llu}",
                    p || i ? "," : "", real_programs[p].key, runs[p][i].strategy,
                    real_programs[p].budget, runs[p][i].trials, runs[p][i].wall, runs[p][i].answer);
    fprintf(f, "%s},\n  \"profiles\": %u,\n  \"seed\": %llu,\n", real_ok ? "\n  " : "", profiles,
            (unsigned long long)seed);
    fprintf(f, "  \"cost_model\": \"a trial costs a start-up of %.1f steps at the true maximum "
               "plus one step per sample of its batch; an OOM trial %.1f of that; reported in "
               "steps at the answer\"\n}\n",
            STARTUP_STEPS, OOM_COST);
    fclose(f);

    snprintf(path, sizeof path, "%s/RESULTS.md", out);
    f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "bench: %s: %s\n", path, strerror(errno));
        return 1;
    }
    fprintf(f, "# Benchmark results\n\nProduced by `make bench` (seed %llu, %u profiles, bounds "
               "1..%d; every strategy on the same profiles in the same run).\n\n",
            (unsigned long long)seed, profiles, BOUND);
    fprintf(f, "| strategy | trials median | p95 | max | OOM trials median | cost median (steps) "
               "| exact | exact, noise-free | unsafe | mean answer / true max | no answer |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int k = 0; k < KIND_COUNT; k++)
        fprintf(f, "| %s | %g | %g | %g | %g | %.2f | %.1f%% | %.1f%% | %.1f%% | %.3f | %u |\n",
                kind_names[k], s[k].trials_median, s[k].trials_p95, s[k].trials_max,
                s[k].oom_median, isnan(s[k].cost_median) ? 0.0 : s[k].cost_median,
                100.0 * s[k].exact_share, 100.0 * s[k].exact_noise_free_share,
                100.0 * s[k].unsafe_share, s[k].accuracy_mean, s[k].failed);
    fprintf(f, "\nStrategies: ");
    for (int k = 0; k < KIND_COUNT; k++)
        fprintf(f, "%s%s (%s)", k ? "; " : "", kind_names[k], kind_notes[k]);
    fprintf(f, ".\n\nCost: a trial costs a start-up of %.1f steps at the true maximum plus one "
               "step per sample of its batch, an OOM trial %.1f of that; the table gives the "
               "total in steps at the answer. Exact: the answer equals the largest size that fits "
               "even at the top of the noise. Unsafe: the answer can exceed the budget when re-run "
               "under the profile's noise.\n\n",
            STARTUP_STEPS, OOM_COST);
    fprintf(f, "## Trials in parallel on K identical devices\n\nThe model strategy on the "
               "same %u profiles with `parallel = K`: each round proposes up to K sizes (the "
               "predicted boundary, the next size that certifies it, the geometric middles of the "
               "widest gaps left in the bracket; first a geometric spread from the minimum to the "
               "bound) and runs them at once, one per device. Rounds are the wall time in trials. Here the simulated "
               "device runs a round's trials one after another (the same draws as K devices "
               "would make). Differing: answers not equal to K = 1's on the same profile (noise "
               "draws depend on which sizes ran, so noisy profiles can differ); exact and unsafe "
               "as in the first table.\n\n"
               "| K | rounds median | p95 | max | total trials | differing from K = 1 | "
               "of them noise-free | exact, noise-free | exact | unsafe | mean answer / K = 1's | "
               "no answer |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|\n",
            profiles);
    for (int j = 0; j < PARALLEL_KS; j++) {
        const parallel_column *pc = &parallel_columns[j];
        fprintf(f, "| %u | %g | %g | %g | %.0f | %u | %u | %u / %u | %.1f%% | %u | %.4f | %u |\n",
                parallel_ks[j], par_median[j], par_p95[j], par_max[j], pc->trials_total,
                pc->mismatches, pc->mismatches_noise_free, pc->exact_noise_free, pc->noise_free,
                pc->count ? 100.0 * pc->exact / pc->count : 0.0, pc->unsafe,
                pc->count - pc->failed ? pc->ratio_sum / (pc->count - pc->failed) : 0.0,
                pc->failed);
    }
    fprintf(f, "\n");
    fprintf(f, "## Model strategy by family\n\n| family | profiles | mean trials | where the "
               "numbers come from |\n|---|---|---|---|\n");
    for (size_t k = 0; k < bench_family_count(); k++)
        fprintf(f, "| %s | %u | %.2f | %s |\n", bench_family_name(k), per_family[k],
                per_family[k] ? model_trials_family[k] / per_family[k] : 0.0,
                bench_family_source(k));
    fprintf(f, "\n## Families that model real processes\n\n%d cases a family, every batchfit "
               "strategy on each (the peers take no cache or estimate). Ratio: the answer over "
               "bisection's on the same case, under the same acceptance rule and the same noise "
               "draw (a draw depends only on the seed, the size and how often it ran). On the "
               "families searched as host probes (deterministic, replayed, shaped) a trial past "
               "the budget reads where the watchdog stopped it, the budget and up to 2%% more, as "
               "a host probe's child processes read; on the others, what it needed. Below: "
               "answers more than one lattice step below bisection's; in brackets, those among "
               "the cases where the draw decides at most one size (the wander spans less than "
               "two sizes at the threshold), and how many such cases there are: elsewhere "
               "acceptance is a coin toss across several sizes and each search ends on whichever "
               "accepted-then-rejected pair its own trials met. Exact: the largest size "
               "whose noise-free peak passes the acceptance threshold. Unsafe: the answer's peak "
               "can exceed the budget on some draw. Gap below: a smaller size's peak can exceed "
               "the budget on some draw (memory not monotone in the batch): the epoch's last, "
               "smaller batch or a recovery's smaller micro-batch can run out of memory under "
               "that answer. No trap: the mean ratio over the cases where bisection's answer lies above "
               "no trap, that is no smaller size whose peak can exceed the budget or exceeds the "
               "acceptance threshold on every draw (a search that stops at its first rejection "
               "cannot pass such a size), with how many cases that is.\n\n",
            CASES_PER_FAMILY);
    for (unsigned fam = 0; fam < BENCH_CASE_FAMILIES; fam++) {
        fprintf(f, "### %s\n\n%s.\n\n| strategy | trials median | p95 | max | OOM trials "
                   "median | mean answer / bisect's | no trap (cases) | below bisect | exact | unsafe | gap "
                   "below | no answer |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
                bench_case_family_name(fam), bench_case_family_source(fam));
        for (int k = 0; k < LIB_KINDS; k++) {
            const family_summary *fs = &family_results[fam][k];
            fprintf(f,
                    "| %s | %g | %g | %g | %g | %.4f | %.4f (%u) | %u (%u of %u) | %.1f%% | %u | %u "
                    "| %u |\n",
                    kind_names[k], fs->trials_median, fs->trials_p95, fs->trials_max,
                    fs->oom_median, isnan(fs->ratio_mean) ? 0.0 : fs->ratio_mean,
                    isnan(fs->ratio_clear_mean) ? 0.0 : fs->ratio_clear_mean, fs->clear,
                    fs->below_bisect, fs->below_narrow, family_narrow[fam],
                    100.0 * fs->exact_share, fs->unsafe, fs->gap_below, fs->failed);
        }
        fprintf(f, "\n");
    }
    if (real_ok) {
        fprintf(f, "\n## Real processes, default settings\n\n`batchfit probe --device host "
                   "--memory-budget B --strategy S --no-cache -- PROGRAM ARGS` (the host's "
                   "default 5%% spread)\n\n| program | budget | strategy | trials | batch size | "
                   "answer / bisect's | wall seconds |\n|---|---|---|---|---|---|---|\n");
        for (int p = 0; p < real_count; p++)
            for (int i = 0; i < REAL_STRATEGIES; i++)
                fprintf(f, "| %s | %s%s%s | %s | %llu | %llu | %.3f | %.2f |\n",
                        real_programs[p].label, real_programs[p].budget,
                        real_programs[p].options[0] ? ", " : "", real_programs[p].options,
                        runs[p][i].strategy, runs[p][i].trials,
                        runs[p][i].answer,
                        runs[p][1].answer ? (double)runs[p][i].answer / (double)runs[p][1].answer
                                          : 0.0,
                        runs[p][i].wall);
    }
    fclose(f);

    snprintf(path, sizeof path, "%s/trials.svg", out);
    write_svg(path, s);

    printf("%-20s %7s %5s %5s %5s %8s %7s %7s %7s\n", "strategy", "median", "p95", "max", "oom",
           "cost", "exact", "exactNF", "unsafe");
    for (int k = 0; k < KIND_COUNT; k++)
        printf("%-20s %7g %5g %5g %5g %8.2f %6.1f%% %6.1f%% %6.1f%%\n", kind_names[k],
               s[k].trials_median, s[k].trials_p95, s[k].trials_max, s[k].oom_median,
               isnan(s[k].cost_median) ? 0.0 : s[k].cost_median, 100.0 * s[k].exact_share,
               100.0 * s[k].exact_noise_free_share, 100.0 * s[k].unsafe_share);
    for (int j = 0; j < PARALLEL_KS; j++)
        printf("parallel K=%u rounds %g/%g/%g trials %.0f differing %u (noise-free %u) exactNF "
               "%u/%u exact %u unsafe %u ratio %.4f failed %u\n",
               parallel_ks[j], par_median[j], par_p95[j], par_max[j],
               parallel_columns[j].trials_total, parallel_columns[j].mismatches,
               parallel_columns[j].mismatches_noise_free, parallel_columns[j].exact_noise_free,
               parallel_columns[j].noise_free, parallel_columns[j].exact, parallel_columns[j].unsafe,
               parallel_columns[j].ratio_sum / (parallel_columns[j].count - parallel_columns[j].failed
                                                    ? parallel_columns[j].count - parallel_columns[j].failed
                                                    : 1),
               parallel_columns[j].failed);
    for (unsigned fam = 0; fam < BENCH_CASE_FAMILIES; fam++)
        for (int k = 0; k < LIB_KINDS; k++) {
            const family_summary *fs = &family_results[fam][k];
            printf("%-40s %-10s trials %g/%g/%g oom %g ratio %.4f (no trap %.4f of %u) below "
                   "%u (%u of %u) exact %.1f%% unsafe %u gap %u failed %u\n",
                   bench_case_family_name(fam), kind_names[k], fs->trials_median, fs->trials_p95,
                   fs->trials_max, fs->oom_median, fs->ratio_mean, fs->ratio_clear_mean, fs->clear,
                   fs->below_bisect,
                   fs->below_narrow, family_narrow[fam], 100.0 * fs->exact_share, fs->unsafe,
                   fs->gap_below, fs->failed);
        }
    for (int p = 0; real_ok && p < real_count; p++)
        for (int i = 0; i < REAL_STRATEGIES; i++)
            printf("real %-20s %-10s %llu trials, batch %llu, %.2f s\n", real_programs[p].key,
                   runs[p][i].strategy, runs[p][i].trials, runs[p][i].answer, runs[p][i].wall);
    printf("wrote %s/results.json, %s/RESULTS.md, %s/trials.svg\n", out, out, out);
    return 0;
}
