/* The benchmark's families that model real processes (bench/profiles.c),
 * on a subset of the cases make bench runs: what the model strategy holds
 * there today. make bench reports every family in full. */
#include "test.h"

#include "../bench/profiles.h"

#include <stdlib.h>

#define CASES 40

static int compare_unsigned(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return x < y ? -1 : x > y;
}

/* Every answer is safe under any draw, the model answers wherever
 * bisection does, and its search is bounded: never more than twice
 * bisection's trials (an unbounded creep toward the boundary once ran
 * stale-cache and far-off-estimate cases to the 40-trial limit). Returns
 * the median trials and median OOM trials. */
static void run_family(unsigned family, unsigned *trials_median, unsigned *oom_median)
{
    unsigned trials[CASES], ooms[CASES];
    for (unsigned i = 0; i < CASES; i++) {
        bench_case c;
        bench_case_make(20261129, family, i, &c);
        bench_case_outcome model, bisect;
        CHECK_EQ(bench_case_run(&c, BATCHFIT_STRATEGY_MODEL, 65536, &model), 0);
        CHECK_EQ(bench_case_run(&c, BATCHFIT_STRATEGY_BISECT, 65536, &bisect), 0);
        CHECK(bisect.answer >= 1);
        CHECK(model.answer >= 1);
        CHECK(bench_case_peak_max(&c, model.answer) <= c.budget);
        CHECK(model.trials <= 2 * bisect.trials);
        trials[i] = model.trials;
        ooms[i] = model.ooms;
    }
    qsort(trials, CASES, sizeof trials[0], compare_unsigned);
    qsort(ooms, CASES, sizeof ooms[0], compare_unsigned);
    *trials_median = trials[CASES / 2];
    *oom_median = ooms[CASES / 2];
}

TEST(bench_families_deterministic_safe)
{
    unsigned trials, ooms;
    run_family(BENCH_DETERMINISTIC, &trials, &ooms);
    CHECK_EQ(ooms, 0);
}

TEST(bench_families_replayed_pytorch_safe_without_oom)
{
    unsigned trials, ooms;
    run_family(BENCH_REPLAYED, &trials, &ooms);
    CHECK_EQ(ooms, 0);
}

TEST(bench_families_stale_cache_median_targets)
{
    unsigned trials, ooms;
    run_family(BENCH_STALE_CACHE, &trials, &ooms);
    CHECK(trials <= 4);
    CHECK(ooms <= 1);
}

TEST(bench_families_far_estimate_median_targets)
{
    unsigned trials, ooms;
    run_family(BENCH_FAR_ESTIMATE, &trials, &ooms);
    CHECK(trials <= 4);
    CHECK(ooms <= 1);
}

/* The replay is the measured data: at a measured size the peak is one of
 * the runs there (batch 64 of the default-malloc table peaks below 56's). */
TEST(bench_families_replay_reads_the_measured_runs)
{
    bench_case c;
    bench_case_make(20261129, BENCH_REPLAYED, 0, &c);
    c.replay = 0;
    CHECK_EQ(bench_case_peak_max(&c, 56), UINT64_C(964948) * 1024);
    CHECK_EQ(bench_case_peak_max(&c, 64), UINT64_C(758004) * 1024);
    /* Halfway between 96 and 128, halfway between their highest runs. */
    CHECK_EQ(bench_case_peak_max(&c, 112), (UINT64_C(974028) + UINT64_C(1149848)) * 512);
}
