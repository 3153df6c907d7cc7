/* Regression tests for the faults of issue #11 in child trials: each runs a
 * real child process under real kernel accounting and fails on the code
 * before its fix. */
#include "test.h"
#include "child_helpers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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
    if (strncmp(ready, "short ", 6) == 0) {
        /* A process limit here (RLIMIT_NPROC, a pids controller) is not
         * what this test is about: there is no crowd to walk past. */
        close(stop_fd);
        char drain[64];
        while (read(out_fd, drain, sizeof drain) > 0)
            ;
        close(out_fd);
        fprintf(stderr, "    skipped: %s    (a process limit stopped the crowd)\n", ready);
        return;
    }
    char pidfile[256];
    tmp_path(pidfile, sizeof pidfile, "crowded");
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.cgroups = BATCHFIT_CGROUPS_OFF;
    o.budget_bytes = UINT64_C(50) << 20;
    /* Held for a second: a walk of 4150 processes under valgrind took
     * longer than the 100 ms a plain alloc holds its memory, and no sample
     * saw it (a flake, 1 in 4 there). The watchdog must still be what
     * stops it. */
    const char *grow[] = {tool(), "alloc", "400", "kill", NULL};
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
    char file[1100];
    const char *dir = test_page_cache_dir();
    if (!dir) {
        fprintf(stderr, "    skipped: no directory here whose files are page cache\n");
        return;
    }
    snprintf(file, sizeof file, "%s/batchfit-stream-%ld.tmp", dir, (long)getpid());
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
            CHECK_CONTAINS(t.process.peak_source, "shmem sampling");
    }
    unlink(file);
}

/* Without a cgroup, a file written to a tmpfs (/dev/shm) is memory no
 * process maps, in no RSS: a reviewer's program reached 23 GiB of
 * /dev/shm under a 300 MiB budget, each peak read as 2.4 MiB. The host's
 * Shmem counts it: in the peak, and to the watchdog. */
