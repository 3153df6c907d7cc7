/* The NVIDIA backends through fake libcuda.so.1 and libnvidia-ml.so.1 built
 * by the suite (tests/fake/): the real dlopen/dlsym paths, scripted devices. */
#include "test.h"

#include <stdlib.h>
#include <unistd.h>

static char state_path[256];

static const char *fake(const char *name)
{
    static char paths[4][1024];
    static int next;
    if (name[0] == '/')
        return name;
    char *p = paths[next++ % 4];
    snprintf(p, 1024, "%s/fake/%s", test_build_dir(), name);
    return p;
}

/* Two devices, 80 GiB and 16 GiB, in CUDA order; NVML sees them reversed. */
static void fake_setup(const char *gpus, const char *cuda, const char *nvml)
{
    snprintf(state_path, sizeof state_path, "/tmp/batchfit-test-%ld-gpu", (long)getpid());
    unlink(state_path);
    setenv("FAKE_STATE", state_path, 1);
    setenv("FAKE_GPUS", gpus, 1);
    setenv("BATCHFIT_CUDA_LIBRARY", fake(cuda), 1);
    setenv("BATCHFIT_NVML_LIBRARY", fake(nvml), 1);
    static const char *const knobs[] = {"FAKE_CUDA_INIT",   "FAKE_CUDA_ALLOC_FAIL", "FAKE_NVML_INIT",
                                        "FAKE_NVML_STRIDE", "FAKE_NVML_GROW",       "CUDA_VISIBLE_DEVICES"};
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
        unsetenv(knobs[i]);
}

static void fake_teardown(void)
{
    static const char *const vars[] = {"FAKE_STATE", "FAKE_GPUS", "BATCHFIT_CUDA_LIBRARY",
                                       "BATCHFIT_NVML_LIBRARY", "FAKE_CUDA_INIT",
                                       "FAKE_CUDA_ALLOC_FAIL", "FAKE_NVML_INIT", "FAKE_NVML_STRIDE",
                                       "FAKE_NVML_GROW", "CUDA_VISIBLE_DEVICES"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    test_isolate_environment();
    unlink(state_path);
}

/* Opens spec and returns whether it is available, with the reason. */
static int open_gpu(batchfit_ctx *ctx, const char *spec, batchfit_device **d, char *why, size_t len)
{
    *d = NULL;
    if (batchfit_device_open(ctx, spec, d) != BATCHFIT_OK)
        return -1;
    const char *reason = "";
    int ok = batchfit_device_available(*d, &reason);
    snprintf(why, len, "%s", reason);
    return ok;
}

TEST(device_cuda_unavailable_says_why)
{
    static const struct {
        const char *cuda;
        const char *init;
        const char *gpus;
        const char *expect;
    } rows[] = {
        {"nonexistent/libcuda.so.1", NULL, "80GiB", "cannot load"},
        {"libcuda-missing.so", NULL, "80GiB", "lacks cuMemGetInfo_v2"},
        {"libcuda.so.1", "34", "80GiB", "CUDA toolkit's stub"},
        {"libcuda.so.1", "100", "80GiB", "no CUDA device"},
        {"libcuda.so.1", "999", "80GiB", "cuInit failed"},
        {"libcuda.so.1", NULL, "", "0 visible CUDA devices"},
    };
    batchfit_ctx *ctx = test_ctx(NULL);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        fake_setup(rows[i].gpus, rows[i].cuda, "libnvidia-ml.so.1");
        if (rows[i].init)
            setenv("FAKE_CUDA_INIT", rows[i].init, 1);
        batchfit_device *d = NULL;
        char why[512];
        CHECK_EQ(open_gpu(ctx, "cuda:0", &d, why, sizeof why), 0);
        CHECK_CONTAINS(why, rows[i].expect);
        /* A library that did not load names the variable that chose it. */
        if (i < 2)
            CHECK_CONTAINS(why, "(the library BATCHFIT_CUDA_LIBRARY names)");
        CHECK_STR(batchfit_device_kind(d), "cuda");
        uint64_t t, f;
        CHECK_EQ(batchfit_device_memory(d, &t, &f), BATCHFIT_E_NO_DEVICE);
        batchfit_device_free(d);
        /* The device list says the same about the backend, and lists only
         * the host, which "auto" picks. */
        batchfit_device_list *list = NULL;
        CHECK_EQ(batchfit_device_list_create(ctx, &list), BATCHFIT_OK);
        CHECK_STR(list->backends[0].name, "cuda");
        CHECK_EQ(list->backends[0].available, 0);
        CHECK_CONTAINS(list->backends[0].reason, rows[i].expect);
        CHECK_EQ(list->device_count, 1);
        CHECK_STR(list->specs[0], "host");
        CHECK_STR(list->auto_spec, "host");
        batchfit_device_list_free(list);
    }
    fake_teardown();
    batchfit_ctx_free(ctx);
}

