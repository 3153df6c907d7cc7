/* Regression tests for the faults of issue #11 in child trials: each runs a
 * real child process under real kernel accounting and fails on the code
 * before its fix. */
#include "test.h"
#include "child_helpers.h"

#include <stdlib.h>
#include <time.h>

/* #12: an OOM signature is found wherever a long line's 4095-byte window
 * boundary falls inside it, on either side. */
TEST(child_oom_signature_split_at_the_line_window_is_found)
{
    /* A signature only one row matches, and only whole. */
    static const char signature[] = "CUBLAS_STATUS_ALLOC_FAILED";
    const long boundary = 4095;
    const long len = (long)sizeof signature - 1;
    for (long prefix = boundary - len + 1; prefix < boundary; prefix += 3) {
        char count[32];
        snprintf(count, sizeof count, "%ld", prefix);
        batchfit__runner_options o;
        batchfit__runner_options_init(&o);
        o.cgroups = BATCHFIT_CGROUPS_OFF;
        const char *argv[] = {tool(), "long", count, signature, "1", NULL};
        batchfit_trial t;
        CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
        CHECK_EQ(t.outcome, BATCHFIT_OOM);
        CHECK_STR(t.process.oom_signature, "cuBLAS");
    }
    /* Far into a very long line too, and the tail keeps one entry for it. */
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.cgroups = BATCHFIT_CGROUPS_OFF;
    const char *argv[] = {tool(), "long", "20000", signature, "1", NULL};
    batchfit_trial t;
    CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK(strchr(t.process.tail, '\n') == strrchr(t.process.tail, '\n'));
}

/* #13: an interval of a second or more is a valid timespec... */
TEST(child_sleep_interval_is_a_valid_timespec)
{
    static const double seconds[] = {0.0, -1.0, 1e-9, 0.02, 0.999999999, 1.0, 1.5, 2.0, 1000.0,
                                     1e30};
    for (size_t i = 0; i < sizeof seconds / sizeof seconds[0]; i++) {
        struct timespec ts;
        batchfit__timespec_from_seconds(seconds[i], &ts);
        CHECK(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);
        CHECK(ts.tv_sec >= 0);
    }
    struct timespec ts;
    batchfit__timespec_from_seconds(1.5, &ts);
    CHECK_EQ(ts.tv_sec, 1);
    CHECK_EQ(ts.tv_nsec, 500000000L);
    batchfit__timespec_from_seconds(0.02, &ts);
    CHECK_EQ(ts.tv_sec, 0);
    CHECK_NEAR(ts.tv_nsec, 20000000L, 1);
}

/* ...and the watch loop of a child that closed its output waits between
 * samples rather than spinning: a 1.2 s trial sampled every second wakes
 * a handful of times (the spinning loop woke millions of times). */
TEST(child_long_sample_interval_does_not_spin)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.cgroups = BATCHFIT_CGROUPS_OFF;
    o.sample_interval = 1.0;
    const char *argv[] = {tool(), "quiet", "1200", NULL};
    o.argv = argv;
    batchfit__runner *r = NULL;
    batchfit_trial t;
    CHECK_EQ(batchfit__runner_create(ctx, &o, &r), BATCHFIT_OK);
    CHECK_EQ(batchfit__runner_trial(r, 1, &t), BATCHFIT_OK);
    unsigned long wakeups = batchfit__runner_wakeups(r);
    batchfit__runner_free(r);
    batchfit_ctx_free(ctx);
    CHECK_EQ(t.outcome, BATCHFIT_FITS);
    CHECK(wakeups >= 2);
    CHECK(wakeups <= 10);
}
