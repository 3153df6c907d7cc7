#include "test.h"

static batchfit_device *open_sim(batchfit_ctx *ctx, const char *spec)
{
    batchfit_device *d = NULL;
    if (batchfit_device_open(ctx, spec, &d) != BATCHFIT_OK)
        return NULL;
    return d;
}

TEST(device_sim_spec_from_the_issue)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = open_sim(
        ctx, "sim:capacity=80GiB,fixed=12GiB,per_sample=150MiB,granule=2MiB,noise=0.5%,seed=7");
    CHECK(d != NULL);
    CHECK_STR(batchfit_device_kind(d), "sim");
    CHECK_EQ(batchfit_device_available(d, NULL), 1);
    CHECK_NEAR(batchfit_device_peak_spread(d), 0.005, 1e-12);
    uint64_t total = 0, free_bytes = 0;
    CHECK_EQ(batchfit_device_memory(d, &total, &free_bytes), BATCHFIT_OK);
    CHECK_EQ(total, UINT64_C(80) << 30);
    CHECK_EQ(free_bytes, UINT64_C(80) << 30);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}

TEST(device_sim_allocations_round_to_the_granule)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = open_sim(ctx, "sim:capacity=10MiB,used=1MiB,granule=2MiB");
    CHECK(d != NULL);
    uint64_t total, free_bytes;
    CHECK_EQ(batchfit__sim_alloc(d, 1), 0);
    CHECK_EQ(batchfit__sim_in_use(d), UINT64_C(2) << 20);
    CHECK_EQ(batchfit_device_memory(d, &total, &free_bytes), BATCHFIT_OK);
    CHECK_EQ(free_bytes, UINT64_C(7) << 20);
    CHECK_EQ(batchfit__sim_alloc(d, (UINT64_C(6) << 20) + 1), -1); /* rounds to 8 MiB > 7 MiB */
    CHECK_EQ(batchfit__sim_alloc(d, UINT64_C(6) << 20), 0);
    CHECK_EQ(batchfit__sim_in_use(d), UINT64_C(8) << 20);
    batchfit__sim_free(d, UINT64_C(6) << 20);
    batchfit__sim_free(d, 1);
    CHECK_EQ(batchfit__sim_in_use(d), 0);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}

TEST(device_sim_spec_errors_name_the_key)
{
    static const struct {
        const char *spec;
        const char *expect;
    } bad[] = {
        {"sim", "capacity=SIZE is required"},
        {"sim:fixed=1GiB", "capacity=SIZE is required"},
        {"sim:capacity=0", "capacity=SIZE is required"},
        {"sim:capacity=12XB", "\"capacity\""},
        {"sim:capacity=1GiB,per_sample=-1", "\"per_sample\""},
        {"sim:capacity=1GiB,noise=60%", "below 50%"},
        {"sim:capacity=1GiB,noise=5", "\"noise\""},
        {"sim:capacity=1GiB,colour=red", "unknown key \"colour\""},
        {"sim:capacity=1GiB,jump=12", "BATCH:SIZE"},
        {"sim:capacity=1GiB,jump=x:1GiB", "\"jump\""},
        {"sim:capacity=1GiB,used=2GiB", "exceeds capacity"},
        {"sim:capacity", "not KEY=VALUE"},
        {"sim:capacity=99999999999999999999", "too large"},
    };
    batchfit_ctx *ctx = test_ctx(NULL);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        batchfit_device *d = (batchfit_device *)ctx;
        int rc = batchfit_device_open(ctx, bad[i].spec, &d);
        CHECK(rc == BATCHFIT_E_PARSE);
        CHECK(d == NULL);
        CHECK_CONTAINS(batchfit_ctx_last_error(ctx), bad[i].expect);
    }
    batchfit_ctx_free(ctx);
}

/* The synthetic step's peak, measured through the device, follows the
 * profile: rounded fixed + rounded (per_sample * batch + workspace). */