TEST(device_cuda_two_devices_mapped_to_nvml_by_uuid)
{
    fake_setup("80GiB,16GiB", "libcuda.so.1", "libnvidia-ml.so.1");
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device_list *list = NULL;
    CHECK_EQ(batchfit_device_list_create(ctx, &list), BATCHFIT_OK);
    CHECK_EQ(list->device_count, 3);
    CHECK_STR(list->specs[0], "cuda:0");
    CHECK_STR(list->specs[1], "cuda:1");
    CHECK_STR(list->specs[2], "host");
    batchfit_device_list_free(list);
    batchfit_device *a = NULL, *b = NULL;
    char why[512];
    CHECK_EQ(open_gpu(ctx, "cuda:0", &a, why, sizeof why), 1);
    CHECK_EQ(open_gpu(ctx, "cuda:1", &b, why, sizeof why), 1);
    uint64_t total = 0, free_bytes = 0;
    CHECK_EQ(batchfit_device_memory(a, &total, &free_bytes), BATCHFIT_OK);
    CHECK_EQ(total, UINT64_C(80) << 30);
    CHECK_EQ(batchfit_device_memory(b, &total, &free_bytes), BATCHFIT_OK);
    CHECK_EQ(total, UINT64_C(16) << 30);
    batchfit_device_info ia, ib;
    memset(&ia, 0, sizeof ia);
    memset(&ib, 0, sizeof ib);
    ia.struct_size = ib.struct_size = sizeof ia;
    CHECK_EQ(batchfit_device_describe(a, &ia), BATCHFIT_OK);
    CHECK_EQ(batchfit_device_describe(b, &ib), BATCHFIT_OK);
    CHECK_STR(ia.name, "Fake GPU 80GB");
    CHECK_STR(ib.uuid, "GPU-20212223-2425-2627-2829-2a2b2c2d2e2f");
    CHECK_STR(ib.pci_bus_id, "0000:3C:00.0");
    CHECK_EQ(ia.per_process_memory, 1);
    /* Ballast on cuda:1 is seen by NVML on cuda:1 only, though NVML's
     * order is the reverse of CUDA's. */
    uint64_t held = 0;
    CHECK_EQ(batchfit__device_hold(b, UINT64_C(3) << 30, &held), BATCHFIT_OK);
    CHECK_EQ(held, UINT64_C(3) << 30);
    CHECK_EQ(batchfit_device_memory(b, &total, &free_bytes), BATCHFIT_OK);
    CHECK_EQ(free_bytes, UINT64_C(13) << 30);
    CHECK_EQ(batchfit_device_memory(a, &total, &free_bytes), BATCHFIT_OK);
    CHECK_EQ(free_bytes, UINT64_C(80) << 30);
    batchfit__device_release(b);
    CHECK_EQ(batchfit_device_memory(b, &total, &free_bytes), BATCHFIT_OK);
    CHECK_EQ(free_bytes, UINT64_C(16) << 30);
    batchfit_device_free(a);
    batchfit_device_free(b);
    batchfit_ctx_free(ctx);
    fake_teardown();
}

