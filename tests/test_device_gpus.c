/* Devices of several GPUs ("cuda:1,0", "cuda:all") through the fake
 * libcuda.so.1 and libnvidia-ml.so.1 (tests/fake/): scripted GPUs of
 * different sizes, a child that uses each differently (childtool
 * gpu-grow-each), each GPU held to its own budget. */
#include "test.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static char state_path[256];

static const char *fake(const char *name)
{
    static char paths[2][1024];
    static int next;
    char *p = paths[next++ % 2];
    snprintf(p, 1024, "%s/fake/%s", test_build_dir(), name);
    return p;
}

static const char *tool(void)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/tests/childtool", test_build_dir());
    return path;
}

static const char *const knobs[] = {"FAKE_CUDA_INIT", "FAKE_CUDA_ALLOC_FAIL",
                                    "FAKE_CUDA_ALLOC_FAIL_ON", "FAKE_NVML_INIT",
                                    "FAKE_NVML_STRIDE", "FAKE_NVML_GROW", "CUDA_VISIBLE_DEVICES"};

static void fake_setup(const char *gpus)
{
    snprintf(state_path, sizeof state_path, "/tmp/batchfit-test-%ld-gpus", (long)getpid());
    unlink(state_path);
    setenv("FAKE_STATE", state_path, 1);
    setenv("FAKE_GPUS", gpus, 1);
    setenv("BATCHFIT_CUDA_LIBRARY", fake("libcuda.so.1"), 1);
    setenv("BATCHFIT_NVML_LIBRARY", fake("libnvidia-ml.so.1"), 1);
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
        unsetenv(knobs[i]);
}

