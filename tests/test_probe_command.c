/* batchfit_probe_command: the child-process probe run by the library, as a
 * program that embeds batchfit runs it (real child processes throughout). */
#include "test.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *tool(void)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/tests/childtool", test_build_dir());
    return path;
}

typedef struct progress_log {
    size_t calls;
    size_t last_count;
    int json_ok;
} progress_log;

/* Progress sees the result grow one trial at a time, and its JSON can be
 * written from inside the callback. */
static int record(const batchfit_result *r, const batchfit_trial *t, void *userdata)
{
    progress_log *log = userdata;
    log->calls++;
    log->last_count = r->trial_count;
    const char *json = NULL;
    batchfit_ctx *ctx = test_ctx(NULL);
    log->json_ok = t == &r->trials[r->trial_count - 1] && t->process.ran &&
                   batchfit_result_json(ctx, r, &json) == BATCHFIT_OK &&
                   strstr(json, "\"schema_version\": 1") != NULL &&
                   strstr(json, "\"complete\": false") != NULL &&
                   strstr(json, "\"exit_code\": null") != NULL && !r->complete;
    batchfit_ctx_free(ctx);
    return 0;
}

TEST(probe_command_finds_the_largest_size_in_the_library)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_options o;
    batchfit_device *host = test_host(ctx, &o, UINT64_C(96) << 20);
    o.peak_spread = 0.0;
    progress_log log = {0, 0, 0};
    o.progress = record;
    o.progress_userdata = &log;
    batchfit_command_options c;
    batchfit_command_options_init(&c);
    /* 8 MiB fixed + 1 MiB per sample: about 80 fit in the 91.2 MiB budget. */
    const char *argv[] = {tool(), "grow", "1024", "8192", "{batch}", NULL};
    c.argv = argv;
    batchfit_result *r = NULL;
    CHECK_EQ(batchfit_probe_command(ctx, &o, host, &c, &r), BATCHFIT_OK);
    CHECK(r != NULL);
    CHECK(r->batch_size >= 70 && r->batch_size <= 84);
    CHECK_EQ(r->status, BATCHFIT_OK);
    CHECK(r->error == NULL);
    CHECK_EQ(r->command_argc, 5);
    CHECK_STR(r->command[4], "{batch}");
    CHECK_STR(r->device_spec, "host");
    CHECK(r->mechanisms != NULL && strncmp(r->mechanisms, "peak: ", 6) == 0);
    CHECK_EQ(log.calls, r->trial_count);
    CHECK_EQ(log.last_count, r->trial_count);
    CHECK(log.json_ok);
    for (size_t i = 0; i < r->trial_count; i++) {
        CHECK(r->trials[i].process.ran);
        if (r->trials[i].outcome == BATCHFIT_FITS)
            CHECK_EQ(r->trials[i].process.exit_code, 0);
    }
    const char *json = NULL;
    CHECK_EQ(batchfit_result_json(ctx, r, &json), BATCHFIT_OK);
    CHECK_CONTAINS(json, "\"exit_code\": 0");
    CHECK_CONTAINS(json, "\"peak_source\": ");
    batchfit_result_free(r);
    batchfit_device_free(host);
    batchfit_ctx_free(ctx);
}

/* A probe of argv on the host under budget, sizes up to 64. */
static batchfit_device *command_setup(batchfit_ctx *ctx, batchfit_options *o, uint64_t budget,
                                      batchfit_command_options *c, const char **argv)
{
    batchfit_device *host = test_host(ctx, o, budget);
    o->requested_max = 64;
    batchfit_command_options_init(c);
    c->argv = argv;
    return host;
}

/* A command that hands its work to a process running on reads as fitting
 * at every size (the trial ends with its main process); the probe says
 * once, naming what was left running, and each trial's JSON counts it. */