TEST(device_cuda_visible_devices_by_index_and_uuid)
{
    fake_setup("80GiB,16GiB", "libcuda.so.1", "libnvidia-ml.so.1");
    batchfit_ctx *ctx = test_ctx(NULL);
    static const char *const values[] = {"1", "GPU-2021", "GPU-20212223-2425-2627-2829-2a2b2c2d2e2f"};
    for (size_t i = 0; i < 3; i++) {
        setenv("CUDA_VISIBLE_DEVICES", values[i], 1);
        batchfit_device *d = NULL;
        char why[512];
        CHECK_EQ(open_gpu(ctx, "cuda:0", &d, why, sizeof why), 1);
        uint64_t total = 0, free_bytes = 0;
        CHECK_EQ(batchfit_device_memory(d, &total, &free_bytes), BATCHFIT_OK);
        CHECK_EQ(total, UINT64_C(16) << 30);
        batchfit_device_free(d);
        CHECK_EQ(open_gpu(ctx, "cuda:1", &d, why, sizeof why), 0);
        CHECK_CONTAINS(why, "CUDA_VISIBLE_DEVICES is set");
        batchfit_device_free(d);
    }
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    batchfit_device_list *list = NULL;
    CHECK_EQ(batchfit_device_list_create(ctx, &list), BATCHFIT_OK);
    CHECK_EQ(list->backends[0].available, 0);
    CHECK_CONTAINS(list->backends[0].reason, "0 visible CUDA devices");
    CHECK_STR(list->auto_spec, "host");
    batchfit_device_list_free(list);
    batchfit_ctx_free(ctx);
    fake_teardown();
}

/* Our own ballast, read back through NVML's process list under each way a
 * driver may hand it out. */
