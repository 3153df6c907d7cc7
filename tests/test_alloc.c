#include "test.h"

#include "internal.h"

TEST(alloc_ctx_uses_the_hook)
{
    test_alloc_state st = {0, -1, 0, 0};
    batchfit_ctx *ctx = test_ctx(&st);
    CHECK(ctx != NULL);
    CHECK_EQ(st.calls, 1);
    CHECK_EQ(st.outstanding, 1);
    char *s = batchfit__strdup(&ctx->allocator, "hello");
    CHECK_STR(s, "hello");
    CHECK_EQ(st.outstanding, 2);
    batchfit__free(&ctx->allocator, s);
    batchfit_ctx_free(ctx);
    CHECK_EQ(st.outstanding, 0);
}

TEST(alloc_ctx_create_failure)
{
    test_alloc_state st = {0, 0, 0, 0};
    batchfit_allocator a = test_allocator(&st);
    batchfit_ctx *ctx = (batchfit_ctx *)&st; /* must be reset to NULL */
    CHECK_EQ(batchfit_ctx_create(&a, &ctx), BATCHFIT_E_NO_MEMORY);
    CHECK(ctx == NULL);
    CHECK_EQ(st.outstanding, 0);
    batchfit_allocator incomplete = {NULL, NULL, NULL, NULL};
    CHECK_EQ(batchfit_ctx_create(&incomplete, &ctx), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_EQ(batchfit_ctx_create(NULL, NULL), BATCHFIT_E_INVALID_ARGUMENT);
    batchfit_ctx_free(NULL);
}

TEST(alloc_calloc_zeroes_and_rejects_overflow)
{
    test_alloc_state st = {0, -1, 0, 0};
    batchfit_ctx *ctx = test_ctx(&st);
    CHECK(ctx != NULL);
    unsigned char *p = batchfit__calloc(&ctx->allocator, 16, 4);
    CHECK(p != NULL);
    for (int i = 0; i < 64; i++)
        CHECK_EQ(p[i], 0);
    batchfit__free(&ctx->allocator, p);
    CHECK(batchfit__calloc(&ctx->allocator, SIZE_MAX / 2, 4) == NULL);
    batchfit_ctx_free(ctx);
    CHECK_EQ(st.outstanding, 0);
}