TEST(child_tmpfs_files_count_without_a_cgroup)
{
    struct stat st;
    if (stat("/dev/shm", &st) != 0 || !S_ISDIR(st.st_mode) || access("/dev/shm", W_OK) != 0)
        return;
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.cgroups = BATCHFIT_CGROUPS_OFF;
    o.budget_bytes = UINT64_C(512) << 20;
    const char *argv[] = {tool(), "tmpfs", "/dev/shm", "96", NULL};
    batchfit_trial t;
    CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_FITS);
    CHECK(t.peak_known);
    CHECK(t.peak_bytes >= (UINT64_C(90) << 20));
    /* Past the budget the watchdog stops it. */
    o.budget_bytes = UINT64_C(48) << 20;
    const char *big[] = {tool(), "tmpfs", "/dev/shm", "160", NULL};
    CHECK_EQ(trial(&o, big, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK(t.process.watchdog_stopped);
    /* Under a launcher that started several processes on this host (MPI
     * ranks on one node), each would read the others' shared memory as
     * its own: not counted there. */
    o.budget_bytes = UINT64_C(512) << 20;
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
    CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    CHECK_EQ(t.outcome, BATCHFIT_FITS);
    CHECK(t.peak_bytes < (UINT64_C(32) << 20));
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

/* #5 without a trial cgroup: the trainer under a wrapper is OOM-killed in a
 * memory cgroup of its own (as a container's limit would), the wrapper
 * exits 137, and only the host's oom_kill count says why: out of memory,
 * not a bug. */
TEST(child_oom_kill_under_a_wrapper_without_a_trial_cgroup)
{
    if (!have_cgroup_cap())
        return;
    batchfit__cgroup cg;
    memset(&cg, 0, sizeof cg);
    CHECK_EQ(batchfit__cgroup_detect(&cg), 0);
    CHECK_EQ(batchfit__cgroup_create(&cg, UINT64_C(64) << 20, 1), 0);
    char procs[BATCHFIT__CGROUP_PATH_MAX + 32], script[2 * BATCHFIT__CGROUP_PATH_MAX];
    CHECK_EQ(batchfit__cgroup_file(&cg, "cgroup.procs", procs, sizeof procs), 0);
    snprintf(script, sizeof script,
             "sh -c 'echo $$ > %s && exec \"$0\" alloc 400' \"$0\"; exit $?", procs);
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.cgroups = BATCHFIT_CGROUPS_OFF;
    o.watchdog = 0;
    const char *argv[] = {"/bin/sh", "-c", script, tool(), NULL};
    batchfit_trial t;
    CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
    batchfit__cgroup_destroy(&cg);
    CHECK_EQ(t.process.exited, 1);
    CHECK_EQ(t.process.exit_code, 137);
    CHECK(t.process.oom_killed);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK_CONTAINS(t.message, "the out-of-memory killer killed");
    CHECK_CONTAINS(t.message, "exited with status 137");
}

/* A trial that ends before its first sample, run by a process larger than
 * it (an embedding program, a sanitized batchfit): its rusage cannot be
 * told from the forked copy of the parent, so the cgroup's high-water mark
 * gives its peak - never the 0 that reads as "memory does not grow". */
TEST(child_short_trial_from_a_large_parent_has_its_peak)
{
    if (!have_cgroup_cap())
        return;
    size_t ballast = (size_t)96 << 20;
    char *mine = malloc(ballast);
    CHECK(mine != NULL);
    memset(mine, 1, ballast);
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.sample_interval = 5.0; /* no sample during the 60 ms trial */
    const char *argv[] = {tool(), "grow", "1024", NULL};
    batchfit_trial t;
    CHECK_EQ(trial(&o, argv, 8, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_FITS);
    CHECK(t.peak_known);
    CHECK(t.peak_bytes >= (UINT64_C(8) << 20));
    CHECK(t.peak_bytes < ballast);
    free(mine);
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
    /* Under valgrind (CI's leak run) the fork is valgrind itself until its
     * execve, holding some 180 MB: under a 64 MiB address-space cap its own
     * allocator fails between the cap and the execve now and then ("Valgrind
     * cannot continue"), and the trial is an error. The other builds run
     * this half. */
    const char *preload = getenv("LD_PRELOAD");
    if (preload && strstr(preload, "vgpreload"))
        return;
    o.enforce_address_space = 1;
    CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK_CONTAINS(t.process.tail, "out of memory reserving");
}

/* The death signal of a process that is our child: the test sends SIGTERM
 * first, which a process already dying of SIGKILL drops, so the answer is
 * SIGKILL only if something else killed it, and the wait never hangs. */
static int death_signal(pid_t pid)
{
    int status = 0;
    kill(pid, SIGTERM);
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

/* The directory of a trial cgroup owned by pid, under parent; "" if none. */
static void owned_cgroup(const char *parent, long pid, char *out, size_t len)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "batchfit-%ld-", pid);
    out[0] = '\0';
    DIR *d = opendir(parent);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 &&
            snprintf(out, len, "%s/%.64s", parent, e->d_name) >= (int)len)
            out[0] = '\0';
    if (d)
        closedir(d);
}

/* #3: when batchfit is SIGKILLed mid-trial, the trial dies with it (a
 * parent-death signal), and the next run removes the trial cgroup left
 * behind, killing what still runs in it (here a grandchild in its own
 * session), also while the killed batchfit is a zombie not yet reaped. */
TEST(child_dies_with_batchfit_and_the_next_run_sweeps_its_cgroup)
{
    int was_subreaper = 0;
    prctl(PR_GET_CHILD_SUBREAPER, &was_subreaper, 0, 0, 0);
    /* Orphans of the killed stand-in come to us, so we can wait for them. */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    long before[256];
    unsigned before_count = batchfit__proc_children(before, 256);
    int notify[2];
    CHECK_EQ(pipe(notify), 0);
    pid_t standin = fork();
    if (standin == 0) {
        close(notify[0]);
        char fd[16];
        snprintf(fd, sizeof fd, "%d", notify[1]);
        batchfit__runner_options o;
        batchfit__runner_options_init(&o);
        const char *argv[] = {tool(), "orphan-notify", fd, NULL};
        batchfit_trial t;
        trial(&o, argv, 1, &t);
        _exit(0);
    }
    close(notify[1]);
    char line[64] = "";
    ssize_t got = read(notify[0], line, sizeof line - 1);
    close(notify[0]);
    line[got > 0 ? got : 0] = '\0';
    long trial_pid = 0, grandchild = 0;
    int parsed = sscanf(line, "%ld %ld", &trial_pid, &grandchild) == 2;
    batchfit__cgroup *cg = calloc(1, sizeof *cg);
    char stale[BATCHFIT__CGROUP_PATH_MAX] = "";
    int have_cgroup = cg && batchfit__cgroup_detect(cg) == 0;
    kill(standin, SIGKILL);
    /* Dead but not reaped, as a batchfit killed under timeout -s KILL is
     * until its shell waits: a zombie's pid still answers kill(pid, 0),
     * and its cgroup was kept with its grandchild running on. */
    siginfo_t info;
    waitid(P_PID, (id_t)standin, &info, WEXITED | WNOWAIT);
    int trial_signal = parsed ? death_signal((pid_t)trial_pid) : -1;
    if (have_cgroup)
        owned_cgroup(cg->parent, (long)standin, stale, sizeof stale);
    /* The next run: creating a runner sweeps. */
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    const char *argv[] = {tool(), "exit", "0", NULL};
    o.argv = argv;
    batchfit__runner *r = NULL;
    int rc = batchfit__runner_create(ctx, &o, &r);
    batchfit__runner_free(r);
    batchfit_ctx_free(ctx);
    waitpid(standin, NULL, 0);
    struct stat st;
    int stale_left = stale[0] && stat(stale, &st) == 0;
    int grandchild_signal = parsed ? death_signal((pid_t)grandchild) : -1;
    /* The stand-in's guard came to us too, in our own process group (it is
     * a fork of the stand-in): the next runner leaves it alone as ours, and
     * we wait for it (it exits once it has killed what the stand-in left). */
    long now[256];
    unsigned now_count = batchfit__proc_children(now, 256);
    for (unsigned i = 0; i < now_count; i++) {
        int old = 0;
        for (unsigned j = 0; j < before_count && !old; j++)
            old = before[j] == now[i];
        if (!old)
            waitpid((pid_t)now[i], NULL, 0);
    }
    prctl(PR_SET_CHILD_SUBREAPER, was_subreaper, 0, 0, 0);
    free(cg);
    CHECK(parsed);
    CHECK_EQ(rc, BATCHFIT_OK);
    CHECK_EQ(trial_signal, SIGKILL);
    if (have_cgroup) {
        CHECK(stale[0] != '\0');
        CHECK(!stale_left);
        CHECK_EQ(grandchild_signal, SIGKILL);
    }
}

/* #19: the excerpt after a failure has both streams: the cause on stderr
 * is not pushed out by stdout's buffer flushed at exit, and comes first
 * when the two were read together. */
TEST(child_tail_shows_stderr_beside_flushed_stdout)
{
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.cgroups = BATCHFIT_CGROUPS_OFF;
    const char *argv[] = {tool(), "mixed", "30", NULL};
    batchfit_trial t;
    CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_ERROR);
    const char *cause = strstr(t.process.tail, "ValueError: the real cause\n");
    const char *last = strstr(t.process.tail, "progress line 29:");
    CHECK(cause != NULL);
    CHECK(last != NULL);
    CHECK(cause < last);
    CHECK_CONTAINS(t.process.tail, "Traceback (most recent call last):\n");
    CHECK(strlen(t.process.tail) < sizeof t.process.tail);
}

