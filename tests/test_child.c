#include "test.h"
#include "child_helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

/* Runner options with a cgroup (cg 1) or without (0). */
static batchfit__runner_options with_cgroup(int cg)
{
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.cgroups = cg ? BATCHFIT_CGROUPS_AUTO : BATCHFIT_CGROUPS_OFF;
    return o;
}

TEST(child_exit_zero_fits_with_a_measured_peak)
{
    for (int cg = 0; cg < 2; cg++) {
        batchfit__runner_options o = with_cgroup(cg);
        /* Private memory only: the host's Shmem, which another process's
         * tmpfs writes raise meanwhile, is left out. */
        o.host_shmem = 0;
        const char *argv[] = {tool(), "alloc", "40", NULL};
        batchfit_trial t;
        CHECK_EQ(trial(&o, argv, 3, &t), BATCHFIT_OK);
        CHECK_EQ(t.outcome, BATCHFIT_FITS);
        CHECK_EQ(t.batch, 3);
        CHECK(t.peak_known);
        CHECK(t.peak_bytes >= (UINT64_C(40) << 20));
        CHECK(t.peak_bytes < (UINT64_C(60) << 20));
        CHECK_EQ(t.process.exited, 1);
        CHECK_EQ(t.process.exit_code, 0);
        CHECK(t.seconds >= 0.1);
        CHECK_EQ(t.process.left_running, 0u);
        CHECK_STR(t.process.left_running_name, "");
        if (!cg)
            CHECK_STR(t.process.peak_source, "rusage+sampling");
    }
}

/* A command that leaves its work to processes running on (`sh -c 'work
 * &'`, a daemon): its main process exits at once, and the trial with it.
 * What still ran then is counted and named (the probe warns of it: the
 * work was not measured), and stopped. A finished orphan (a zombie handed
 * to us, not yet reaped) is not running. */
TEST(child_processes_left_running_are_counted_and_stopped)
{
    for (int cg = 0; cg < 2; cg++) {
        batchfit__runner_options o = with_cgroup(cg);
        const char *argv[] = {tool(), "leave", "2", NULL};
        batchfit_trial t;
        CHECK_EQ(trial(&o, argv, 3, &t), BATCHFIT_OK);
        CHECK_EQ(t.outcome, BATCHFIT_FITS);
        CHECK_EQ(t.process.exit_code, 0);
        CHECK_EQ(t.process.left_running, 2u);
        CHECK_STR(t.process.left_running_name, "left-worker");
        CHECK(t.seconds < 10.0);
        /* The last one's pid, as it printed it: gone. */
        long left = strtol(t.process.tail, NULL, 10);
        CHECK(left > 1);
        CHECK(kill((pid_t)left, 0) != 0 && errno == ESRCH);
        const char *zombie[] = {tool(), "orphan-zombie", NULL};
        CHECK_EQ(trial(&o, zombie, 3, &t), BATCHFIT_OK);
        CHECK_EQ(t.outcome, BATCHFIT_FITS);
        CHECK_EQ(t.process.left_running, 0u);
        CHECK(strtol(t.process.tail, NULL, 10) > 1);
    }
}

/* A spike in an orphaned grandchild (its parent exited first: a daemonised
 * worker, a forkserver's) between two samples: in no wait4 of the main
 * process's, it read as nothing, and a reviewer's program was answered
 * 365 where its cgroup's high-water mark was 203 MiB under a 200 MiB
 * budget. Reaped by the runner, its high-water RSS counts. Sampled once a
 * second, with a cgroup and without. */
TEST(child_an_orphan_s_spike_between_samples_counts)
{
    for (int cg = 0; cg < 2; cg++) {
        batchfit__runner_options o = with_cgroup(cg);
        o.sample_interval = 1.0;
        const char *argv[] = {tool(), "orphan-spike", "96", NULL};
        batchfit_trial t;
        CHECK_EQ(trial(&o, argv, 3, &t), BATCHFIT_OK);
        CHECK_EQ(t.outcome, BATCHFIT_FITS);
        CHECK(t.peak_known);
        CHECK(t.peak_bytes >= (UINT64_C(96) << 20));
        CHECK(t.peak_bytes < (UINT64_C(120) << 20));
    }
}

