/* The benchmark's families that model real processes (bench/profiles.c),
 * on a subset of the cases make bench runs: what the model strategy holds
 * there today (issue 10's targets where they are reached; where not, the
 * best reached, which the README's "Benchmarks" explains). make bench
 * reports every family in full. */
#include "test.h"

#include "../bench/profiles.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CASES 40
#define MAX_CASES 100 /* make bench's count */

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
typedef struct family_figures {
    unsigned trials_median, trials_p95, oom_median;
    unsigned trials_middle_sum; /* the two middle trial counts: twice make bench's median */
    double ratio_mean;          /* answer / bisection's on the same case */
} family_figures;

/* The first cases (at most MAX_CASES) of a family drawn from seed. */
static void run_family_cases(uint64_t seed, unsigned family, unsigned cases, family_figures *f)
{
    unsigned trials[MAX_CASES], ooms[MAX_CASES];
    double ratio = 0.0;
    for (unsigned i = 0; i < cases; i++) {
        bench_case c;
        bench_case_make(seed, family, i, &c);
        bench_case_outcome model, bisect;
        CHECK_EQ(bench_case_run(&c, BATCHFIT_STRATEGY_MODEL, 65536, &model), 0);
        CHECK_EQ(bench_case_run(&c, BATCHFIT_STRATEGY_BISECT, 65536, &bisect), 0);
        CHECK(bisect.answer >= 1);
        CHECK(model.answer >= 1);
        CHECK(bench_case_peak_max(&c, model.answer) <= c.budget);
        CHECK(model.trials <= 2 * bisect.trials);
        trials[i] = model.trials;
        ooms[i] = model.ooms;
        ratio += (double)model.answer / (double)bisect.answer;
    }
    qsort(trials, cases, sizeof trials[0], compare_unsigned);
    qsort(ooms, cases, sizeof ooms[0], compare_unsigned);
    f->trials_median = trials[cases / 2];
    f->trials_middle_sum = trials[(cases - 1) / 2] + trials[cases / 2];
    f->trials_p95 = trials[cases * 95 / 100 - 1];
    f->oom_median = ooms[cases / 2];
    f->ratio_mean = ratio / cases;
}

static void run_family(unsigned family, family_figures *f)
{
    run_family_cases(20261129, family, CASES, f);
}

/* make bench's 100 cases of a family on each of its three seeds: the worst
 * of each figure among them. */
static void run_family_every_seed(unsigned family, family_figures *worst)
{
    const uint64_t seeds[] = {20261129, 7, 12345};
    for (unsigned k = 0; k < 3; k++) {
        family_figures f;
        run_family_cases(seeds[k], family, MAX_CASES, &f);
        if (k == 0 || f.trials_middle_sum > worst->trials_middle_sum)
            worst->trials_middle_sum = f.trials_middle_sum;
        if (k == 0 || f.trials_p95 > worst->trials_p95)
            worst->trials_p95 = f.trials_p95;
        if (k == 0 || f.oom_median > worst->oom_median)
            worst->oom_median = f.oom_median;
        if (k == 0 || f.ratio_mean < worst->ratio_mean)
            worst->ratio_mean = f.ratio_mean;
    }
}

/* The bracket phase finds the boundary bisection finds: on this subset the
 * mean ratio is 0.997 (0.994-0.996 on make bench's 100 cases and three
 * seeds; the 0.995), in a median of 4 trials (the target;
 * it was 5 until a rise inside the declared band went as far as the band
 * allows and quiet scatter was read at the threshold's level) and a p95 of
 * 6 (the issue's; 6-6.05 on make bench's three seeds, see the README). */
TEST(bench_families_deterministic_close_to_bisection)
{
    family_figures f;
    run_family(BENCH_DETERMINISTIC, &f);
    CHECK_EQ(f.oom_median, 0);
    CHECK(f.ratio_mean >= 0.995);
    CHECK(f.trials_median <= 4);
    CHECK(f.trials_p95 <= 6);
}

/* The median on all of make bench's deterministic cases, on each of
 * three seeds: 4, 4, 4 (4.5 on the default seed while the largest residual
 * of three quiet points was read as the whole wander, not as one draw of
 * it: the fourth trial, carried tenfold, was often refused just over the
 * threshold, and a fifth found the size below; see relative_scatter). */
TEST(bench_families_deterministic_median_on_every_seed)
{
    family_figures worst;
    run_family_every_seed(BENCH_DETERMINISTIC, &worst);
    CHECK(worst.trials_middle_sum <= 8);
}