static void fake_teardown(void)
{
    static const char *const vars[] = {"FAKE_STATE", "FAKE_GPUS", "BATCHFIT_CUDA_LIBRARY",
                                       "BATCHFIT_NVML_LIBRARY"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
        unsetenv(knobs[i]);
    test_isolate_environment();
    unlink(state_path);
}

/* Nothing is allocated on any fake GPU by a live process: every ballast
 * was released and every child is gone (a dead one's lines count for
 * nothing, as a driver frees a dead process's memory). */
static int fake_gpus_empty(void)
{
    FILE *f = fopen(state_path, "r");
    if (!f)
        return 1;
    long pid;
    int device;
    unsigned long long bytes, handle;
    int empty = 1;
    while (fscanf(f, "%ld %d %llu %llu", &pid, &device, &bytes, &handle) == 4)
        if (kill((pid_t)pid, 0) == 0)
            empty = 0;
    fclose(f);
    return empty;
}

#define GIB(n) ((uint64_t)(n) << 30)
#define MIB(n) ((uint64_t)(n) << 20)

TEST(device_gpus_scale_to_budget_keeps_the_verdict)
{
    CHECK_EQ(batchfit__scale_to_budget(100, 200, 50), 25);
    CHECK_EQ(batchfit__scale_to_budget(101, 200, 50), 26); /* rounded up: still over */
    CHECK_EQ(batchfit__scale_to_budget(77, 77, 77), 77);
    CHECK_EQ(batchfit__scale_to_budget(77, 0, 5), 77);
    CHECK_EQ(batchfit__scale_to_budget(77, 5, 0), 77);
    /* Within a budget exactly when the scaled peak is within the reference,
     * at sizes where peak * reference passes 64 bits. */
    uint64_t budget = GIB(23) + 12345, ref = GIB(15) + 999;
    CHECK(batchfit__scale_to_budget(budget, budget, ref) <= ref);
    CHECK(batchfit__scale_to_budget(budget + 1, budget, ref) > ref);
    CHECK_EQ(batchfit__scale_to_budget(UINT64_MAX, 1, 2), UINT64_MAX);
}

TEST(device_gpus_open_lists_and_all)
{
    fake_setup("16GiB,24GiB,8GiB");
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, "cuda:2,0", &d), BATCHFIT_OK);
    CHECK_EQ(batchfit_device_available(d, NULL), 1);
    CHECK_STR(batchfit_device_kind(d), "cuda");
    CHECK_STR(batchfit_device_spec(d), "cuda:2,0");
    CHECK_EQ(batchfit_device_gpu_count(d), 2);
    batchfit_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_EQ(batchfit_device_describe(d, &info), BATCHFIT_OK);
    CHECK_STR(info.name, "Fake GPU 8GB + Fake GPU 16GB");
    CHECK_STR(info.uuid, "");
    CHECK_EQ(info.index, 2);
    CHECK_EQ(info.per_process_memory, 1);
    CHECK_EQ(batchfit_device_describe_gpu(d, 1, &info), BATCHFIT_OK);
    CHECK_STR(info.name, "Fake GPU 16GB");
    CHECK_STR(info.uuid, "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
    CHECK_EQ(batchfit_device_describe_gpu(d, 2, &info), BATCHFIT_E_INVALID_ARGUMENT);
    /* The device's memory is its tightest GPU's. */
    uint64_t total = 0, free_bytes = 0;
    CHECK_EQ(batchfit_device_memory(d, &total, &free_bytes), BATCHFIT_OK);
    CHECK_EQ(total, GIB(8));
    batchfit_device_free(d);

    CHECK_EQ(batchfit_device_open(ctx, "cuda:all", &d), BATCHFIT_OK);
    CHECK_STR(batchfit_device_spec(d), "cuda:0,1,2");
    CHECK_EQ(batchfit_device_gpu_count(d), 3);
    batchfit_device_free(d);
    /* One GPU is one GPU; the host and sim devices have none. */
    CHECK_EQ(batchfit_device_open(ctx, "cuda:1", &d), BATCHFIT_OK);
    CHECK_EQ(batchfit_device_gpu_count(d), 1);
    CHECK_EQ(batchfit_device_describe_gpu(d, 0, &info), BATCHFIT_OK);
    CHECK_STR(info.name, "Fake GPU 24GB");
    batchfit_device_free(d);
    CHECK_EQ(batchfit_device_open(ctx, "host", &d), BATCHFIT_OK);
    CHECK_EQ(batchfit_device_gpu_count(d), 0);
    batchfit_device_free(d);

    /* A GPU that is not there makes the whole device unavailable, saying
     * which. */
    CHECK_EQ(batchfit_device_open(ctx, "cuda:0,5", &d), BATCHFIT_OK);
    const char *why = NULL;
    CHECK_EQ(batchfit_device_available(d, &why), 0);
    CHECK_CONTAINS(why, "cuda:5");
    CHECK_EQ(batchfit_device_gpu_count(d), 0);
    batchfit_device_free(d);

    static const struct {
        const char *spec;
        const char *expect;
    } bad[] = {
        {"cuda:0,0", "GPU 0 is listed twice"},
        {"cuda:0,", "separated by commas"},
        {"cuda:,1", "separated by commas"},
        {"cuda:0,x", "separated by commas"},
        {"cuda:0,1024", "from 0 to 1023"},
        {"cuda:0,-1", "separated by commas"},
        {"cuda:0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16", "at most 16 GPUs"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ(batchfit_device_open(ctx, bad[i].spec, &d), BATCHFIT_E_INVALID_ARGUMENT);
        CHECK(d == NULL);
        CHECK_CONTAINS(batchfit_ctx_last_error(ctx), bad[i].expect);
    }

    setenv("FAKE_GPUS", "16GiB,16GiB", 1);
    CHECK_EQ(batchfit_device_open(ctx, "cuda:all", &d), BATCHFIT_OK);
    CHECK_EQ(batchfit_device_describe(d, &info), BATCHFIT_OK);
    CHECK_STR(info.name, "2 x Fake GPU 16GB");
    batchfit_device_free(d);
    setenv("FAKE_GPUS", "", 1);
    CHECK_EQ(batchfit_device_open(ctx, "cuda:all", &d), BATCHFIT_OK);
    CHECK_EQ(batchfit_device_available(d, &why), 0);
    CHECK_CONTAINS(why, "cuda:all: 0 visible CUDA devices");
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
    fake_teardown();
}

TEST(device_gpus_open_every_allocation_failure_is_clean)
{
    fake_setup("16GiB,24GiB");
    long total = -1;
    for (long k = 0; total < 0 || k < total; k++) {
        test_alloc_state st = {0, total < 0 ? -1 : k, 0, 0};
        batchfit_ctx *ctx = test_ctx(&st);
        CHECK(ctx != NULL);
        batchfit_device *d = NULL;
        int rc = batchfit_device_open(ctx, "cuda:all", &d);
        if (total < 0) {
            CHECK_EQ(rc, BATCHFIT_OK);
            total = st.calls;
        } else {
            CHECK_EQ(rc, BATCHFIT_E_NO_MEMORY);
            CHECK(d == NULL);
        }
        batchfit_device_free(d);
        batchfit_ctx_free(ctx);
        CHECK_EQ(st.outstanding, 0);
    }
    CHECK(total >= 4);
    fake_teardown();
}

/* Probes "gpu-grow-each 100,50 1024" (1 GiB and 100 MiB a sample on the
 * first GPU it sees, 1 GiB and 50 MiB on the second) on spec; returns the
 * result. */
static int probe_each(batchfit_ctx *ctx, const char *spec, batchfit_result **r)
{
    batchfit_device *d = NULL;
    int rc = batchfit_device_open(ctx, spec, &d);
    if (rc)
        return rc;
    const char *argv[] = {tool(), "gpu-grow-each", "100,50", "1024", NULL};
    batchfit_options o;
    batchfit_options_init(&o);
    batchfit_command_options c;
    batchfit_command_options_init(&c);
    c.argv = argv;
    rc = batchfit_probe_command(ctx, &o, d, &c, r);
    batchfit_device_free(d);
    return rc;
}

TEST(device_gpus_probe_judges_each_gpu_against_its_own_budget)
{
    fake_setup("16GiB,24GiB");
    batchfit_ctx *ctx = test_ctx(NULL);
    /* cuda:1 (24 GiB) sees 100 MiB a sample, cuda:0 (16 GiB) 50 MiB. The
     * tightest budget is cuda:0's, but cuda:1 binds: (0.95 * 24 GiB -
     * 1 GiB) / 100 MiB = 223.2, where cuda:0 alone would allow 290. */
    batchfit_result *r = NULL;
    CHECK_EQ(probe_each(ctx, "cuda:1,0", &r), BATCHFIT_OK);
    CHECK_EQ(r->batch_size, 223);
    CHECK_EQ(r->gpu_count, 2);
    CHECK_STR(r->gpus[0].spec, "cuda:1");
    CHECK_STR(r->gpus[1].spec, "cuda:0");
    CHECK_STR(r->gpus[0].name, "Fake GPU 24GB");
    CHECK_EQ(r->gpus[0].budget_bytes, GIB(24) - (uint64_t)((double)GIB(24) * 0.05));
    CHECK_EQ(r->gpus[1].budget_bytes, GIB(16) - (uint64_t)((double)GIB(16) * 0.05));
    /* The margin was held on each GPU, and the tightest is the reference. */
    CHECK_EQ(r->gpus[0].held_bytes, (uint64_t)((double)GIB(24) * 0.05));
    CHECK_EQ(r->gpus[1].held_bytes, (uint64_t)((double)GIB(16) * 0.05));
    CHECK_EQ(r->budget_gpu, 1);
    CHECK_EQ(r->budget.budget_bytes, r->gpus[1].budget_bytes);
    CHECK_EQ(r->budget.held_bytes, r->gpus[1].held_bytes);
    /* Small sizes are bound by cuda:0 (the fixed GiB weighs more in its
     * smaller budget), large ones by cuda:1: the scaled peaks bend, so the
     * model strategy takes more trials than on one GPU (9 or 10 here: what
     * an out-of-memory trial is seen to need depends on sampling). */
    CHECK(r->trial_count <= 12);
    int saw_answer = 0;
    for (size_t t = 0; t < r->trial_count; t++) {
        const batchfit_trial *trial = &r->trials[t];
        const batchfit_gpu_peak *p = &r->gpu_peaks[t * 2];
        CHECK_CONTAINS(trial->process.peak_source, "worst GPU against its own budget");
        if (trial->outcome != BATCHFIT_FITS)
            continue;
        /* Each GPU's own peak, per process through NVML, summed over the
         * trial's processes. */
        CHECK_EQ(p[0].peak_known, 1);
        CHECK_EQ(p[0].peak_bytes, MIB(1024 + 100 * trial->batch));
        CHECK_EQ(p[1].peak_bytes, MIB(1024 + 50 * trial->batch));
        /* The judged peak is the worst GPU's, scaled to the reference. */
        uint64_t worst = batchfit__scale_to_budget(p[0].peak_bytes, r->gpus[0].budget_bytes,
                                                   r->budget.budget_bytes);
        uint64_t other = batchfit__scale_to_budget(p[1].peak_bytes, r->gpus[1].budget_bytes,
                                                   r->budget.budget_bytes);
        CHECK_EQ(trial->peak_bytes, worst > other ? worst : other);
        CHECK_EQ(trial->accepted, p[0].peak_bytes <= r->gpus[0].budget_bytes &&
                                      p[1].peak_bytes <= r->gpus[1].budget_bytes);
        saw_answer += trial->batch == 223 && trial->accepted;
    }
    CHECK_EQ(saw_answer, 1);
    const char *json = NULL;
    CHECK_EQ(batchfit_result_json(ctx, r, &json), BATCHFIT_OK);
    CHECK_CONTAINS(json, "\"gpu\": \"cuda:0\"");
    CHECK_CONTAINS(json, "\"spec\": \"cuda:1\",\n      \"name\": \"Fake GPU 24GB\"");
    char row[160];
    snprintf(row, sizeof row,
             "\"spec\": \"cuda:1\",\n          \"peak_bytes\": %llu,\n          \"budget_bytes\": "
             "%llu",
             (unsigned long long)MIB(1024 + 100 * 223),
             (unsigned long long)r->gpus[0].budget_bytes);
    CHECK_CONTAINS(json, row);
    batchfit_result_free(r);
    CHECK(fake_gpus_empty());

    /* Bisection finds the same size. */
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, "cuda:1,0", &d), BATCHFIT_OK);
    const char *argv[] = {tool(), "gpu-grow-each", "100,50", "1024", NULL};
    batchfit_options o;
    batchfit_options_init(&o);
    o.strategy = BATCHFIT_STRATEGY_BISECT;
    o.requested_max = 512;
    batchfit_command_options c;
    batchfit_command_options_init(&c);
    c.argv = argv;
    CHECK_EQ(batchfit_probe_command(ctx, &o, d, &c, &r), BATCHFIT_OK);
    CHECK_EQ(r->batch_size, 223);
    batchfit_result_free(r);
    batchfit_device_free(d);

    /* The other order: the child's first GPU is now the 16 GiB one, at 100
     * MiB a sample: (0.95 * 16 GiB - 1 GiB) / 100 MiB = 145.4. */
    CHECK_EQ(probe_each(ctx, "cuda:0,1", &r), BATCHFIT_OK);
    CHECK_EQ(r->batch_size, 145);
    CHECK_EQ(r->budget_gpu, 0);
    batchfit_result_free(r);
    /* Identical GPUs (torchrun's usual case): the scaled peak is the larger
     * peak, the same GPU binds at every size, and the search is as short as
     * on one GPU. */
    setenv("FAKE_GPUS", "16GiB,16GiB", 1);
    CHECK_EQ(probe_each(ctx, "cuda:all", &r), BATCHFIT_OK);
    CHECK_EQ(r->batch_size, 145);
    CHECK(r->trial_count <= 4);
    batchfit_result_free(r);
    setenv("FAKE_GPUS", "16GiB,24GiB", 1);
    CHECK(fake_gpus_empty());
    /* Without NVML, each GPU's peak is the drop in its free memory. */
    setenv("BATCHFIT_NVML_LIBRARY", fake("nonexistent/libnvidia-ml.so.1"), 1);
    CHECK_EQ(probe_each(ctx, "cuda:1,0", &r), BATCHFIT_OK);
    CHECK_EQ(r->batch_size, 223);
    CHECK_CONTAINS(r->trials[0].process.peak_source, "device free memory");
    batchfit_result_free(r);
    CHECK(fake_gpus_empty());
    CHECK_EQ(waitpid(-1, NULL, WNOHANG), -1);
    batchfit_ctx_free(ctx);
    fake_teardown();
}