TEST(device_sim_step_follows_its_profile)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d =
        open_sim(ctx, "sim:capacity=8GiB,fixed=1000MiB,per_sample=3MiB,granule=2MiB,jump=100:512MiB");
    CHECK(d != NULL);
    const batchfit_step *step = batchfit_sim_step();
    void *state = NULL;
    char msg[128];
    CHECK_EQ(step->build(NULL, d, &state, msg, sizeof msg), BATCHFIT_FITS);
    CHECK_EQ(batchfit__sim_in_use(d), UINT64_C(1000) << 20);
    batchfit_step_report rep;
    memset(&rep, 0, sizeof rep);
    CHECK_EQ(step->run(state, 99, &rep), BATCHFIT_FITS);
    CHECK_EQ(batchfit__sim_in_use(d), UINT64_C(1000) << 20); /* activations are freed */
    memset(&rep, 0, sizeof rep);
    CHECK_EQ(step->run(state, 100, &rep), BATCHFIT_FITS);
    /* 7 GiB - 1000 MiB free for activations: 3 MiB * b + 512 MiB from 100 on. */
    uint64_t free_for_act = (UINT64_C(8) << 30) - (UINT64_C(1000) << 20);
    uint64_t last_fit = (free_for_act - (UINT64_C(512) << 20)) / (UINT64_C(3) << 20);
    memset(&rep, 0, sizeof rep);
    CHECK_EQ(step->run(state, last_fit, &rep), BATCHFIT_FITS);
    memset(&rep, 0, sizeof rep);
    CHECK_EQ(step->run(state, last_fit + 1, &rep), BATCHFIT_OOM);
    CHECK_CONTAINS(rep.message, "out of memory");
    /* The device's peak since a reset is the step's whole footprint. */
    CHECK_EQ(batchfit_device_peak_reset(d), BATCHFIT_OK);
    memset(&rep, 0, sizeof rep);
    CHECK_EQ(step->run(state, 10, &rep), BATCHFIT_FITS);
    uint64_t peak = 0;
    CHECK_EQ(batchfit_device_peak(d, &peak), BATCHFIT_OK);
    CHECK_EQ(peak, (UINT64_C(1000) << 20) + (UINT64_C(30) << 20));
    step->release(state);
    CHECK_EQ(batchfit__sim_in_use(d), 0);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}

TEST(device_sim_step_needs_a_sim_device_and_room_for_its_model)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    const batchfit_step *step = batchfit_sim_step();
    void *state = NULL;
    char msg[128] = "";
    CHECK_EQ(step->build(NULL, NULL, &state, msg, sizeof msg), BATCHFIT_ERROR);
    CHECK_CONTAINS(msg, "needs a sim device");
    batchfit_device *d = open_sim(ctx, "sim:capacity=1GiB,fixed=2GiB");
    CHECK(d != NULL);
    CHECK_EQ(step->build(NULL, d, &state, msg, sizeof msg), BATCHFIT_OOM);
    CHECK_CONTAINS(msg, "out of memory");
    CHECK_EQ(batchfit__sim_in_use(d), 0);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}

TEST(device_sim_noise_is_seeded_and_bounded)
{
    /* Two devices with the same seed give the same sequence of outcomes at a
     * batch on the edge; over many runs both outcomes occur. */
    batchfit_ctx *ctx = test_ctx(NULL);
    const char *spec = "sim:capacity=1000MiB,fixed=0,per_sample=1MiB,granule=1,noise=5%,seed=11";
    batchfit_device *a = open_sim(ctx, spec), *b = open_sim(ctx, spec);
    CHECK(a && b);
    const batchfit_step *step = batchfit_sim_step();
    void *sa = NULL, *sb = NULL;
    char msg[128];
    CHECK_EQ(step->build(NULL, a, &sa, msg, sizeof msg), BATCHFIT_FITS);
    CHECK_EQ(step->build(NULL, b, &sb, msg, sizeof msg), BATCHFIT_FITS);
    int fits = 0, ooms = 0;
    for (int i = 0; i < 200; i++) {
        batchfit_step_report ra, rb;
        memset(&ra, 0, sizeof ra);
        memset(&rb, 0, sizeof rb);
        batchfit_outcome oa = step->run(sa, 1000, &ra);
        CHECK_EQ(oa, step->run(sb, 1000, &rb));
        fits += oa == BATCHFIT_FITS;
        ooms += oa == BATCHFIT_OOM;
        /* 5% below capacity always fits, even at the top of the noise. */
        memset(&ra, 0, sizeof ra);
        CHECK_EQ(step->run(sa, 952, &ra), BATCHFIT_FITS);
        memset(&rb, 0, sizeof rb);
        CHECK_EQ(step->run(sb, 952, &rb), BATCHFIT_FITS);
    }
    CHECK(fits > 50 && ooms > 50);
    step->release(sa);
    step->release(sb);
    batchfit_device_free(a);
    batchfit_device_free(b);
    batchfit_ctx_free(ctx);
}