TEST(bench_families_replayed_pytorch_safe_without_oom)
{
    family_figures f;
    run_family(BENCH_REPLAYED, &f);
    CHECK_EQ(f.oom_median, 0);
    CHECK(f.ratio_mean >= 0.95);
    CHECK(f.trials_median <= 5); /* 4 on make bench's 100 cases on two seeds of three */
    CHECK(f.trials_p95 <= 8);
}

/* The targets where the search starts from a remembered answer or
 * a first guess, besides the median: at most 1 OOM trial in the median, p95
 * at most p95, and a mean ratio of at least 0.99. */
static void check_guess_targets(const family_figures *f, unsigned p95)
{
    CHECK(f->oom_median <= 1);
    CHECK(f->trials_p95 <= p95);
    CHECK(f->ratio_mean >= 0.99);
}

/* The remembered curve is what an earlier probe stored (a line fitted
 * through its draws and jumps); p95 5-6 on make bench's 100 cases. */
TEST(bench_families_stale_cache_targets)
{
    family_figures f;
    run_family(BENCH_STALE_CACHE, &f);
    CHECK(f.trials_median <= 4);
    check_guess_targets(&f, 6);
}

TEST(bench_families_far_estimate_targets)
{
    family_figures f;
    run_family(BENCH_FAR_ESTIMATE, &f);
    CHECK(f.trials_median <= 4);
    check_guess_targets(&f, 6);
}

/* The same estimates on the host, as a user gives one there: failures read
 * where the watchdog stopped them (about the budget), so after an estimate
 * too large they say only "smaller". On make bench's 100 cases, each of
 * three seeds: the median (4) and median OOM trials (at most 1);
 * p95 6.05-7, over the 6 (the README says why). */
TEST(bench_families_far_estimate_on_the_host_targets)
{
    family_figures worst;
    run_family_every_seed(BENCH_FAR_ESTIMATE_HOST, &worst);
    CHECK(worst.trials_middle_sum <= 8);
    check_guess_targets(&worst, 7);
}

/* A trial past the budget reads as a child process's does: on the host the
 * watchdog stops it a sample past the budget, and its reading is where it
 * was stopped, not what it needed (the families read the whole need until
 * 2026-12-04, which no host probe sees); elsewhere a framework's message
 * says what it needed. */
