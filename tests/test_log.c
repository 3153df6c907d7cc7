#include "test.h"

#include "internal.h"

typedef struct log_capture {
    int lines;
    batchfit_log_level last_level;
    char last[256];
} log_capture;

static void capture(batchfit_log_level level, const char *message, void *userdata)
{
    log_capture *c = userdata;
    c->lines++;
    c->last_level = level;
    snprintf(c->last, sizeof c->last, "%s", message);
}

TEST(log_filters_by_level)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    CHECK(ctx != NULL);
    log_capture c = {0, BATCHFIT_LOG_DEBUG, ""};
    batchfit__log(ctx, BATCHFIT_LOG_ERROR, "before a callback is set");
    batchfit_ctx_set_log(ctx, capture, &c, BATCHFIT_LOG_WARN);
    batchfit__log(ctx, BATCHFIT_LOG_INFO, "info %d", 1);
    CHECK_EQ(c.lines, 0);
    batchfit__log(ctx, BATCHFIT_LOG_WARN, "warn %d", 2);
    CHECK_EQ(c.lines, 1);
    CHECK_EQ(c.last_level, BATCHFIT_LOG_WARN);
    CHECK_STR(c.last, "warn 2");
    batchfit_ctx_free(ctx);
}

TEST(log_fail_sets_last_error_and_returns_code)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    CHECK(ctx != NULL);
    CHECK_STR(batchfit_ctx_last_error(ctx), "");
    log_capture c = {0, BATCHFIT_LOG_DEBUG, ""};
    batchfit_ctx_set_log(ctx, capture, &c, BATCHFIT_LOG_DEBUG);
    CHECK_EQ(batchfit__fail(ctx, BATCHFIT_E_DEVICE, "device %s broke", "x"), BATCHFIT_E_DEVICE);
    CHECK_STR(batchfit_ctx_last_error(ctx), "device x broke");
    CHECK_EQ(c.last_level, BATCHFIT_LOG_ERROR);
    CHECK_STR(batchfit_ctx_last_error(NULL), "");
    batchfit_ctx_free(ctx);
}