/* Runs the child tool printing line and exiting with code. */
static int printed(batchfit__runner_options *o, const char *line, const char *code,
                   batchfit_trial *t)
{
    const char *argv[] = {tool(), "print", line, code, NULL};
    return trial(o, argv, 8, t);
}

TEST(child_every_oom_signature_is_out_of_memory)
{
    const char *source, *example;
    for (size_t i = 0; batchfit__oom_builtin(i, &source, NULL, &example); i++) {
        batchfit__runner_options o;
        batchfit__runner_options_init(&o);
        o.cgroups = BATCHFIT_CGROUPS_OFF;
        /* On stderr with a failing status, and on stdout with status 0. */
        const char *on_stderr[] = {tool(), "print", example, "1", NULL};
        const char *on_stdout[] = {tool(), "print", example, "stdout", "0", NULL};
        batchfit_trial t;
        
        CHECK_EQ(trial(&o, on_stderr, 8, &t), BATCHFIT_OK);
        CHECK_EQ(t.outcome, BATCHFIT_OOM);
        CHECK_CONTAINS(t.message, "out of memory (");
        CHECK(t.process.oom_signature[0] != '\0');
        CHECK_EQ(trial(&o, on_stdout, 8, &t), BATCHFIT_OK);
        CHECK_EQ(t.outcome, BATCHFIT_OOM);
        CHECK_EQ(t.process.exit_code, 0);
    }
    /* What the message says it tried to allocate is a lower bound on the
     * need, in the memory it was asked of: on the host (this runner has no
     * GPU) a CUDA allocator's request is not host memory. */
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    batchfit_trial t;
    CHECK_EQ(printed(&o, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
                           "GPU 0 has a total capacity of 79.11 GiB", "1", &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK(t.peak_bytes < (UINT64_C(64) << 20));
    /* Nor is Intel's or Apple's device allocator (an XPU's 2 GiB was added
     * to a host reading). */
    CHECK_EQ(printed(&o, "RuntimeError: XPU out of memory. Tried to allocate 2.00 GiB", "1", &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK(t.peak_bytes < (UINT64_C(64) << 20));
    /* A run that finishes after TensorFlow's allocator says its shortfall
     * "is not a failure" fits (it read as out of memory, exit 3). */
    CHECK_EQ(printed(&o, "W tensorflow/core/common_runtime/bfc_allocator.cc:290] Allocator "
                        "(GPU_0_bfc) ran out of memory trying to allocate 2.26GiB with "
                        "freed_by_count=0. The caller indicates that this is not a failure", "0", &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_FITS);
    /* A long line is quoted from near its match, not cut before it. */
    char prefixed[700];
    memset(prefixed, 'x', 500);
    snprintf(prefixed + 500, sizeof prefixed - 500, " RuntimeError: CUDA error: out of memory");
    CHECK_EQ(printed(&o, prefixed, "1", &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK_CONTAINS(t.message, "call): ...xxx");
    CHECK_CONTAINS(t.message, "x RuntimeError: CUDA error: out of memory");
    /* A NUL byte earlier on the line (a progress bar's, a binary's) is
     * read past, as a terminal shows the line: the message behind it read
     * as an error (exit 4). */
    const char *nul[] = {"/bin/sh", "-c",
                         "printf 'abc\\000RuntimeError: CUDA out of memory\\n' >&2; exit 1", NULL};
    CHECK_EQ(trial(&o, nul, 8, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK_CONTAINS(t.message, "abc RuntimeError: CUDA out of memory");
    CHECK_EQ(printed(&o, "RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to "
                           "allocate 8589934592 bytes. Error code 12", "1", &t), BATCHFIT_OK);
    CHECK(t.peak_bytes >= UINT64_C(8589934592));
    CHECK(t.peak_bytes < UINT64_C(8589934592) + (UINT64_C(64) << 20));
    CHECK_EQ(printed(&o, "RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. "
                           "DefaultCPUAllocator: not enough memory: you tried to allocate "
                           "4294967296 bytes.", "1", &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK(t.peak_bytes >= UINT64_C(4294967296));
    CHECK(t.peak_bytes < UINT64_C(4294967296) + (UINT64_C(64) << 20));
    /* NumPy's MemoryError and XLA's say it too (a NumPy request of 206.5
     * MiB that failed at once read as the 20 MiB the program held). */
    CHECK_EQ(printed(&o, "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 206.5 MiB "
                           "for an array with shape (705, 76800) and data type float32", "1", &t),
             BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK(t.peak_bytes >= (UINT64_C(2065) << 20) / 10);
    CHECK(t.peak_bytes < (UINT64_C(2065) << 20) / 10 + (UINT64_C(64) << 20));
    CHECK_EQ(printed(&o, "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory "
                           "while trying to allocate 1073741824 bytes.", "1", &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK(t.peak_bytes >= UINT64_C(1073741824));
    CHECK(t.peak_bytes < UINT64_C(1073741824) + (UINT64_C(64) << 20));
}

TEST(child_user_pattern_counts_as_oom)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit__oom_table *table = NULL;
    CHECK_EQ(batchfit__oom_table_create(ctx, &table), BATCHFIT_OK);
    CHECK_EQ(batchfit__oom_table_add(table, "arena exhausted"), BATCHFIT_OK);
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.oom = table;
    const char *argv[] = {tool(), "print", "fatal: arena exhausted", "7", NULL};
    batchfit_trial t;
    CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK_CONTAINS(t.message, "user pattern");
    batchfit__oom_table_free(table);
    batchfit_ctx_free(ctx);
}

TEST(child_signals_and_exit_codes)
{
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    batchfit_trial t;
    
    const char *kill9[] = {tool(), "signal", "kill", NULL};
    CHECK_EQ(trial(&o, kill9, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK_EQ(t.process.signal, SIGKILL);
    CHECK_EQ(t.process.exit_code, 137);
    CHECK_CONTAINS(t.message, "SIGKILL");
    /* Without a cgroup the host's out-of-memory count is read: a SIGKILL it
     * does not count came from outside, and the message says so (unless
     * the kernel killed something else on this host meanwhile). */
    uint64_t before = 0, after = 0;
    if (batchfit__vmstat_oom_kills(&before) == 0) {
        batchfit__runner_options off = o;
        off.cgroups = BATCHFIT_CGROUPS_OFF;
        CHECK_EQ(trial(&off, kill9, 1, &t), BATCHFIT_OK);
        CHECK_EQ(t.outcome, BATCHFIT_OOM);
        if (batchfit__vmstat_oom_kills(&after) == 0 && after == before)
            CHECK_CONTAINS(t.message, "no out-of-memory kill recorded");
    }

    /* The same kill under a wrapper is the wrapper's exit status 137 (it
     * was an error there, and out of memory without the wrapper). */
    const char *wrapped[] = {"/bin/sh", "-c", "\"$0\" signal kill; exit $?", tool(), NULL};
    CHECK_EQ(trial(&o, wrapped, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK_EQ(t.process.signal, 0);
    CHECK_EQ(t.process.exit_code, 137);
    CHECK_CONTAINS(t.message, "exited with status 137, as a wrapper whose process was killed by "
                              "SIGKILL does");

    const char *segv[] = {tool(), "signal", "segv", NULL};
    CHECK_EQ(trial(&o, segv, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_ERROR);
    CHECK_EQ(t.process.signal, SIGSEGV);
    CHECK_CONTAINS(t.message, "signal 11 (SIGSEGV, status 139)");

    const char *abrt[] = {tool(), "signal", "abort", NULL};
    CHECK_EQ(trial(&o, abrt, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_ERROR);
    CHECK_CONTAINS(t.message, "SIGABRT");

    /* Every signal by its name, a real-time one by its place after SIGRTMIN
     * (SIGUSR1 read "signal 10 (a signal, status 138)"). */
    char expected[64];
    const char *usr1[] = {tool(), "signal", "usr1", NULL};
    CHECK_EQ(trial(&o, usr1, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_ERROR);
    snprintf(expected, sizeof expected, "signal %d (SIGUSR1, status %d)", SIGUSR1, 128 + SIGUSR1);
    CHECK_CONTAINS(t.message, expected);
    const char *rt3[] = {tool(), "signal", "rt3", NULL};
    CHECK_EQ(trial(&o, rt3, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_ERROR);
    snprintf(expected, sizeof expected, "signal %d (SIGRTMIN+3, status %d)", SIGRTMIN + 3,
             128 + SIGRTMIN + 3);
    CHECK_CONTAINS(t.message, expected);

    const char *bug[] = {tool(), "print", "ValueError: shapes (3,) and (4,) not aligned", "3", NULL};
    CHECK_EQ(trial(&o, bug, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_ERROR);
    CHECK_STR(t.message, "exited with status 3");
    CHECK_EQ(t.process.exit_code, 3);
    CHECK_CONTAINS(t.process.tail, "some earlier line\nValueError: shapes (3,) and (4,) not aligned\n");

    const char *missing[] = {"/nonexistent/batchfit-no-such-program", NULL};
    CHECK_EQ(trial(&o, missing, 1, &t), BATCHFIT_E_TRIAL_ERROR);
    CHECK_EQ(t.outcome, BATCHFIT_ERROR);
    CHECK_CONTAINS(t.message, "cannot run");

    /* A script that exists, its interpreter missing: the message names the
     * interpreter, not "No such file or directory" for the script. Not
     * under valgrind (CI's leak run): it lets a fork's execve of a file that
     * exists go ahead, and when the kernel then fails it, the fork dies
     * instead of reporting (the CLI's check covers the same script there,
     * cli_command_check_follows_execvp). */
    const char *preload = getenv("LD_PRELOAD");
    if (preload && strstr(preload, "vgpreload"))
        return;
    char script[128];
    snprintf(script, sizeof script, "/tmp/batchfit-test-%ld-interp.sh", (long)getpid());
    FILE *f = fopen(script, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("#!/nonexistent/interp\n", f);
        fclose(f);
    }
    chmod(script, 0755);
    const char *script_argv[] = {script, NULL};
    CHECK_EQ(trial(&o, script_argv, 1, &t), BATCHFIT_E_TRIAL_ERROR);
    CHECK_CONTAINS(t.message, "its interpreter /nonexistent/interp (its #! line) is not found");
    unlink(script);
}

TEST(child_timeout_kills_the_group)
{
    char pidfile[256];
    tmp_path(pidfile, sizeof pidfile, "hang");
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.timeout_seconds = 0.3;
    o.kill_grace_seconds = 0.2;
    const char *argv[] = {tool(), "hang", pidfile, "ignore-term", NULL};
    batchfit_trial t;
    
    CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_ERROR);
    CHECK(t.process.timed_out);
    CHECK_CONTAINS(t.message, "timed out after 0.3 s");
    CHECK(t.seconds >= 0.45 && t.seconds < 5.0);
    int count;
    CHECK_EQ(live_pids(pidfile, &count), 0);
    CHECK_EQ(count, 1);
    unlink(pidfile);
}

TEST(child_leaves_no_grandchildren)
{
    for (int cg = 0; cg < 2; cg++) {
        char pidfile[256];
        tmp_path(pidfile, sizeof pidfile, "grandchildren");
        batchfit__runner_options o = with_cgroup(cg);
        const char *argv[] = {tool(), "grandchildren", "4", pidfile, NULL};
        batchfit_trial t;
        CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
        CHECK_EQ(t.outcome, BATCHFIT_FITS);
        int count;
        CHECK_EQ(live_pids(pidfile, &count), 0);
        CHECK_EQ(count, 4);
        unlink(pidfile);
    }
}

TEST(child_flooding_output_is_read_to_the_end)
{
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    const char *argv[] = {tool(), "flood", "32", NULL};
    batchfit_trial t;
    
    CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_FITS);
    CHECK_CONTAINS(t.process.tail, "done\n");
    CHECK(strlen(t.process.tail) < sizeof t.process.tail);
}

TEST(child_watchdog_stops_a_trial_over_the_budget)
{
    for (int cg = 0; cg < 2; cg++) {
        batchfit__runner_options o = with_cgroup(cg);
        o.budget_bytes = UINT64_C(50) << 20;
        const char *argv[] = {tool(), "alloc", "400", NULL};
        batchfit_trial t;
        
        CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
        CHECK_EQ(t.outcome, BATCHFIT_OOM);
        CHECK(t.process.watchdog_stopped);
        CHECK_CONTAINS(t.message, "watchdog");
        CHECK(t.peak_known);
        CHECK(t.peak_bytes > (UINT64_C(50) << 20));
        /* Stopped long before it could touch all 400 MiB. */
        CHECK(t.process.sampled_peak_bytes < (UINT64_C(300) << 20));
    }
}

TEST(child_environment_and_placeholders)
{
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.vram_limit_gb = "7.5";
    const char *env[] = {tool(), "env", "BATCHFIT_BATCH_SIZE", NULL};
    batchfit_trial t;
    
    CHECK_EQ(trial(&o, env, 17, &t), BATCHFIT_OK);
    CHECK_STR(t.process.tail, "BATCHFIT_BATCH_SIZE=17\n");
    const char *vram[] = {tool(), "env", "VRAM_LIMIT_GB", NULL};
    CHECK_EQ(trial(&o, vram, 17, &t), BATCHFIT_OK);
    CHECK_STR(t.process.tail, "VRAM_LIMIT_GB=7.5\n");
    const char *args[] = {tool(), "args", "--batch-size", "{batch}", "--tag={{x}}-{batch}", NULL};
    CHECK_EQ(trial(&o, args, 96, &t), BATCHFIT_OK);
    CHECK_STR(t.process.tail, "arg: --batch-size\narg: 96\narg: --tag={x}-96\n");

    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit__runner *r = NULL;
    const char *bad[] = {tool(), "--bs={batchsize}", NULL};
    o.argv = bad;
    CHECK_EQ(batchfit__runner_create(ctx, &o, &r), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "--bs={batchsize}");
    const char *none[] = {NULL};
    o.argv = none;
    CHECK_EQ(batchfit__runner_create(ctx, &o, &r), BATCHFIT_E_INVALID_ARGUMENT);
    const char *plain[] = {tool(), "exit", "0", NULL};
    o.argv = plain;
    CHECK_EQ(batchfit__runner_create(ctx, &o, &r), BATCHFIT_OK);
    CHECK_EQ(batchfit__runner_has_placeholder(r), 0);
    batchfit__runner_free(r);
    batchfit_ctx_free(ctx);
}

TEST(child_enforce_caps_memory)
{
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.watchdog = 0;
    o.enforce = 1;
    o.enforce_bytes = UINT64_C(64) << 20;
    batchfit_trial t;

    /* Without a cgroup the cap is on resident memory: the group is stopped
     * past it, with or without the watchdog. */
    o.cgroups = BATCHFIT_CGROUPS_OFF;
    const char *checked[] = {tool(), "alloc", "400", NULL};
    CHECK_EQ(trial(&o, checked, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK(t.process.watchdog_stopped);
    CHECK_CONTAINS(t.message, "stopped at the --enforce cap");
    CHECK(t.peak_known && t.peak_bytes > o.enforce_bytes);
    CHECK_EQ(t.process.watchdog_overshoot_bytes, t.peak_bytes - o.enforce_bytes);

    /* Under the virtual-memory cap, asked for by name, a program that checks
     * its allocations reports the failure... */
    o.enforce = 0;
    o.enforce_address_space = 1;
    CHECK_EQ(trial(&o, checked, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK_CONTAINS(t.message, "out of memory");

    /* ...one that does not crashes near the cap: an error that says so... */
    const char *unchecked[] = {tool(), "unchecked", "400", NULL};
    CHECK_EQ(trial(&o, unchecked, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_ERROR);
    CHECK_EQ(t.process.signal, SIGSEGV);
    CHECK_CONTAINS(t.message, "unchecked allocation");
    CHECK_CONTAINS(t.message, "--crash-is-oom counts it");
    /* ...or out of memory, when the user says crashes near the cap are. */
    o.crash_is_oom = 1;
    CHECK_EQ(trial(&o, unchecked, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_OOM);
    CHECK_CONTAINS(t.message, "counted as out of memory");
    /* A plain failure under that cap says where to look: frameworks that
     * reserve address space fail there at any batch size. */
    const char *fails[] = {tool(), "exit", "1", NULL};
    CHECK_EQ(trial(&o, fails, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_ERROR);
    CHECK_CONTAINS(t.message, "exited with status 1 under the virtual-memory cap "
                              "(--enforce-address-space)");
    CHECK_CONTAINS(t.message, "try --enforce alone");

    /* Under a cgroup limit the kernel kills it. */
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit__runner *r = NULL;
    o.enforce = 1;
    o.enforce_address_space = 0;
    o.cgroups = BATCHFIT_CGROUPS_AUTO;
    o.argv = checked;
    CHECK_EQ(batchfit__runner_create(ctx, &o, &r), BATCHFIT_OK);
    if (strstr(batchfit__runner_mechanisms(r), "hard cap: cgroup")) {
        CHECK_EQ(batchfit__runner_trial(r, 1, &t), BATCHFIT_OK);
        CHECK_EQ(t.outcome, BATCHFIT_OOM);
        CHECK_EQ(t.process.signal, SIGKILL);
        CHECK(t.process.oom_killed);
        CHECK_CONTAINS(t.message, "cgroup's memory limit");
    }
    batchfit__runner_free(r);
    batchfit_ctx_free(ctx);
}

static void interrupt_soon(int sig)
{
    (void)sig;
    batchfit_interrupt(sig);
}

TEST(child_interrupt_stops_the_trial)
{
    char pidfile[256];
    tmp_path(pidfile, sizeof pidfile, "interrupt");
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    const char *argv[] = {tool(), "hang", pidfile, NULL};
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = interrupt_soon;
    sigaction(SIGALRM, &sa, &old);
    struct itimerval timer = {{0, 0}, {0, 300000}};
    setitimer(ITIMER_REAL, &timer, NULL);
    batchfit_trial t;
    int rc = trial(&o, argv, 1, &t);
    sigaction(SIGALRM, &old, NULL);
    CHECK_EQ(rc, BATCHFIT_E_ABORTED);
    int count;
    CHECK_EQ(live_pids(pidfile, &count), 0);
    CHECK_EQ(count, 1);
    /* A pending interrupt stops the next trial before it starts. */
    CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_E_ABORTED);
    batchfit__interrupt_clear();
    const char *ok[] = {tool(), "exit", "0", NULL};
    CHECK_EQ(trial(&o, ok, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_FITS);
    unlink(pidfile);
}

TEST(child_mechanisms_are_reported)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    const char *argv[] = {tool(), "exit", "0", NULL};
    o.argv = argv;
    o.cgroups = BATCHFIT_CGROUPS_OFF;
    o.budget_bytes = 1 << 30;
    batchfit__runner *r = NULL;
    CHECK_EQ(batchfit__runner_create(ctx, &o, &r), BATCHFIT_OK);
    CHECK_STR(batchfit__runner_mechanisms(r),
              "peak: rusage+sampling (no cgroup: cgroups turned off); watchdog: sampling every 20 ms");
    batchfit__runner_free(r);
    o.cgroups = BATCHFIT_CGROUPS_AUTO;
    o.enforce = 1;
    CHECK_EQ(batchfit__runner_create(ctx, &o, &r), BATCHFIT_OK);
    const char *m = batchfit__runner_mechanisms(r);
    CHECK(strstr(m, "peak: cgroup-v") || strstr(m, "peak: rusage+sampling (no cgroup: "));
    CHECK_CONTAINS(m, "hard cap: ");
    batchfit__runner_free(r);
    batchfit_ctx_free(ctx);
}

/* Every allocation of the child-trial path (OOM table, runner, a trial) is
 * failed in turn: a clean error, no leak, no process left. */
TEST(child_every_allocation_failure_is_clean)
{
    long total = -1;
    for (long k = 0; total < 0 || k < total; k++) {
        test_alloc_state st = {0, total < 0 ? -1 : k, 0, 0};
        batchfit_ctx *ctx = test_ctx(&st);
        batchfit__oom_table *table = NULL;
        batchfit__runner *r = NULL;
        int rc = -1;
        batchfit_trial t;
        if (ctx && batchfit__oom_table_create(ctx, &table) == BATCHFIT_OK) {
            batchfit__runner_options o;
            batchfit__runner_options_init(&o);
            const char *argv[] = {tool(), "exit", "0", "{batch}", NULL};
            o.argv = argv;
            if (batchfit__runner_create(ctx, &o, &r) == BATCHFIT_OK)
                rc = batchfit__runner_trial(r, 4, &t);
        }
        if (total < 0) {
            CHECK_EQ(rc, BATCHFIT_OK);
            CHECK_EQ(t.outcome, BATCHFIT_FITS);
            total = st.calls;
        } else if (st.failures == 0) {
            /* Watching a trial allocates as often as it lasts, so a run may
             * make fewer calls than the first: then nothing failed. */
            CHECK(st.calls <= k);
            CHECK_EQ(rc, BATCHFIT_OK);
        } else {
            CHECK_EQ(st.failures, 1);
            CHECK(rc != BATCHFIT_OK);
        }
        batchfit__runner_free(r);
        batchfit__oom_table_free(table);
        batchfit_ctx_free(ctx);
        CHECK_EQ(st.outstanding, 0);
    }
    CHECK(total >= 5);
}

static void keep_warning(batchfit_log_level level, const char *message, void *userdata)
{
    if (level == BATCHFIT_LOG_WARN)
        snprintf((char *)userdata, 512, "%s", message);
}

/* --show-output into a stderr nobody reads (a full pipe): the copy gives up
 * instead of blocking, so the trial's timeout still ends it (the blocking
 * copy had stopped the watch loop for good, timeout and watchdog with it),
 * and what was not shown is said. */
TEST(child_show_output_never_blocks_on_a_stalled_stderr)
{
    int p[2];
    CHECK_EQ(pipe(p), 0);
    /* Fill the pipe: a reader that has stopped. */
    int flags = fcntl(p[1], F_GETFL);
    fcntl(p[1], F_SETFL, flags | O_NONBLOCK);
    static const char block[4096] = {0};
    while (write(p[1], block, sizeof block) > 0)
        ;
    fcntl(p[1], F_SETFL, flags);
    fflush(stderr);
    int saved = dup(2);
    CHECK(saved >= 0);
    dup2(p[1], 2);
    char script[2100];
    snprintf(script, sizeof script, "'%s' flood 1; exec '%s' hang", tool(), tool());
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    o.show_output = 1;
    o.timeout_seconds = 0.5;
    o.kill_grace_seconds = 0.2;
    o.argv = argv;
    char warning[512] = "";
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_ctx_set_log(ctx, keep_warning, warning, BATCHFIT_LOG_WARN);
    batchfit__runner *r = NULL;
    batchfit_trial t;
    int rc = batchfit__runner_create(ctx, &o, &r);
    if (rc == BATCHFIT_OK)
        rc = batchfit__runner_trial(r, 1, &t);
    batchfit__runner_free(r);
    batchfit_ctx_free(ctx);
    dup2(saved, 2);
    close(saved);
    close(p[0]);
    close(p[1]);
    CHECK_EQ(rc, BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_ERROR);
    CHECK(t.process.timed_out);
    /* 1 MiB of lines and "done" were written; none fitted. */
    CHECK_CONTAINS(warning, "--show-output: 1048581 bytes of the trial's output at batch size 1 "
                            "were not shown");
}

/* A trial is what the kernel kills first when memory runs out (a cgroup's
 * limit, the machine's): under a 5 MiB cgroup limit the kernel took
 * batchfit itself, as large as the child between its fork and exec (exit
 * 137, nothing said). The command and what it starts inherit the score. */
TEST(child_trials_are_the_kernel_s_first_choice_out_of_memory)
{
    /* A runner at 1000 already (run in a trial, or so configured) would
     * pass it on with or without the change: nothing to tell. */
    FILE *f = fopen("/proc/self/oom_score_adj", "r");
    int own = 0;
    if (f) {
        if (fscanf(f, "%d", &own) != 1)
            own = 0;
        fclose(f);
    }
    if (own == 1000) {
        fprintf(stderr, "    skipped: this runner's own oom_score_adj is 1000 already\n");
        return;
    }
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    const char *argv[] = {"/bin/sh", "-c",
                          "read own < /proc/self/oom_score_adj; "
                          "sh -c 'read started < /proc/self/oom_score_adj; "
                          "[ \"$started\" = 1000 ]' && [ \"$own\" = 1000 ]",
                          NULL};
    batchfit_trial t;
    CHECK_EQ(trial(&o, argv, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_FITS);
    CHECK_EQ(t.process.exit_code, 0);
}