TEST(bench_families_host_failures_read_where_the_watchdog_stopped_them)
{
    bench_case c;
    bench_case_make(20261129, BENCH_DETERMINISTIC, 0, &c);
    CHECK(c.host);
    uint64_t over = bench_case_first_over_budget(&c, 65536);
    CHECK(over > 1);
    /* Twice the first size over the budget needs far more than 2% past it. */
    for (unsigned repeat = 0; repeat < 3; repeat++) {
        batchfit_trial t;
        memset(&t, 0, sizeof t);
        bench_case_read(&c, 2 * over, repeat, &t);
        CHECK_EQ(t.outcome, BATCHFIT_OOM);
        CHECK(t.process.watchdog_stopped);
        CHECK(t.peak_bytes >= c.budget);
        CHECK((double)t.peak_bytes <= (double)c.budget * (1.0 + WATCHDOG_PAST));
        CHECK_EQ(t.process.watchdog_overshoot_bytes, t.peak_bytes - c.budget);
    }
    batchfit_trial t;
    memset(&t, 0, sizeof t);
    bench_case_read(&c, 1, 0, &t);
    CHECK_EQ(t.outcome, BATCHFIT_FITS);
    CHECK(!t.process.watchdog_stopped);
    /* Not on the host: the whole need. */
    c.host = 0;
    memset(&t, 0, sizeof t);
    bench_case_read(&c, 2 * over, 0, &t);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK(!t.process.watchdog_stopped);
    CHECK((double)t.peak_bytes > (double)c.budget * (1.0 + WATCHDOG_PAST));
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

/* A trap for the ratio's "no trap" column: under a budget of 960 MiB the
 * default-malloc runs at 56 (879-942 MiB) all exceed the acceptance
 * threshold (960 x 0.95 / 1.05 = 868.6 MiB) and none exceeds the budget, so
 * 56 is the first size refused on every draw, well before 98, the first
 * whose peak can exceed the budget (96's and 128's highest runs, 951 and
 * 1123 MiB, interpolated). */
TEST(bench_families_first_refused_size_of_the_dip)
{
    bench_case c;
    bench_case_make(20261129, BENCH_REPLAYED, 0, &c);
    c.replay = 0;
    c.declared = 0.05;
    c.budget = UINT64_C(960) << 20;
    CHECK_EQ(bench_case_first_refused(&c, 65536), 56);
    CHECK_EQ(bench_case_first_over_budget(&c, 65536), 98);
    /* A lower budget moves both below 48: 800 MiB, the highest runs at 40
     * and 48 interpolated cross it at 45. */
    c.budget = UINT64_C(800) << 20;
    CHECK_EQ(bench_case_first_refused(&c, 65536), 45);
    CHECK_EQ(bench_case_first_over_budget(&c, 65536), 45);
}

/* Where the model's points show memory falling as the batch grows (the
 * default-malloc runs: 58 read 885 MiB, 60 read 801), the curve above the
 * fall is searched on its own points, and the answer says memory falls
 * there. Read as scatter, the fall stopped the search at the first size
 * past it: 60, 64, 83 where bisection (no trap there) found 91, 96, 96
 * (six of the eight such cases of seeds 7 and 12345 ended at 0.64-0.89 of
 * bisection's answer, the other two at 0.92 and 0.98 as now). Now
 * each is within 10% of bisection's answer (a coin-toss stop under the
 * replayed runs' own 5-8% scatter ends 87 where bisection drew 95) and
 * within 2% on their mean (0.985). */
TEST(bench_families_replayed_a_fall_is_searched_past)
{
    const uint64_t seeds[] = {7, 12345};
    unsigned warned = 0;
    double ratio = 0.0;
    for (unsigned k = 0; k < 2; k++)
        for (unsigned i = 0; i < 100; i++) {
            bench_case c;
            bench_case_make(seeds[k], BENCH_REPLAYED, i, &c);
            bench_case_outcome model, bisect;
            CHECK_EQ(bench_case_run(&c, BATCHFIT_STRATEGY_MODEL, 65536, &model), 0);
            if (!model.not_monotone)
                continue;
            warned++;
            CHECK_EQ(bench_case_run(&c, BATCHFIT_STRATEGY_BISECT, 65536, &bisect), 0);
            CHECK(bench_case_peak_max(&c, model.answer) <= c.budget);
            CHECK((double)model.answer >= 0.9 * (double)bisect.answer);
            ratio += (double)model.answer / (double)bisect.answer;
        }
    CHECK(warned >= 6);
    CHECK(warned && ratio / warned >= 0.98);
}

/* The default-malloc runs rise to a hump at 56 (879-942 MiB) and fall to
 * ~715 MiB at 64. Where bisection's answer above the fall is no trap, a
 * search that stops on a coin toss below the hump gives away 30-45% of the
 * batch; on the host it first looks at 1.25 lo (unless its points are
 * quiet and lie on their line). On seeds 20261129 and 7, such losses (an
 * answer under 0.7 of bisection's where bisection's is no trap) were 8
 * before the sixth session, 7 once a fall starts another curve, 6 with the
 * look above on non-quiet points only, and are 4 now: in all four the
 * hump's top was refused over the threshold (a bracket, above which no
 * search looks). */
TEST(bench_families_replayed_on_the_host_looks_past_the_hump)
{
    const uint64_t seeds[] = {20261129, 7};
    unsigned short_of_the_dip = 0;
    for (unsigned k = 0; k < 2; k++)
        for (unsigned i = 0; i < 100; i++) {
            bench_case c;
            bench_case_make(seeds[k], BENCH_REPLAYED, i, &c);
            CHECK(c.host);
            bench_case_outcome model, bisect;
            CHECK_EQ(bench_case_run(&c, BATCHFIT_STRATEGY_MODEL, 65536, &model), 0);
            CHECK_EQ(bench_case_run(&c, BATCHFIT_STRATEGY_BISECT, 65536, &bisect), 0);
            uint64_t trap = bench_case_first_refused(&c, 65536);
            if ((trap == 0 || bisect.answer < trap) &&
                (double)model.answer < 0.7 * (double)bisect.answer)
                short_of_the_dip++;
        }
    CHECK(short_of_the_dip <= 4);
}

/* Curves a line does not fit (bench/profiles.c): the model strategy's
 * answers are safe and as large as bisection's to within 1% on the mean,
 * but it searches them in more trials than the other families take
 * (median 7.5-9, p95 15-17 on make bench's 100 cases and six seeds;
 * bisection 16; an arena that doubles is a step function, which only
 * bisecting its bracket can place): what is asserted here is what holds
 * today, not the targets, which this family does not meet (the
 * README's "Benchmarks" says so). */
TEST(bench_families_shaped_curves_safe_and_bounded)
{
    family_figures f;
    run_family(BENCH_SHAPED, &f);
    CHECK(f.oom_median <= 1);
    CHECK(f.ratio_mean >= 0.99);
    /* Today's figures on this subset (median 8, p95 17; median 10 before
     * smooth bends were followed): a bound against getting worse, not the
     * issue's targets. */
    CHECK(f.trials_median <= 8);
    CHECK(f.trials_p95 <= 17);
}

/* Each shape bends the way its name says, through the profile's own fixed
 * memory: flat up to the pool, steps of whole chunks, an arena that
 * doubles, a square term that steepens, a power under one that flattens. */
TEST(bench_families_shaped_curves_bend)
{
    for (unsigned i = 0; i < 10; i++) {
        bench_case c;
        bench_case_make(20261129, BENCH_SHAPED, i, &c);
        c.wander = 0.0;
        uint64_t a = (uint64_t)c.shape_a;
        uint64_t at1 = bench_case_peak_max(&c, 1);
        switch (c.shape) {
        case BENCH_SHAPE_POOL:
            CHECK(a >= 2);
            CHECK_EQ(bench_case_peak_max(&c, a), at1);
            CHECK(bench_case_peak_max(&c, a + 8) > at1);
            break;
        case BENCH_SHAPE_CHUNKS:
            CHECK_EQ(bench_case_peak_max(&c, a), at1);
            CHECK(bench_case_peak_max(&c, a + 1) > at1);
            CHECK_EQ(bench_case_peak_max(&c, 2 * a), bench_case_peak_max(&c, a + 1));
            break;
        case BENCH_SHAPE_DOUBLING: {
            /* Each level the arena leaves adds what it held: a, then 2a. */
            double granule = (double)c.profile.granule, rise[2] = {0.0, 0.0};
            uint64_t level = at1;
            unsigned k = 0;
            for (uint64_t x = 2; x < 65536 && k < 2; x++) {
                uint64_t peak = bench_case_peak_max(&c, x);
                if (peak != level) {
                    rise[k++] = (double)(peak - level);
                    level = peak;
                }
            }
            CHECK_EQ(k, 2);
            CHECK(fabs(rise[0] - c.shape_a) <= 2.0 * granule);
            CHECK(fabs(rise[1] - 2.0 * c.shape_a) <= 2.0 * granule);
            break;
        }
        case BENCH_SHAPE_SQUARE: {
            /* Two steps of w sizes differ by the square term's second
             * difference, 2 w^2 shape_a (granules aside): a line has none.
             * w is half the answer, where the term is 20-200% of the
             * linear one. */
            double granule = (double)c.profile.granule;
            uint64_t w = bench_case_exact(&c, 65536) / 2;
            double first = (double)(bench_case_peak_max(&c, 1 + w) - at1);
            double second =
                (double)(bench_case_peak_max(&c, 1 + 2 * w) - bench_case_peak_max(&c, 1 + w));
            double bend = 2.0 * (double)w * (double)w * c.shape_a;
            CHECK(fabs(second - first - bend) <= 4.0 * granule);
            CHECK(bend > 8.0 * granule);
            break;
        }
        case BENCH_SHAPE_SUBLINEAR:
            CHECK(bench_case_peak_max(&c, 200) - bench_case_peak_max(&c, 100) <
                  bench_case_peak_max(&c, 100) - bench_case_peak_max(&c, 1));
            break;
        default:
            CHECK(0);
        }
    }
}

/* Memory growing as B^0.5-0.85 (the shaped family's fifth of sublinear
 * curves): five points on the curve a + b B^p within the quiet cut are read
 * as that curve (lib/search.c, smooth_bend), not as a line with the
 * declared spread's scatter. On seeds 20261129 and 7 (40 cases) the model
 * took a median of 10 trials here before (p95 12, ratio 0.9992); now 7
 * (p95 10), its answers safe and 0.9987 of bisection's on the mean. */
TEST(bench_families_sublinear_curves_are_followed)
{
    const uint64_t seeds[] = {20261129, 7};
    unsigned trials[40], n = 0;
    double ratio = 0.0;
    for (unsigned k = 0; k < 2; k++)
        for (unsigned i = 0; i < 100; i++) {
            bench_case c;
            bench_case_make(seeds[k], BENCH_SHAPED, i, &c);
            if (c.shape != BENCH_SHAPE_SUBLINEAR)
                continue;
            bench_case_outcome model, bisect;
            CHECK_EQ(bench_case_run(&c, BATCHFIT_STRATEGY_MODEL, 65536, &model), 0);
            CHECK_EQ(bench_case_run(&c, BATCHFIT_STRATEGY_BISECT, 65536, &bisect), 0);
            CHECK(bench_case_peak_max(&c, model.answer) <= c.budget);
            CHECK(n < 40);
            if (n < 40)
                trials[n++] = model.trials;
            ratio += (double)model.answer / (double)bisect.answer;
        }
    CHECK_EQ(n, 40);
    qsort(trials, n, sizeof trials[0], compare_unsigned);
    CHECK(trials[n / 2] <= 7);
    CHECK(ratio / n >= 0.995);
}