TEST(device_cuda_process_list_strides_growth_and_versions)
{
    static const struct {
        const char *nvml;
        const char *stride;
        const char *grow;
    } rows[] = {
        {"libnvidia-ml.so.1", NULL, NULL},
        {"libnvidia-ml.so.1", "32", NULL},
        {"libnvidia-ml.so.1", "40", "3"},
        {"libnvidia-ml.so.1", NULL, "5"},
        {"libnvidia-ml-v1.so", NULL, NULL},
        {"libnvidia-ml-v1.so", "24", "2"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        fake_setup("24GiB", "libcuda.so.1", rows[i].nvml);
        if (rows[i].stride)
            setenv("FAKE_NVML_STRIDE", rows[i].stride, 1);
        if (rows[i].grow)
            setenv("FAKE_NVML_GROW", rows[i].grow, 1);
        batchfit_ctx *ctx = test_ctx(NULL);
        batchfit_device *d = NULL;
        char why[512];
        CHECK_EQ(open_gpu(ctx, "cuda:0", &d, why, sizeof why), 1);
        uint64_t held = 0, total = 0, free_bytes = 0;
        CHECK_EQ(batchfit__device_hold(d, UINT64_C(5) << 30, &held), BATCHFIT_OK);
        /* The runner samples the trial's processes the same way; here the
         * process is this one. */
        batchfit__runner_options o;
        batchfit__runner_options_init(&o);
        o.device = d;
        const char *argv[] = {"/bin/true", NULL};
        o.argv = argv;
        batchfit__runner *r = NULL;
        CHECK_EQ(batchfit__runner_create(ctx, &o, &r), BATCHFIT_OK);
        CHECK_CONTAINS(batchfit__runner_mechanisms(r), "nvml per-process sampling");
        batchfit__runner_free(r);
        batchfit_device_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        CHECK_EQ(batchfit_device_describe(d, &info), BATCHFIT_OK);
        CHECK_EQ(info.per_process_memory, 1);
        CHECK_EQ(batchfit_device_memory(d, &total, &free_bytes), BATCHFIT_OK);
        CHECK_EQ(free_bytes, UINT64_C(19) << 30);
        batchfit_device_free(d); /* frees the ballast too */
        batchfit_ctx_free(ctx);
        fake_teardown();
    }
}

TEST(device_cuda_without_nvml_still_probes)
{
    /* The third is deeper than any checkout path (and the same wherever the
     * build is): the variable's name and the library's own name must
     * survive the 256-byte note all the same. */
    static const char deep[] =
        "/nonexistent/a-directory-whose-name-alone-is-as-long-as-a-deep-checkout-path-"
        "under-a-ci-workspace-would-make-it/and-another-one-below-it-as-long-as-the-first-so-"
        "that-the-path-by-itself-fills-most-of-the-note/lib64/nvidia/libnvidia-ml.so.1";
    static const char *const libs[] = {"libnvidia-ml-missing.so",
                                       "nonexistent/libnvidia-ml.so.1", deep};
    for (int i = 0; i < 3; i++) {
        fake_setup("16GiB", "libcuda.so.1", libs[i]);
        batchfit_ctx *ctx = test_ctx(NULL);
        batchfit_device *d = NULL;
        char why[512];
        CHECK_EQ(open_gpu(ctx, "cuda:0", &d, why, sizeof why), 1);
        batchfit_device_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        CHECK_EQ(batchfit_device_describe(d, &info), BATCHFIT_OK);
        CHECK_EQ(info.per_process_memory, 0);
        CHECK_CONTAINS(info.per_process_note, i == 0 ? "lacks nvmlDeviceGetMemoryInfo" : "cannot load");
        CHECK_CONTAINS(info.per_process_note, "(the library BATCHFIT_NVML_LIBRARY names)");
        if (i == 2)
            CHECK_CONTAINS(info.per_process_note,
                           "cannot load /nonexistent/a-directory-who...-by-itself-fills-most-of-"
                           "the-note/lib64/nvidia/libnvidia-ml.so.1 (the library");
        batchfit_device_free(d);
        batchfit_ctx_free(ctx);
    }
    fake_setup("16GiB", "libcuda.so.1", "libnvidia-ml.so.1");
    setenv("FAKE_NVML_INIT", "9", 1);
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device_list *list = NULL;
    CHECK_EQ(batchfit_device_list_create(ctx, &list), BATCHFIT_OK);
    CHECK_STR(list->backends[1].name, "nvml");
    CHECK_EQ(list->backends[1].available, 0);
    CHECK_CONTAINS(list->backends[1].reason, "Driver Not Loaded");
    /* CUDA itself works: its device is listed and "auto" picks it. */
    CHECK_EQ(list->backends[0].available, 1);
    CHECK_STR(list->specs[0], "cuda:0");
    CHECK_STR(list->auto_spec, "cuda:0");
    batchfit_device_list_free(list);
    batchfit_ctx_free(ctx);
    fake_teardown();
}

/* An in-process probe on a GPU whose ballast cannot be allocated fails
 * with a device error before the step is built. */
static int built;

static batchfit_outcome never_build(void *u, batchfit_device *d, void **s, char *m, size_t l)
{
    (void)u;
    (void)d;
    (void)s;
    (void)m;
    (void)l;
    built++;
    return BATCHFIT_ERROR;
}

static batchfit_outcome never_run(void *s, uint64_t b, batchfit_step_report *r)
{
    (void)s;
    (void)b;
    (void)r;
    return BATCHFIT_ERROR;
}

static void never_release(void *s)
{
    (void)s;
}

TEST(device_cuda_ballast_failure_is_a_device_error)
{
    fake_setup("16GiB", "libcuda.so.1", "libnvidia-ml.so.1");
    setenv("FAKE_CUDA_ALLOC_FAIL", "1", 1);
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = NULL;
    char why[512];
    CHECK_EQ(open_gpu(ctx, "cuda:0", &d, why, sizeof why), 1);
    uint64_t held = 7;
    CHECK_EQ(batchfit__device_hold(d, UINT64_C(1) << 30, &held), BATCHFIT_E_DEVICE);
    CHECK_EQ(held, 0);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "could not hold");
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "CUDA_ERROR_OUT_OF_MEMORY");
    batchfit_step step = {sizeof step, "never", 1, never_build, never_run, NULL, never_release};
    batchfit_options o;
    batchfit_options_init(&o);
    batchfit_result *r = NULL;
    built = 0;
    CHECK_EQ(batchfit_probe(ctx, &o, d, &step, NULL, &r), BATCHFIT_E_DEVICE);
    CHECK_EQ(built, 0);
    batchfit_result_free(r);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
    fake_teardown();
}