TEST(probe_command_warns_of_work_left_running)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_options o;
    batchfit_command_options c;
    const char *argv[] = {tool(), "leave", "1", "{batch}", NULL};
    batchfit_device *host = command_setup(ctx, &o, UINT64_C(96) << 20, &c, argv);
    batchfit_result *r = NULL;
    CHECK_EQ(batchfit_probe_command(ctx, &o, host, &c, &r), BATCHFIT_OK);
    CHECK(r != NULL);
    if (r) {
        CHECK(r->trial_count >= 2);
        /* Once, at the first trial. */
        char first[64];
        snprintf(first, sizeof first, "at batch size %llu the command's",
                 (unsigned long long)r->trials[0].batch);
        size_t said = 0;
        for (size_t i = 0; i < r->warning_count; i++)
            if (strstr(r->warnings[i], "main process exited with 1 process of its own still "
                                       "running (left-worker), and it was stopped then")) {
                said++;
                CHECK_CONTAINS(r->warnings[i], first);
            }
        CHECK_EQ(said, 1u);
        for (size_t i = 0; i < r->trial_count; i++)
            CHECK_EQ(r->trials[i].process.left_running, 1u);
        const char *json = NULL;
        CHECK_EQ(batchfit_result_json(ctx, r, &json), BATCHFIT_OK);
        CHECK_CONTAINS(json, "\"left_running\": 1,\n      \"left_running_name\": \"left-worker\"");
    }
    batchfit_result_free(r);
    batchfit_device_free(host);
    batchfit_ctx_free(ctx);
}