/* #19: a trial killed outright says what it was seen to hold, and one the
 * watchdog stopped records how far past the budget its last sample was. */
TEST(child_killed_trial_reports_what_is_known)
{
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    const char *argv[] = {tool(), "alloc", "48", "kill", NULL};
    batchfit_trial t;
    CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK_EQ(t.process.signal, SIGKILL);
    CHECK(t.peak_known);
    CHECK(t.peak_bytes >= (UINT64_C(48) << 20));
    CHECK_EQ(t.process.watchdog_overshoot_bytes, 0);

    o.budget_bytes = UINT64_C(32) << 20;
    const char *grow[] = {tool(), "alloc", "400", NULL};
    CHECK_EQ(trial(&o, grow, 1, &t), BATCHFIT_OK);
    CHECK(t.process.watchdog_stopped);
    CHECK(t.process.watchdog_overshoot_bytes > 0);
    CHECK_EQ(t.process.watchdog_overshoot_bytes, t.peak_bytes - o.budget_bytes);
}

/* Without a cgroup, a tree of processes that share pages (forked workers
 * and their parent's heap) counts each page once: 64 MiB shared by four
 * processes read 256 MiB when their RSS was summed. */
TEST(child_shared_pages_count_once_without_a_cgroup)
{
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.cgroups = BATCHFIT_CGROUPS_OFF;
    /* The pages are private (copied on write), no tmpfs file's: the host's
     * Shmem, which another process's tmpfs writes raise meanwhile, is left
     * out (it failed once, a concurrent job writing /dev/shm). */
    o.host_shmem = 0;
    const char *argv[] = {tool(), "share", "64", "3", NULL};
    batchfit_trial t;
    CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_FITS);
    CHECK(t.process.sampled_peak_bytes >= (UINT64_C(64) << 20));
    CHECK(t.process.sampled_peak_bytes < (UINT64_C(128) << 20));
    CHECK(t.peak_bytes < (UINT64_C(128) << 20));
}