TEST(device_gpus_trial_sees_exactly_those_gpus_in_order)
{
    fake_setup("16GiB,24GiB,8GiB");
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, "cuda:2,0", &d), BATCHFIT_OK);
    batchfit__runner_options o;
    batchfit__runner_options_init(&o);
    const char *argv[] = {tool(), "env", "CUDA_VISIBLE_DEVICES", NULL};
    o.argv = argv;
    o.device = d;
    batchfit__runner *runner = NULL;
    CHECK_EQ(batchfit__runner_create(ctx, &o, &runner), BATCHFIT_OK);
    CHECK_CONTAINS(batchfit__runner_mechanisms(runner),
                   "nvml per-process sampling on each of 2 GPUs");
    batchfit_trial t;
    CHECK_EQ(batchfit__runner_trial(runner, 1, &t), BATCHFIT_OK);
    CHECK_EQ(t.outcome, BATCHFIT_FITS);
    CHECK_CONTAINS(t.process.tail, "CUDA_VISIBLE_DEVICES=GPU-30313233-3435-3637-3839-3a3b3c3d3e3f,"
                                   "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f\n");
    unsigned count = 0;
    const batchfit_gpu_peak *p = batchfit__runner_gpu_peaks(runner, &count);
    CHECK_EQ(count, 2);
    CHECK_EQ(p[0].peak_known, 1);
    CHECK_EQ(p[0].peak_bytes, 0);
    batchfit__runner_free(runner);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
    fake_teardown();
}