/* Bad input is refused before anything runs, with the input named. */
TEST(probe_command_rejects_bad_input_before_running)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_options o;
    batchfit_device *host = test_host(ctx, &o, UINT64_C(64) << 20);
    batchfit_command_options c;
    batchfit_command_options_init(&c);
    batchfit_result *r = NULL;
    CHECK_EQ(batchfit_probe_command(ctx, &o, host, &c, &r), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK(r == NULL);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "no command");
    const char *bad_template[] = {tool(), "exit", "0", "{bs}", NULL};
    c.argv = bad_template;
    CHECK_EQ(batchfit_probe_command(ctx, &o, host, &c, &r), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(r->error, "{bs}");
    CHECK_EQ(r->trial_count, 0);
    batchfit_result_free(r);
    const char *patterns[] = {"(unclosed", NULL};
    const char *ok[] = {tool(), "exit", "0", "{batch}", NULL};
    c.argv = ok;
    c.oom_patterns = patterns;
    CHECK_EQ(batchfit_probe_command(ctx, &o, host, &c, &r), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(r->error, "(unclosed");
    CHECK_EQ(r->trial_count, 0);
    CHECK_EQ(batchfit_exit_status(r->status), 2);
    batchfit_result_free(r);
    /* A pattern matching an empty line (every line, or every blank one). */
    const char *every_line[] = {"x*", NULL};
    c.oom_patterns = every_line;
    CHECK_EQ(batchfit_probe_command(ctx, &o, host, &c, &r), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(r->error, "\"x*\" matches an empty line");
    CHECK_EQ(r->trial_count, 0);
    batchfit_result_free(r);
    c.oom_patterns = NULL;
    /* crash_is_oom with no cap to crash near; then with one it runs. */
    c.crash_is_oom = 1;
    r = NULL;
    CHECK_EQ(batchfit_probe_command(ctx, &o, host, &c, &r), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "crash_is_oom");
    batchfit_result_free(r);
    c.crash_is_oom = 0;
    c.struct_size = sizeof c - 1;
    CHECK_EQ(batchfit_probe_command(ctx, &o, host, &c, &r), BATCHFIT_E_INVALID_ARGUMENT);
    batchfit_device_free(host);
    batchfit_ctx_free(ctx);
}

/* A trial that could not start is an error with its cause, never an
 * outcome: with file descriptors exhausted the pipe cannot be made, the
 * search stops, nothing is recorded as fitting. */
TEST(probe_command_trial_that_did_not_run_is_an_error)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_options o;
    batchfit_command_options c;
    const char *argv[] = {"/bin/false", NULL};
    batchfit_device *host = command_setup(ctx, &o, UINT64_C(1) << 30, &c, argv);
    c.cgroups = BATCHFIT_CGROUPS_OFF;
    /* Fill every descriptor the limit allows but one: /proc can still be
     * read one file at a time, but a pipe (two) cannot be made. */
    struct rlimit saved;
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
    struct rlimit low = {64, saved.rlim_max};
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
    int fds[64];
    int held = 0;
    /* Not dup(0): stdin may be closed where the tests run. */
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    CHECK(null >= 0);
    fds[held++] = null;
    while (held < 64 && (fds[held] = dup(null)) >= 0)
        held++;
    CHECK(held > 0);
    close(fds[--held]);
    batchfit_result *r = NULL;
    int rc = batchfit_probe_command(ctx, &o, host, &c, &r);
    while (held > 0)
        close(fds[--held]);
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
    CHECK_EQ(rc, BATCHFIT_E_TRIAL_ERROR);
    CHECK_CONTAINS(r->error, "cannot create pipe");
    CHECK_EQ(r->trial_count, 0);
    CHECK_EQ(r->batch_size, 0);
    CHECK_EQ(batchfit_exit_status(rc), 4);
    batchfit_result_free(r);
    batchfit_device_free(host);
    batchfit_ctx_free(ctx);
}

/* Every allocation of the command probe (result, report strings, cache key
 * and entry, OOM table, runner, trials, JSON) is failed in turn: the call
 * fails cleanly, records no trial it did not run, leaks nothing and leaves
 * no process behind. */
TEST(probe_command_every_allocation_failure_is_clean)
{
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/batchfit-test-%ld-probecmd-cache", (long)getpid());
    batchfit_ctx *plain = test_ctx(NULL);
    batchfit_device *host = NULL;
    CHECK_EQ(batchfit_device_open(plain, "host", &host), BATCHFIT_OK);
    const char *argv[] = {tool(), "exit", "0", "{batch}", NULL};
    long total = -1;
    for (long k = 0; total < 0 || k < total; k++) {
        test_alloc_state st = {0, total < 0 ? -1 : k, 0, 0};
        batchfit_ctx *ctx = test_ctx(&st);
        CHECK(ctx != NULL);
        batchfit_options o;
        batchfit_options_init(&o);
        o.memory_budget_bytes = UINT64_C(256) << 20;
        o.requested_max = 4;
        o.cache = 1;
        o.cache_dir = dir;
        batchfit_command_options c;
        batchfit_command_options_init(&c);
        c.argv = argv;
        batchfit_result *r = NULL;
        int rc = batchfit_probe_command(ctx, &o, host, &c, &r);
        CHECK(r == NULL || r->status == rc);
        const char *json = NULL;
        if (rc == BATCHFIT_OK && batchfit_result_json(ctx, r, &json) != BATCHFIT_OK)
            rc = BATCHFIT_E_NO_MEMORY;
        if (total < 0) {
            CHECK_EQ(rc, BATCHFIT_OK);
            CHECK_EQ(r->batch_size, 4);
            total = st.calls;
        } else if (st.failures == 0) {
            /* Watching a trial allocates as often as it lasts, so a run may
             * make fewer calls than the first: then nothing failed. */
            CHECK(st.calls <= k);
            CHECK_EQ(rc, BATCHFIT_OK);
        } else {
            CHECK_EQ(st.failures, 1);
            CHECK(rc != BATCHFIT_OK);
            for (size_t i = 0; r && i < r->trial_count; i++)
                CHECK_EQ(r->trials[i].outcome, BATCHFIT_FITS);
        }
        batchfit_result_free(r);
        batchfit_ctx_free(ctx);
        CHECK_EQ(st.outstanding, 0);
        size_t removed;
        batchfit_cache_clear(plain, dir, &removed);
    }
    CHECK(total >= 10);
    /* No trial outlived its probe: we have no children left. */
    CHECK_EQ(waitpid(-1, NULL, WNOHANG), -1);
    char lock[300];
    snprintf(lock, sizeof lock, "%s/.lock", dir);
    unlink(lock);
    rmdir(dir);
    batchfit_device_free(host);
    batchfit_ctx_free(plain);
}