/* #19: the overshoot of a trial the watchdog stopped is in the JSON. */
/* Probes argv on the host under a 48 MiB budget with no spread, at most
 * max_trials trials (0: no limit) up to requested_max (0: none). */
static batchfit_result *probe_under_48_mib(batchfit_ctx *ctx, const char **argv,
                                           unsigned max_trials, uint64_t requested_max)
{
    batchfit_options o;
    batchfit_device *host = test_host(ctx, &o, UINT64_C(48) << 20);
    o.peak_spread = 0.0;
    if (max_trials)
        o.max_trials = max_trials;
    o.requested_max = requested_max;
    batchfit_command_options c;
    batchfit_command_options_init(&c);
    c.argv = argv;
    batchfit_result *r = NULL;
    batchfit_probe_command(ctx, &o, host, &c, &r);
    batchfit_device_free(host);
    return r;
}

TEST(child_watchdog_overshoot_is_in_the_json)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    /* 8 MiB fixed + 64 MiB per sample: every size past 0 passes the budget. */
    const char *argv[] = {tool(), "grow", "65536", "8192", "{batch}", NULL};
    batchfit_result *r = probe_under_48_mib(ctx, argv, 3, 0);
    const char *json = NULL;
    int stopped = 0;
    for (size_t i = 0; r && i < r->trial_count; i++)
        stopped += r->trials[i].process.watchdog_stopped;
    int rc = r ? batchfit_result_json(ctx, r, &json) : -1;
    char needle[96] = "";
    if (stopped && r) {
        for (size_t i = 0; i < r->trial_count; i++)
            if (r->trials[i].process.watchdog_stopped)
                snprintf(needle, sizeof needle, "\"watchdog_overshoot_bytes\": %llu",
                         (unsigned long long)r->trials[i].process.watchdog_overshoot_bytes);
    }
    CHECK(r != NULL);
    CHECK_EQ(rc, BATCHFIT_OK);
    CHECK(stopped > 0);
    CHECK_CONTAINS(json, needle);
    batchfit_result_free(r);
    batchfit_ctx_free(ctx);
}

/* A worker that left the trial's process group (setsid) and ignores
 * SIGTERM, growing 1 MiB every 10 ms past the budget: the watchdog stops it
 * too, not only the group (it ran on for the second the output drains,
 * here to about three times the budget). */
TEST(child_watchdog_stops_a_worker_in_its_own_session)
{
    char progress[256];
    snprintf(progress, sizeof progress, "/tmp/batchfit-test-%ld-setsid", (long)getpid());
    unlink(progress);
    batchfit_ctx *ctx = test_ctx(NULL);
    const char *argv[] = {tool(), "setsid-grow", "1024", progress, "{batch}", NULL};
    batchfit_result *r = probe_under_48_mib(ctx, argv, 0, 1);
    CHECK(r != NULL);
    CHECK(r && r->trial_count == 1 && r->trials[0].process.watchdog_stopped);
    long reached = 0;
    FILE *f = fopen(progress, "r");
    CHECK(f != NULL);
    if (f) {
        CHECK(fscanf(f, "%ld", &reached) == 1);
        fclose(f);
    }
    /* Stopped when the watchdog trips at the budget (48 MiB), not a second
     * later: half a second's growth is left to the sampling's lag. */
    CHECK(reached >= 40);
    CHECK(reached < 96);
    unlink(progress);
    batchfit_result_free(r);
    batchfit_ctx_free(ctx);
}

/* Whether pid ends within seconds: its pidfd polls readable when it has
 * (SIGKILL is sent at once, but a process takes a moment to die). */
