/* Curves the model strategy was not tuned on: random lines with workspace
 * jumps, pools flat up to an edge and gentle rises, under a relative wander
 * of 0 to 2% of the peak, searched through the public batchfit_search() with
 * an oracle of its own (not the simulated device, not bench/profiles.c's
 * generator, not the families make bench reports). Out-of-memory trials are
 * what a child process's watchdog reports: stopped at the budget, the
 * reading the budget itself. Every case is searched by the model strategy
 * and by bisection under the same declared spread (the host's 5%) and the
 * same draws; writes a Markdown table per seed and wander level.
 *
 *   curves [--seed N] [--seeds K] [--cases N] [--out FILE] */
#include "profiles.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)
#define BOUND 65535u
#define SPREAD 0.05

static const double wanders[] = {0.0, 0.0003, 0.001, 0.003, 0.02};
#define WANDER_COUNT (sizeof wanders / sizeof wanders[0])

typedef struct curve {
    double capacity, fixed, per_sample;
    double jump_at[2], jump_bytes[2];
    double flat_until; /* memory does not grow with the batch up to here */
    double wander;     /* relative, drawn in [0, wander] */
    int fresh;         /* 1: a new draw on every run of a size; 0: one draw a size */
    uint64_t seed;
    unsigned runs[BOUND + 1];
} curve;

/* splitmix64's output for a state: a hash of x. */
static uint64_t mix(uint64_t x)
{
    return bench_splitmix64(&x);
}

static double uniform(uint64_t *state)
{
    *state = mix(*state);
    return (double)(*state >> 11) * 0x1.0p-53;
}

static double peak(const curve *c, uint64_t batch, unsigned run)
{
    double grown = (double)batch > c->flat_until ? (double)batch - c->flat_until : 0.0;
    double bytes = c->fixed + c->per_sample * grown;
    for (int j = 0; j < 2; j++)
        if (c->jump_bytes[j] > 0.0 && (double)batch >= c->jump_at[j])
            bytes += c->jump_bytes[j];
    uint64_t draw = mix(c->seed ^ mix(batch ^ ((uint64_t)(c->fresh ? run + 1 : 0) << 40)));
    bytes *= 1.0 + c->wander * (double)(draw >> 11) * 0x1.0p-53;
    return floor(bytes / 4096.0) * 4096.0; /* the kernel counts pages */
}

static int trial(void *userdata, uint64_t batch, batchfit_trial *t)
{
    curve *c = userdata;
    unsigned run = batch <= BOUND ? c->runs[batch]++ : 0;
    double bytes = peak(c, batch, run);
    t->peak_known = 1;
    if (bytes > c->capacity) {
        t->outcome = BATCHFIT_OOM;
        t->peak_bytes = (uint64_t)c->capacity;
        t->process.ran = 1;
        t->process.watchdog_stopped = 1;
        return 0;
    }
    t->outcome = BATCHFIT_FITS;
    t->peak_bytes = (uint64_t)bytes;
    return 0;
}

typedef struct outcome {
    uint64_t answer;
    unsigned trials, ooms;
} outcome;

static int search(curve *c, batchfit_strategy strategy, outcome *out)
{
    memset(c->runs, 0, sizeof c->runs);
    batchfit_ctx *ctx = NULL;
    int rc = batchfit_ctx_create(NULL, &ctx);
    if (rc != BATCHFIT_OK)
        return rc;
    batchfit_options o;
    batchfit_options_init(&o);
    o.strategy = strategy;
    o.requested_max = BOUND;
    batchfit_result *r = NULL;
    rc = batchfit_decide(ctx, &o, 0, &r);
    if (rc == BATCHFIT_OK) {
        r->budget.known = 1;
        r->budget.budget_bytes = (uint64_t)c->capacity;
        r->budget.peak_spread = SPREAD;
        rc = batchfit_search(ctx, &o, trial, c, r);
    }
    if (rc == BATCHFIT_OK) {
        out->answer = r->batch_size;
        out->trials = (unsigned)r->trial_count;
        out->ooms = (unsigned)r->oom_trials;
    }
    batchfit_result_free(r);
    batchfit_ctx_free(ctx);
    return rc;
}

/* A case: a host (2-32 GiB) or GPU (8-138 GiB) budget, fixed memory 3-53%
 * of it, an answer log-uniform in 2..30000 without the extras; on GPUs two
 * chances in five of each of two workspaces (0.5-3.5% of the device)
 * anywhere up to 1.3 times that answer; one case in seven flat up to a
 * random size below half of it. The minimum must pass the threshold. */