/* The watchdog stops a trial when any GPU passes its own budget, whichever
 * budget is the reference. */
TEST(device_gpus_watchdog_stops_at_the_gpu_over_its_own_budget)
{
    fake_setup("16GiB,24GiB");
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, "cuda:0,1", &d), BATCHFIT_OK);
    /* 10 MiB, then 4 GiB on each: no sample sees a figure between. */
    const char *argv[] = {tool(), "gpu-grow-each", "4096,4096", "10", NULL};
    static const struct {
        uint64_t budget[2];
        const char *expect; /* NULL: fits */
    } rows[] = {
        {{GIB(2), GIB(8)}, "its memory on cuda:0 reached 4.01 GiB, past that GPU's budget of 2.00 GiB"},
        {{GIB(8), GIB(2)}, "its memory on cuda:1 reached 4.01 GiB, past that GPU's budget of 2.00 GiB"},
        {{GIB(8), GIB(6)}, NULL},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        batchfit__runner_options o;
        batchfit__runner_options_init(&o);
        o.argv = argv;
        o.device = d;
        o.gpu_budget_bytes = rows[i].budget;
        o.budget_bytes = rows[i].budget[0] < rows[i].budget[1] ? rows[i].budget[0]
                                                               : rows[i].budget[1];
        batchfit__runner *runner = NULL;
        CHECK_EQ(batchfit__runner_create(ctx, &o, &runner), BATCHFIT_OK);
        batchfit_trial t;
        CHECK_EQ(batchfit__runner_trial(runner, 1, &t), BATCHFIT_OK);
        unsigned count = 0;
        const batchfit_gpu_peak *p = batchfit__runner_gpu_peaks(runner, &count);
        if (rows[i].expect) {
            CHECK_EQ(t.outcome, BATCHFIT_OOM);
            CHECK_EQ(t.process.watchdog_stopped, 1);
            CHECK_CONTAINS(t.message, rows[i].expect);
            CHECK_EQ(t.process.watchdog_overshoot_bytes, MIB(4106) - GIB(2));
            CHECK(t.peak_bytes > o.budget_bytes);
        } else {
            CHECK_EQ(t.outcome, BATCHFIT_FITS);
            CHECK_EQ(p[0].peak_bytes, MIB(4106));
            CHECK_EQ(p[1].peak_bytes, MIB(4106));
            /* cuda:1 is 4106 MiB of its 6 GiB, the worse: scaled to 6 GiB. */
            CHECK_EQ(t.peak_bytes, MIB(4106));
            CHECK_EQ(t.process.device_peak_bytes, MIB(4106));
        }
        batchfit__runner_free(runner);
        CHECK(fake_gpus_empty());
    }
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
    fake_teardown();
}