static int ends_within(long pid, int seconds)
{
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (fd >= 0) {
        struct pollfd p = {fd, POLLIN, 0};
        int ready = poll(&p, 1, seconds * 1000);
        close(fd);
        if (ready > 0)
            return 1;
    }
#endif
    /* No pidfd (an old kernel, valgrind): the condition itself, looked at
     * every 10 ms until it holds or the time is up. */
    for (int tick = 0; tick < seconds * 100; tick++) {
        if (!alive(pid))
            return 1;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return !alive(pid);
}

/* The start time the process walk reads for pid (0 if it is gone). */
static unsigned long long start_time(long pid)
{
    test_alloc_state st = {0, -1, 0, 0};
    batchfit_allocator a = test_allocator(&st);
    batchfit__proc_tree tree;
    batchfit__proc_tree_init(&tree, &a);
    uint64_t rss = 0;
    unsigned long long start = 0;
    if (batchfit__proc_tree_rss(&tree, pid, &rss) == 0)
        for (unsigned i = 0; i < tree.count; i++)
            if (tree.member[i].pid == pid)
                start = tree.member[i].start;
    batchfit__proc_tree_free(&tree);
    return start;
}

/* A batchfit killed with SIGKILL cannot clean up after its trial; the
 * trial's guard does: the trial's group and a grandchild in a session of
 * its own that the guard was told of die with it. A process it was told of
 * under another start time (its pid reused since) is left alone, and so
 * is the guard itself until it is done (the walk finds it too). The
 * "batchfit" here is a forked process in a process group of its own that
 * starts the trial and its guard as the runner does, tells the guard,
 * says so, and is killed: alone, or with its whole group (kill -9 %1,
 * timeout -s KILL, a Jupyter kernel's restart), which killed a guard in
 * that group too and left the trial's program running. */
static void guard_after_kill(int whole_group)
{
    pid_t decoy = fork();
    if (decoy == 0) {
        for (;;)
            pause();
    }
    CHECK(decoy > 0);
    int told[2];
    CHECK_EQ(pipe(told), 0);
    pid_t parent = fork();
    if (parent == 0) {
        setpgid(0, 0);
        close(told[0]);
        dup2(told[1], 1); /* the guard keeps stdout: EOF says it is done */
        close(told[1]);
        int notify[2];
        if (pipe(notify) != 0)
            _exit(1);
        pid_t trial = fork();
        if (trial == 0) {
            setpgid(0, 0);
            int null = open("/dev/null", O_WRONLY);
            dup2(null, 1);
            close(notify[0]);
            char fd[16];
            snprintf(fd, sizeof fd, "%d", notify[1]);
            execl(tool(), tool(), "orphan-notify", fd, (char *)NULL);
            _exit(127);
        }
        setpgid(trial, trial);
        close(notify[1]);
        long main_pid = 0, grandchild = 0;
        FILE *f = fdopen(notify[0], "r");
        if (!f || fscanf(f, "%ld %ld", &main_pid, &grandchild) != 2)
            _exit(1);
        batchfit__cgroup none;
        memset(&none, 0, sizeof none);
        batchfit__guard g;
        if (batchfit__guard_start(&g, &none) != 0)
            _exit(1);
        batchfit__guard_group(&g, trial);
        /* The walk finds every child of batchfit: the guard is one. */
        batchfit__proc_member members[3] = {{(long)g.pid, start_time((long)g.pid)},
                                            {grandchild, start_time(grandchild)},
                                            {(long)decoy, start_time((long)decoy) + 1}};
        batchfit__proc_tree tree;
        memset(&tree, 0, sizeof tree);
        tree.member = members;
        tree.count = 3;
        batchfit__guard_tell(&g, &tree);
        printf("%ld %ld %ld\n", main_pid, grandchild, (long)g.pid);
        fflush(stdout);
        for (;;)
            pause();
    }
    close(told[1]);
    FILE *f = fdopen(told[0], "r");
    long main_pid = 0, grandchild = 0, guard = 0;
    int got = f != NULL && fscanf(f, "%ld %ld %ld", &main_pid, &grandchild, &guard) == 3;
    int were_alive = got && alive(main_pid) && alive(grandchild);
    kill(whole_group ? -parent : parent, SIGKILL);
    waitpid(parent, NULL, 0);
    /* The guard holds the other end of this pipe until it has done its work. */
    char rest[64];
    while (f && fread(rest, 1, sizeof rest, f) > 0)
        ;
    if (f)
        fclose(f);
    int main_alive = got && !ends_within(main_pid, 10);
    int grandchild_alive = got && !ends_within(grandchild, 10);
    int decoy_alive = alive((long)decoy);
    /* Nothing left behind whatever the checks find. */
    kill(decoy, SIGKILL);
    waitpid(decoy, NULL, 0);
    if (got && main_alive)
        kill((pid_t)main_pid, SIGKILL);
    if (got && grandchild_alive)
        kill((pid_t)grandchild, SIGKILL);
    /* Orphans come to this program when it is a subreaper (a runner made
     * it one): reap them (ECHILD where they went to init). */
    if (got) {
        waitpid((pid_t)main_pid, NULL, 0);
        waitpid((pid_t)grandchild, NULL, 0);
        waitpid((pid_t)guard, NULL, 0);
    }
    CHECK(got);
    CHECK(were_alive);
    CHECK(!main_alive);
    CHECK(!grandchild_alive);
    CHECK(decoy_alive);
}

TEST(child_guard_kills_the_trial_when_batchfit_is_killed)
{
    guard_after_kill(0);
    if (!test_failed())
        guard_after_kill(1);
}

/* A child of ours holding bytes of written memory until killed; -1 if it
 * could not be started or did not say it holds them. */
static pid_t holder(size_t bytes, int own_session)
{
    int ready[2];
    if (pipe(ready) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        if (own_session)
            setsid();
        volatile char *p = malloc(bytes); /* volatile: every page really written */
        for (size_t k = 0; p && k < bytes; k += 4096)
            p[k] = 1;
        if (write(ready[1], "x", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(ready[1]);
    char got;
    int held = pid > 0 && read(ready[0], &got, 1) == 1;
    close(ready[0]);
    if (pid > 0 && !held) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    return held ? pid : -1;
}

/* The guard is our child as the trial's orphans are (the walk counts every
 * child of ours outside our process group as the trial's), but its memory
 * is not the trial's: a
 * Python caller's probe read the guard's pages as the trial's, and its
 * watchdog stopped a trial of 1 MiB at a budget of 60 MiB. A child of ours
 * holding 32 MiB, named among the tree's spared, is left out of the walk. */
TEST(child_guard_memory_is_not_the_trial_s)
{
    /* The trial: a program of its own (a fork of this one, under valgrind,
     * would read as all of valgrind's pages). */
    pid_t pids[2] = {fork(), -1};
    if (pids[0] == 0) {
        execl(tool(), tool(), "hang", (char *)NULL);
        _exit(127);
    }
    /* In a session of its own, as a trial's orphans are (a child in ours
     * is the caller's whether spared or not). */
    pids[1] = holder((size_t)32 << 20, 1);
    int both = pids[0] > 0 && pids[1] > 0;
    uint64_t with = 0, without = 0;
    int other_in[2] = {0, 0}; /* pids[1] among the members, without and with leaving it out */
    for (int leave_out = 0; leave_out < 2; leave_out++) {
        test_alloc_state st = {0, -1, 0, 0};
        batchfit_allocator a = test_allocator(&st);
        batchfit__proc_tree tree;
        batchfit__proc_tree_init(&tree, &a);
        long spare = (long)pids[1];
        tree.spare = &spare;
        tree.spare_count = leave_out ? 1 : 0;
        uint64_t rss = 0;
        batchfit__proc_tree_rss(&tree, (long)pids[0], &rss);
        *(leave_out ? &without : &with) = rss;
        for (unsigned m = 0; m < tree.count; m++)
            other_in[leave_out] |= tree.member[m].pid == (long)pids[1];
        batchfit__proc_tree_free(&tree);
    }
    for (int i = 0; i < 2; i++) {
        if (pids[i] > 0) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], NULL, 0);
        }
    }
    CHECK(both);
    /* Other children of this test program (a test before may have left
     * some) count both times; the one named is left out. */
    CHECK_EQ(other_in[0], 1);
    CHECK_EQ(other_in[1], 0);
    CHECK(with >= (UINT64_C(32) << 20));
    CHECK(with >= without + (UINT64_C(24) << 20));
}

/* A program using the library may have children of its own (a server, a
 * data loader): they are not the trial's. Counted as its orphans, a child
 * holding 48 MiB had the watchdog stop a trial of 4 MiB at a budget of
 * 32 MiB, and was killed after the trial. */
TEST(child_the_caller_s_own_children_are_not_the_trial_s)
{
    pid_t own = holder((size_t)48 << 20, 0);
    CHECK(own > 0);
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.cgroups = BATCHFIT_CGROUPS_OFF;
    o.budget_bytes = UINT64_C(32) << 20;
    const char *argv[] = {tool(), "alloc", "4", NULL};
    batchfit_trial t;
    int rc = trial(&o, argv, 1, &t);
    int survived = alive((long)own);
    kill(own, SIGKILL);
    waitpid(own, NULL, 0);
    CHECK_EQ(rc, BATCHFIT_OK);
    CHECK(!t.process.watchdog_stopped);
    CHECK_EQ(t.outcome, BATCHFIT_FITS);
    CHECK(t.peak_bytes < (UINT64_C(32) << 20));
    CHECK(survived);
}

/* One trial of a program allocating 4 MiB, without a cgroup. */
static int small_trial(batchfit_trial *t)
{
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.cgroups = BATCHFIT_CGROUPS_OFF;
    const char *argv[] = {tool(), "alloc", "4", NULL};
    return trial(&o, argv, 1, t);
}

/* A child that exited with status (after leaving for a session of its
 * own, with own_session) and is left unreaped (WNOWAIT); -1 on failure. */
static pid_t exited_child(int status, int own_session)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (own_session)
            setsid();
        _exit(status);
    }
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (pid < 0 || waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) != 0)
        return -1;
    return pid;
}

