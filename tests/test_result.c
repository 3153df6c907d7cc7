#include "test.h"

#include "internal.h"

TEST(result_collects_trials_and_warnings)
{
    test_alloc_state st = {0, -1, 0, 0};
    batchfit_ctx *ctx = test_ctx(&st);
    CHECK(ctx != NULL);
    batchfit_result *r = batchfit__result_new(ctx);
    CHECK(r != NULL);
    CHECK_EQ(r->source, BATCHFIT_SOURCE_NONE);
    for (unsigned i = 0; i < 20; i++) {
        batchfit_trial t = {0};
        t.batch = i + 1;
        t.outcome = i % 3 == 0 ? BATCHFIT_OOM : BATCHFIT_FITS;
        CHECK_EQ(batchfit__result_add_trial(r, &t), BATCHFIT_OK);
    }
    CHECK_EQ(r->trial_count, 20);
    CHECK_EQ(r->oom_trials, 7);
    CHECK_EQ(r->trials[19].batch, 20);
    CHECK_EQ(batchfit__result_warn(ctx, r, "first %d", 1), BATCHFIT_OK);
    CHECK_EQ(batchfit__result_warn(ctx, r, "second"), BATCHFIT_OK);
    CHECK_EQ(r->warning_count, 2);
    CHECK_STR(r->warnings[0], "first 1");
    CHECK_STR(r->warnings[1], "second");
    /* A result outlives its context. */
    batchfit_ctx_free(ctx);
    batchfit_result_free(r);
    CHECK_EQ(st.outstanding, 0);
    batchfit_result_free(NULL);
}

TEST(result_warning_allocation_failure)
{
    test_alloc_state st = {0, -1, 0, 0};
    batchfit_ctx *ctx = test_ctx(&st);
    CHECK(ctx != NULL);
    batchfit_result *r = batchfit__result_new(ctx);
    CHECK(r != NULL);
    for (long k = 0; k < 2; k++) {
        st.fail_at = st.calls + k;
        CHECK_EQ(batchfit__result_warn(ctx, r, "lost"), BATCHFIT_E_NO_MEMORY);
    }
    st.fail_at = -1;
    CHECK_EQ(r->warning_count, 0);
    batchfit_result_free(r);
    batchfit_ctx_free(ctx);
    CHECK_EQ(st.outstanding, 0);
}