/* Ballast on one GPU cannot be allocated: the others' is released, nothing
 * runs, and the probe is a device error. */
TEST(device_gpus_ballast_failure_on_one_gpu_releases_the_others)
{
    char marker[256];
    snprintf(marker, sizeof marker, "/tmp/batchfit-test-%ld-gpus-ran", (long)getpid());
    static const char *const failing[] = {"0", "1", "2"};
    for (size_t i = 0; i < 3; i++) {
        fake_setup("16GiB,24GiB,8GiB");
        setenv("FAKE_CUDA_ALLOC_FAIL_ON", failing[i], 1);
        unlink(marker);
        batchfit_ctx *ctx = test_ctx(NULL);
        batchfit_device *d = NULL;
        CHECK_EQ(batchfit_device_open(ctx, "cuda:all", &d), BATCHFIT_OK);
        const char *argv[] = {tool(), "touch", marker, "{batch}", NULL};
        batchfit_options o;
        batchfit_options_init(&o);
        batchfit_command_options c;
        batchfit_command_options_init(&c);
        c.argv = argv;
        batchfit_result *r = NULL;
        CHECK_EQ(batchfit_probe_command(ctx, &o, d, &c, &r), BATCHFIT_E_DEVICE);
        char expect[64];
        snprintf(expect, sizeof expect, "cuda:%s: could not hold", failing[i]);
        CHECK_CONTAINS(r->error, expect);
        CHECK_EQ(r->trial_count, 0);
        CHECK(access(marker, F_OK) != 0);
        CHECK(fake_gpus_empty());
        for (unsigned g = 0; g < 3; g++) {
            uint64_t total = 0, free_bytes = 0;
            CHECK_EQ(batchfit_device_memory(batchfit__device_gpu(d, g), &total, &free_bytes),
                     BATCHFIT_OK);
            CHECK_EQ(free_bytes, total);
        }
        batchfit_result_free(r);
        batchfit_device_free(d);
        batchfit_ctx_free(ctx);
        fake_teardown();
    }
}