/* A child of the caller that exited before the trial and waits for the
 * caller's waitpid is the caller's: reaped after the trial, its exit status
 * was lost and the caller's waitpid failed with ECHILD. */
TEST(child_the_caller_s_exited_child_keeps_its_exit_status)
{
    pid_t own = exited_child(7, 0);
    CHECK(own > 0);
    batchfit_trial t;
    int rc = small_trial(&t);
    int status = 0;
    pid_t got = waitpid(own, &status, 0);
    CHECK_EQ(rc, BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_FITS);
    CHECK_EQ(got, own);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 7);
}

/* Children of the caller blocked reading hold[0] until its write end
 * closes, in the caller's process group (where 0), one of their own (1) or
 * a session of their own (2); returns how many of n started. */
static unsigned start_waiting_children(pid_t *kids, unsigned n, const int hold[2], int apart)
{
    unsigned started = 0;
    for (; started < n; started++) {
        int ready[2];
        if (pipe(ready) != 0)
            break;
        pid_t pid = fork();
        if (pid == 0) {
            if (apart == 1)
                setpgid(0, 0);
            else if (apart == 2)
                setsid();
            close(ready[0]);
            close(ready[1]); /* it has left, as asked */
            close(hold[1]);
            char c;
            while (read(hold[0], &c, 1) < 0 && errno == EINTR)
                ;
            _exit(0);
        }
        close(ready[1]);
        char c;
        while (pid > 0 && read(ready[0], &c, 1) < 0 && errno == EINTR)
            ;
        close(ready[0]);
        if (pid < 0)
            break;
        if (apart == 1)
            setpgid(pid, pid);
        kids[started] = pid;
    }
    return started;
}

