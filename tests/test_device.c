#include "test.h"

TEST(device_open_rejects_unknown_specs)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = (batchfit_device *)ctx;
    CHECK_EQ(batchfit_device_open(ctx, "tpu:0", &d), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK(d == NULL);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "\"tpu:0\"");
    CHECK_EQ(batchfit_device_open(ctx, NULL, &d), BATCHFIT_E_INVALID_ARGUMENT);
    batchfit_ctx_free(ctx);
}

TEST(device_null_is_unavailable)
{
    const char *why = NULL;
    CHECK_EQ(batchfit_device_available(NULL, &why), 0);
    CHECK_STR(why, "no device");
    CHECK_STR(batchfit_device_kind(NULL), "none");
    CHECK_NEAR(batchfit_device_peak_spread(NULL), 0.0, 0);
    uint64_t t, f;
    CHECK_EQ(batchfit_device_memory(NULL, &t, &f), BATCHFIT_E_INVALID_ARGUMENT);
    batchfit_device_free(NULL);
}

TEST(device_unavailable_reports_why)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, "sim:capacity=16GiB,unavailable=no NVIDIA driver", &d),
             BATCHFIT_OK);
    const char *why = NULL;
    CHECK_EQ(batchfit_device_available(d, &why), 0);
    CHECK_STR(why, "no NVIDIA driver");
    uint64_t t, f;
    CHECK_EQ(batchfit_device_memory(d, &t, &f), BATCHFIT_E_NO_DEVICE);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "no NVIDIA driver");
    CHECK_EQ(batchfit_device_peak_reset(d), BATCHFIT_E_DEVICE);
    CHECK_EQ(batchfit_device_peak(d, &t), BATCHFIT_E_DEVICE);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}

TEST(device_open_allocation_failures_leak_nothing)
{
    for (long k = 0; k < 3; k++) {
        test_alloc_state st = {0, -1, 0, 0};
        batchfit_ctx *ctx = test_ctx(&st);
        CHECK(ctx != NULL);
        st.fail_at = st.calls + k;
        batchfit_device *d = NULL;
        int rc = batchfit_device_open(ctx, "sim:capacity=1GiB", &d);
        if (st.failures) {
            CHECK_EQ(rc, BATCHFIT_E_NO_MEMORY);
            CHECK(d == NULL);
        } else {
            CHECK_EQ(rc, BATCHFIT_OK);
        }
        batchfit_device_free(d);
        batchfit_ctx_free(ctx);
        CHECK_EQ(st.outstanding, 0);
    }
}