/* A margin that leaves nothing on one GPU names it, and nothing is held. */
TEST(device_gpus_margin_too_large_for_one_gpu_is_named)
{
    fake_setup("16GiB,4GiB");
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, "cuda:all", &d), BATCHFIT_OK);
    const char *argv[] = {tool(), "exit", "0", "{batch}", NULL};
    batchfit_options o;
    batchfit_options_init(&o);
    o.margin_bytes = GIB(6);
    batchfit_command_options c;
    batchfit_command_options_init(&c);
    c.argv = argv;
    batchfit_result *r = NULL;
    CHECK_EQ(batchfit_probe_command(ctx, &o, d, &c, &r), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(r->error, "of the 4.00 GiB usable on cuda:1");
    CHECK_EQ(r->gpu_count, 0);
    CHECK(fake_gpus_empty());
    batchfit_result_free(r);
    /* An in-process step cannot be judged on each GPU: refused. */
    CHECK_EQ(batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &r),
             BATCHFIT_E_INVALID_ARGUMENT);
    CHECK(r == NULL);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "several GPUs");
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
    fake_teardown();
}

TEST(device_gpus_probe_every_allocation_failure_is_clean)
{
    fake_setup("16GiB,24GiB");
    const char *argv[] = {tool(), "exit", "0", "{batch}", NULL};
    long total = -1;
    for (long k = 0; total < 0 || k < total; k++) {
        test_alloc_state st = {0, total < 0 ? -1 : k, 0, 0};
        batchfit_ctx *ctx = test_ctx(&st);
        CHECK(ctx != NULL);
        batchfit_device *d = NULL;
        int rc = batchfit_device_open(ctx, "cuda:1,0", &d);
        batchfit_result *r = NULL;
        if (rc == BATCHFIT_OK) {
            batchfit_options o;
            batchfit_options_init(&o);
            o.requested_max = 2;
            batchfit_command_options c;
            batchfit_command_options_init(&c);
            c.argv = argv;
            rc = batchfit_probe_command(ctx, &o, d, &c, &r);
            CHECK(r == NULL || r->status == rc);
            const char *json = NULL;
            if (rc == BATCHFIT_OK && batchfit_result_json(ctx, r, &json) != BATCHFIT_OK)
                rc = BATCHFIT_E_NO_MEMORY;
        }
        if (total < 0) {
            CHECK_EQ(rc, BATCHFIT_OK);
            CHECK_EQ(r->batch_size, 2);
            CHECK_EQ(r->gpu_count, 2);
            total = st.calls;
        } else if (st.failures == 0) {
            /* Sampling allocates as often as a trial lasts, so a run may
             * make fewer calls than the first: then nothing failed. */
            CHECK(st.calls <= k);
            CHECK(rc == BATCHFIT_OK && r->batch_size == 2);
        } else {
            /* Sampling decides how many allocations a run makes (a child
             * that exits before the first sample asks NVML for nothing):
             * a run that makes fewer than k + 1 fails none and succeeds. */
            CHECK(st.failures <= 1);
            if (st.failures == 0)
                CHECK_EQ(rc, BATCHFIT_OK);
            /* NVML's process list is only a better measure: without room
             * for it a sample falls back to the GPU's free memory. */
            CHECK(rc == BATCHFIT_E_NO_MEMORY || (rc == BATCHFIT_OK && r->batch_size == 2));
        }
        batchfit_result_free(r);
        batchfit_device_free(d);
        batchfit_ctx_free(ctx);
        CHECK_EQ(st.outstanding, 0);
        CHECK(fake_gpus_empty());
    }
    CHECK(total >= 10);
    CHECK_EQ(waitpid(-1, NULL, WNOHANG), -1);
    fake_teardown();
}