/* However many children the caller has, none is the trial's: past the
 * first 63 they were killed after every trial. */
TEST(child_every_one_of_the_caller_s_children_outlives_the_trial)
{
    enum { CHILDREN = 80 };
    int hold[2];
    CHECK_EQ(pipe(hold), 0);
    fcntl(hold[0], F_SETFD, FD_CLOEXEC);
    fcntl(hold[1], F_SETFD, FD_CLOEXEC);
    pid_t kids[CHILDREN];
    unsigned started = start_waiting_children(kids, CHILDREN, hold, 0);
    close(hold[0]);
    batchfit_trial t;
    int rc = small_trial(&t);
    unsigned living = 0;
    for (unsigned i = 0; i < started; i++)
        living += (unsigned)alive((long)kids[i]);
    close(hold[1]);
    for (unsigned i = 0; i < started; i++)
        waitpid(kids[i], NULL, 0);
    CHECK_EQ(started, CHILDREN);
    CHECK_EQ(rc, BATCHFIT_OK);
    CHECK_EQ(living, CHILDREN);
}

/* A child the caller starts while a trial runs (another thread's
 * subprocess, a data loader's worker, one given a process group of its
 * own) is in the caller's session and is the caller's; one in a session of
 * its own, as a trial's orphans are, is killed and reaped. */
TEST(child_only_children_outside_the_caller_s_session_are_reaped)
{
    int hold[2];
    CHECK_EQ(pipe(hold), 0);
    /* Every child this program has now is spared, as a trial spares them. */
    long spare[256];
    unsigned spare_count = batchfit__proc_children(spare, 256);
    CHECK(spare_count < 256);
    pid_t same = -1, group = -1, other = -1;
    unsigned started = start_waiting_children(&same, 1, hold, 0);
    started += start_waiting_children(&group, 1, hold, 1);
    started += start_waiting_children(&other, 1, hold, 2);
    close(hold[0]);
    CHECK_EQ(started, 3u);
    unsigned killed = batchfit__proc_reap_children(spare, spare_count, NULL, 0);
    int same_alive = alive((long)same), group_alive = alive((long)group);
    errno = 0;
    int other_reaped = waitpid(other, NULL, WNOHANG) < 0 && errno == ECHILD;
    close(hold[1]);
    waitpid(same, NULL, 0);
    waitpid(group, NULL, 0);
    if (!other_reaped)
        waitpid(other, NULL, 0);
    CHECK_EQ(killed, 1u);
    CHECK(same_alive);
    CHECK(group_alive);
    CHECK(other_reaped);
}

/* The child-subreaper flag belongs to the process: a runner holds it while
 * it lives and puts it back as the caller had it after the last one (left
 * on, a program using the library became for good the parent of every
 * orphan its other children left). */
