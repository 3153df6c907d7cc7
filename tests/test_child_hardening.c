/* Regression tests for the faults of issue #11 in child trials: each runs a
 * real child process under real kernel accounting and fails on the code
 * before its fix. */
#include "test.h"
#include "child_helpers.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
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

/* Starts `childtool sleepers n` outside our process tree (our children
 * count as a trial's orphans): a double fork with the subreaper flag off,
 * so the spawner is reparented above us. Returns the pipe whose closing
 * ends it, or -1; *out_fd is where it says "ready" and, at its end, EOF. */
static int sleepers_start(long n, int *out_fd)
{
    int in[2], out[2];
    if (pipe(in) != 0)
        return -1;
    if (pipe(out) != 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    /* Only the spawner gets them, as its stdin and stdout. */
    for (int i = 0; i < 2; i++) {
        fcntl(in[i], F_SETFD, FD_CLOEXEC);
        fcntl(out[i], F_SETFD, FD_CLOEXEC);
    }
    int was_subreaper = 0;
    prctl(PR_GET_CHILD_SUBREAPER, &was_subreaper, 0, 0, 0);
    prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    pid_t middle = fork();
    if (middle == 0) {
        if (fork() == 0) {
            char count[32];
            snprintf(count, sizeof count, "%ld", n);
            dup2(in[0], 0);
            dup2(out[1], 1);
            execl(tool(), tool(), "sleepers", count, (char *)NULL);
            _exit(127);
        }
        _exit(0);
    }
    if (middle > 0)
        waitpid(middle, NULL, 0);
    prctl(PR_SET_CHILD_SUBREAPER, was_subreaper, 0, 0, 0);
    close(in[0]);
    close(out[1]);
    *out_fd = out[0];
    return in[1];
}

/* #11: with more than 4096 other processes on the host (the old walk's
 * cap), the watchdog without a cgroup still sees the trial and its
 * daemonised grandchildren are still killed. */
TEST(child_process_walk_has_no_fixed_cap)
{
    int out_fd = -1;
    int stop_fd = sleepers_start(4150, &out_fd);
    CHECK(stop_fd >= 0);
    char ready[64] = "";
    ssize_t got = read(out_fd, ready, sizeof ready - 1);
    ready[got > 0 ? got : 0] = '\0';
    char pidfile[256];
    tmp_path(pidfile, sizeof pidfile, "crowded");
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.cgroups = BATCHFIT_CGROUPS_OFF;
    o.budget_bytes = UINT64_C(50) << 20;
    const char *grow[] = {tool(), "alloc", "400", NULL};
    batchfit_trial stopped, daemons;
    int rc_stopped = trial(&o, grow, 1, &stopped);
    const char *fork4[] = {tool(), "grandchildren", "4", pidfile, NULL};
    o.budget_bytes = 0;
    int rc_daemons = trial(&o, fork4, 1, &daemons);
    int count = 0, live = live_pids(pidfile, &count);
    unlink(pidfile);
    /* Closing the pipe ends the sleepers; EOF says they are gone. */
    close(stop_fd);
    char drain[64];
    while (read(out_fd, drain, sizeof drain) > 0)
        ;
    close(out_fd);
    CHECK_CONTAINS(ready, "ready 4150");
    CHECK_EQ(rc_stopped, BATCHFIT_OK);
    CHECK_EQ(stopped.outcome, BATCHFIT_OOM);
    CHECK(stopped.process.watchdog_stopped);
    CHECK_EQ(rc_daemons, BATCHFIT_OK);
    CHECK_EQ(count, 4);
    CHECK_EQ(live, 0);
}

/* Whether trials get a cgroup here, and with --enforce a cgroup cap. */
static int have_cgroup_cap(void)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    const char *argv[] = {tool(), "exit", "0", NULL};
    o.argv = argv;
    o.enforce = 1;
    batchfit__runner *r = NULL;
    int yes = batchfit__runner_create(ctx, &o, &r) == BATCHFIT_OK &&
              strstr(batchfit__runner_mechanisms(r), "hard cap: cgroup") != NULL;
    batchfit__runner_free(r);
    batchfit_ctx_free(ctx);
    return yes;
}

/* #4: a trial that streams a file three times the budget through the page
 * cache, holding a few MiB itself, fits: page cache is not trial memory,
 * for the watchdog, the peak and the cgroup cap alike. */
TEST(child_page_cache_is_not_trial_memory)
{
    char file[1024];
    snprintf(file, sizeof file, "%s/tests/stream-%ld.tmp", test_build_dir(), (long)getpid());
    for (int enforce = 0; enforce < 2; enforce++) {
        batchfit__runner_options o;
        batchfit__runner_options_init(&o);
        o.budget_bytes = UINT64_C(64) << 20;
        o.enforce = enforce;
        o.enforce_bytes = o.budget_bytes;
        const char *argv[] = {tool(), "stream", file, "192", NULL};
        batchfit_trial t;
        CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
        CHECK_STR(t.message, "");
        CHECK_EQ(t.outcome, BATCHFIT_FITS);
        CHECK(!t.process.watchdog_stopped);
        CHECK(t.peak_known);
        CHECK(t.peak_bytes < (UINT64_C(32) << 20));
        if (have_cgroup_cap())
            CHECK_CONTAINS(t.process.peak_source, "memory.stat");
    }
    unlink(file);
}

/* #5: a wrapper whose trainer the kernel kills at the cgroup's limit exits
 * 137 itself, without dying by a signal: still out of memory, and the need
 * is known to exceed the cap. */
TEST(child_oom_kill_under_a_wrapper_is_out_of_memory)
{
    if (!have_cgroup_cap())
        return;
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.watchdog = 0;
    o.enforce = 1;
    o.enforce_bytes = UINT64_C(64) << 20;
    const char *argv[] = {"/bin/sh", "-c", "\"$0\" alloc 400; exit $?", tool(), NULL};
    batchfit_trial t;
    CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.process.exited, 1);
    CHECK_EQ(t.process.exit_code, 137);
    CHECK(t.process.oom_killed);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK_CONTAINS(t.message, "at the cgroup's memory limit of 64.00 MiB");
    CHECK_CONTAINS(t.message, "exited with status 137");
    CHECK(t.peak_known);
    CHECK(t.peak_bytes >= o.enforce_bytes);
}

/* #18: --enforce without a cgroup caps resident memory, not address space:
 * a trial that reserves 1 GiB and touches 16 MiB fits under a 64 MiB cap,
 * and fails only under the virtual-memory cap asked for by name. */
TEST(child_enforce_without_cgroup_caps_resident_memory)
{
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.cgroups = BATCHFIT_CGROUPS_OFF;
    o.watchdog = 0;
    o.enforce = 1;
    o.enforce_bytes = UINT64_C(64) << 20;
    const char *argv[] = {tool(), "reserve", "1024", "16", NULL};
    batchfit_trial t;
    CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
    CHECK_STR(t.message, "");
    CHECK_EQ(t.outcome, BATCHFIT_FITS);
    CHECK(t.peak_bytes >= (UINT64_C(16) << 20) && t.peak_bytes < o.enforce_bytes);
    o.enforce_address_space = 1;
    CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK_CONTAINS(t.process.tail, "out of memory reserving");
}