/* opts.parallel on three identical GPUs: rounds of up to three trials, each
 * on one GPU alone (only its peak known), the answer one GPU finds. */
TEST(device_gpus_parallel_trials_one_on_each_identical_gpu)
{
    fake_setup("16GiB,16GiB,16GiB");
    batchfit_ctx *ctx = test_ctx(NULL);
    const char *argv[] = {tool(), "gpu-grow", "100", "1024", NULL};
    size_t serial_trials = 0;
    for (int parallel = 0; parallel < 2; parallel++) {
        batchfit_device *d = NULL;
        CHECK_EQ(batchfit_device_open(ctx, parallel ? "cuda:all" : "cuda:0", &d), BATCHFIT_OK);
        batchfit_options o;
        batchfit_options_init(&o);
        o.parallel = parallel ? 8 : 0;
        batchfit_command_options c;
        batchfit_command_options_init(&c);
        c.argv = argv;
        batchfit_result *r = NULL;
        CHECK_EQ(batchfit_probe_command(ctx, &o, d, &c, &r), BATCHFIT_OK);
        /* (0.95 * 16 GiB - 1 GiB) / 100 MiB = 145.4 */
        CHECK_EQ(r->batch_size, 145);
        if (!parallel) {
            serial_trials = r->trial_count;
            CHECK_EQ(r->rounds, r->trial_count);
        } else {
            CHECK_EQ(r->gpu_count, 3);
            CHECK(r->rounds < r->trial_count);
            CHECK(r->rounds <= serial_trials);
            CHECK(r->warning_count >= 1);
            CHECK_CONTAINS(r->warnings[0], "up to 3 a round");
            /* Each trial ran on one GPU: in each round the first on the
             * first GPU, the next on the next; only that GPU's peak is known. */
            for (size_t t = 0; t < r->trial_count; t++) {
                const batchfit_trial *trial = &r->trials[t];
                const batchfit_gpu_peak *p = &r->gpu_peaks[t * 3];
                CHECK_EQ(p[0].peak_known + p[1].peak_known + p[2].peak_known <= 1, 1);
                if (trial->outcome != BATCHFIT_FITS)
                    continue;
                CHECK_EQ(p[0].peak_known + p[1].peak_known + p[2].peak_known, 1);
                uint64_t own = p[0].peak_bytes + p[1].peak_bytes + p[2].peak_bytes;
                CHECK_EQ(own, MIB(1024 + 100 * trial->batch));
            }
        }
        batchfit_result_free(r);
        batchfit_device_free(d);
        CHECK(fake_gpus_empty());
    }
    CHECK_EQ(waitpid(-1, NULL, WNOHANG), -1);
    batchfit_ctx_free(ctx);
    fake_teardown();
}