TEST(child_the_subreaper_flag_is_put_back_after_the_last_runner)
{
    int before = 0, during = -1, between = -1, after = -1, kept = -1;
    prctl(PR_GET_CHILD_SUBREAPER, &before, 0, 0, 0);
    prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    const char *argv[] = {tool(), "alloc", "4", NULL};
    o.argv = argv;
    batchfit__runner *a = NULL, *b = NULL;
    int rc_a = batchfit__runner_create(ctx, &o, &a);
    int rc_b = batchfit__runner_create(ctx, &o, &b);
    prctl(PR_GET_CHILD_SUBREAPER, &during, 0, 0, 0);
    batchfit__runner_free(a);
    prctl(PR_GET_CHILD_SUBREAPER, &between, 0, 0, 0);
    batchfit__runner_free(b);
    prctl(PR_GET_CHILD_SUBREAPER, &after, 0, 0, 0);
    /* A caller that is a subreaper itself stays one. */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    a = NULL;
    int rc_c = batchfit__runner_create(ctx, &o, &a);
    batchfit__runner_free(a);
    prctl(PR_GET_CHILD_SUBREAPER, &kept, 0, 0, 0);
    prctl(PR_SET_CHILD_SUBREAPER, before, 0, 0, 0);
    batchfit_ctx_free(ctx);
    CHECK_EQ(rc_a, BATCHFIT_OK);
    CHECK_EQ(rc_b, BATCHFIT_OK);
    CHECK_EQ(rc_c, BATCHFIT_OK);
    CHECK_EQ(during, 1);
    CHECK_EQ(between, 1);
    CHECK_EQ(after, 0);
    CHECK_EQ(kept, 1);
}

/* A trial's descendant that moves itself into the caller's process group
 * (a child in that group is the caller's, and left alone) escaped: not
 * counted, not killed, it outlived batchfit under init. A trial runs in a
 * session of its own, and setpgid cannot leave a session: the move is
 * refused, and the descendant goes with its trial. */
TEST(child_a_trial_s_descendant_cannot_join_the_caller_s_group)
{
    char pids[256], group[32];
    tmp_path(pids, sizeof pids, "join-group");
    snprintf(group, sizeof group, "%ld", (long)getpgrp());
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.cgroups = BATCHFIT_CGROUPS_OFF;
    const char *argv[] = {tool(), "join-group", group, pids, NULL};
    batchfit_trial t;
    int rc = trial(&o, argv, 1, &t);
    int count = 0;
    int live = live_pids(pids, &count);
    unlink(pids);
    CHECK_EQ(rc, BATCHFIT_OK);
    CHECK_EQ(count, 1);
    CHECK_EQ(live, 0);
}

/* A trial's orphan that came to us after its trial's sweep and died
 * waits, a zombie in a session of its own, for someone to reap it: it is
 * not the caller's (the caller's dead children are in its own group), and
 * the next trial's sweep reaps it. Spared as the caller's, it would stay a
 * zombie of the program for good. */
TEST(child_a_late_orphan_s_zombie_is_reaped_by_the_next_trial)
{
    pid_t late = exited_child(0, 1);
    CHECK(late > 0);
    batchfit_trial t;
    int rc = small_trial(&t);
    errno = 0;
    int reaped = waitpid(late, NULL, WNOHANG) < 0 && errno == ECHILD;
    if (!reaped)
        waitpid(late, NULL, 0);
    CHECK_EQ(rc, BATCHFIT_OK);
    CHECK(reaped);
}

/* A child of the caller's own in a session of its own, done before the
 * trial began and not yet waited for, is swept as a trial's orphan would
 * be; its high-water RSS is not the trial's (a reviewer's finished
 * 400 MiB subprocess made a trial of next to nothing "not fit"). The
 * reaped processes' high-water RSS counts only for those that began with
 * the trial or after. */
TEST(child_a_caller_s_finished_child_is_not_charged_to_the_trial)
{
    pid_t done = fork();
    if (done == 0) {
        setsid();
        size_t bytes = (size_t)160 << 20;
        volatile char *p = malloc(bytes);
        for (size_t i = 0; p && i < bytes; i += 4096)
            p[i] = 1;
        _exit(p ? 0 : 1);
    }
    CHECK(done > 0);
    /* Until it is a zombie: no sleep stands in for that, its state is read. */
    while (!batchfit__proc_exited((long)done))
        sched_yield();
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.cgroups = BATCHFIT_CGROUPS_OFF;
    const char *argv[] = {tool(), "alloc", "8", NULL};
    batchfit_trial t;
    CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_FITS);
    CHECK(t.peak_bytes >= (UINT64_C(8) << 20));
    CHECK(t.peak_bytes < (UINT64_C(100) << 20));
    waitpid(done, NULL, WNOHANG); /* reaped by the sweep, or here */
}