static void make_curve(uint64_t *state, double wander, curve *c)
{
    for (;;) {
        memset(c, 0, offsetof(curve, runs));
        int host = uniform(state) < 0.3;
        c->capacity = (host ? 2.0 + 30.0 * uniform(state) : 8.0 + 130.0 * uniform(state)) * GIB;
        c->fixed = c->capacity * (0.03 + 0.5 * uniform(state));
        double answer = exp(log(2.0) + uniform(state) * (log(30000.0) - log(2.0)));
        c->per_sample = (c->capacity - c->fixed) / answer;
        for (int j = 0; j < 2 && !host; j++)
            if (uniform(state) < 0.4) {
                c->jump_at[j] = 1.0 + uniform(state) * 1.3 * answer;
                c->jump_bytes[j] = (0.005 + 0.03 * uniform(state)) * c->capacity;
            }
        if (uniform(state) < 0.15)
            c->flat_until = uniform(state) * 0.5 * answer;
        c->wander = wander;
        c->fresh = uniform(state) < 0.5;
        c->seed = mix(*state);
        if (peak(c, 1, 0) * (1.0 + wander) <= c->capacity * (1.0 - SPREAD) / (1.0 + SPREAD))
            return;
    }
}

int main(int argc, char **argv)
{
    uint64_t first_seed = 1;
    unsigned seeds = 3, cases = 200;
    const char *out_path = "bench/CURVES.md";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            first_seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc)
            seeds = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc)
            cases = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out_path = argv[++i];
        else {
            fprintf(stderr, "usage: curves [--seed N] [--seeds K] [--cases N] [--out FILE]\n");
            return 2;
        }
    }
    if (seeds == 0 || cases == 0 || cases > 100000) {
        fprintf(stderr, "curves: --seeds and --cases must be positive (--cases at most 100000)\n");
        return 2;
    }
    FILE *out = fopen(out_path, "w");
    if (!out) {
        perror(out_path);
        return 1;
    }
    double *trials = malloc(cases * sizeof *trials), *ooms = malloc(cases * sizeof *ooms);
    double *bisect_trials = malloc(cases * sizeof *bisect_trials);
    curve *c = malloc(sizeof *c);
    if (!trials || !ooms || !bisect_trials || !c) {
        fprintf(stderr, "curves: out of memory\n");
        fclose(out);
        free(trials), free(ooms), free(bisect_trials), free(c);
        return 1;
    }
    fprintf(out, "# Curves the model strategy was not tuned on\n\n"
                 "Produced by `make bench` (`build/bench/curves`, bench/curves.c): %u cases a seed "
                 "and wander level, model and bisection on each under the host's 5%% spread; "
                 "out-of-memory trials stopped by a watchdog at the budget.\n\n",
            cases);
    fprintf(out, "| seed | wander | model trials median / p95 / max | model OOM trials median / "
                 "p95 | bisect trials median / p95 | mean answer / bisect's |\n"
                 "|---|---|---|---|---|---|\n");
    int status = 0;
    double model_total = 0.0, oom_total = 0.0, bisect_total = 0.0;
    for (unsigned k = 0; k < seeds && status == 0; k++) {
        uint64_t seed = first_seed + k;
        for (size_t w = 0; w < WANDER_COUNT && status == 0; w++) {
            uint64_t state = mix(seed * 1000 + w);
            double ratio = 0.0;
            for (unsigned i = 0; i < cases; i++) {
                make_curve(&state, wanders[w], c);
                outcome m, b;
                if (search(c, BATCHFIT_STRATEGY_MODEL, &m) != BATCHFIT_OK ||
                    search(c, BATCHFIT_STRATEGY_BISECT, &b) != BATCHFIT_OK || b.answer == 0) {
                    fprintf(stderr, "curves: seed %llu, wander %g, case %u: no answer\n",
                            (unsigned long long)seed, wanders[w], i);
                    status = 1;
                    break;
                }
                trials[i] = m.trials;
                ooms[i] = m.ooms;
                bisect_trials[i] = b.trials;
                model_total += m.trials;
                oom_total += m.ooms;
                bisect_total += b.trials;
                ratio += (double)m.answer / (double)b.answer;
            }
            if (status)
                break;
            fprintf(out, "| %llu | %.2f%% | %g / %g / %g | %g / %g | %g / %g | %.4f |\n",
                    (unsigned long long)seed, 100.0 * wanders[w], bench_quantile(trials, cases, 0.5),
                    bench_quantile(trials, cases, 0.95), bench_quantile(trials, cases, 1.0),
                    bench_quantile(ooms, cases, 0.5), bench_quantile(ooms, cases, 0.95),
                    bench_quantile(bisect_trials, cases, 0.5),
                    bench_quantile(bisect_trials, cases, 0.95), ratio / cases);
        }
    }
    if (status == 0)
        fprintf(out, "\nIn all: the model ran %.0f trials (%.0f out of memory), bisection %.0f.\n",
                model_total, oom_total, bisect_total);
    if (fclose(out) != 0 && status == 0) {
        fprintf(stderr, "curves: cannot write %s\n", out_path);
        status = 1;
    }
    if (status == 0)
        printf("wrote %s\n", out_path);
    free(trials), free(ooms), free(bisect_trials), free(c);
    return status;
}