/* On a GPU probe the need an out-of-memory line states is device memory
 * only where the allocator that failed is a GPU's: a CUDA "Tried to
 * allocate 2.00 GiB" adds its 2 GiB to the GPU's reading; PyTorch's CPU
 * allocator failing for 8 GiB is host memory and adds nothing to it. */
TEST(device_gpus_need_counts_only_the_gpus_own_allocations)
{
    fake_setup("16GiB");
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, "cuda:0", &d), BATCHFIT_OK);
    static const struct {
        const char *line;
        int device_bytes; /* the request counts toward the need */
    } rows[] = {
        {"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", 1},
        {"RuntimeError: DefaultCPUAllocator: not enough memory: you tried to allocate "
         "8589934592 bytes.",
         0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *argv[] = {tool(), "print", rows[i].line, "1", NULL};
        batchfit__runner_options o;
        batchfit__runner_options_init(&o);
        o.argv = argv;
        o.device = d;
        batchfit__runner *runner = NULL;
        CHECK_EQ(batchfit__runner_create(ctx, &o, &runner), BATCHFIT_OK);
        batchfit_trial t;
        CHECK_EQ(batchfit__runner_trial(runner, 1, &t), BATCHFIT_OK);
        CHECK_EQ(t.outcome, BATCHFIT_OOM);
        if (rows[i].device_bytes)
            CHECK(t.peak_bytes >= GIB(2));
        else
            CHECK(t.peak_bytes < GIB(1));
        batchfit__runner_free(runner);
    }
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
    fake_teardown();
}
