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

/* Truncation never splits a UTF-8 character (the JSON would then escape
 * half of one, and a read-back would not be a fixed point). */
TEST(log_copy_cuts_between_utf8_characters)
{
    CHECK_EQ(batchfit__utf8_cut("ab\xc2\xa7", 3), 2);
    CHECK_EQ(batchfit__utf8_cut("ab\xc2\xa7", 4), 4);
    CHECK_EQ(batchfit__utf8_cut("a\xe2\x82\xac", 3), 1);
    CHECK_EQ(batchfit__utf8_cut("a\xf0\x9f\x98\x80", 4), 1);
    CHECK_EQ(batchfit__utf8_cut("abc", 2), 2);
    char dst[4];
    batchfit__copy(dst, sizeof dst, "ab\xc2\xa7xyz");
    CHECK_STR(dst, "ab");
}

/* A message of 700 bytes (a trial's 256-byte message inside the search's
 * advice, a long path) is kept whole; one past the buffer ends in "..."
 * at a character's boundary (they were cut at 511 bytes, mid-word). */
TEST(log_fail_keeps_long_messages_and_marks_a_cut)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    char long_path[701];
    memset(long_path, 'p', 700);
    long_path[700] = '\0';
    CHECK_EQ(batchfit__fail(ctx, BATCHFIT_E_PARSE, "%s: end", long_path), BATCHFIT_E_PARSE);
    CHECK_EQ(strlen(batchfit_ctx_last_error(ctx)), 705u);
    CHECK(strstr(batchfit_ctx_last_error(ctx), "p: end") != NULL);
    /* Past the buffer: "é" (2 bytes) straddling the cut is dropped whole. */
    static char huge[8192];
    memset(huge, 'x', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    for (size_t i = 2040; i + 1 < 2060; i += 2)
        memcpy(huge + i, "\xc3\xa9", 2);
    batchfit__fail(ctx, BATCHFIT_E_PARSE, "%s", huge + 1);
    const char *e = batchfit_ctx_last_error(ctx);
    size_t n = strlen(e);
    CHECK(n > 2000);
    CHECK(n < 2048);
    CHECK_STR(e + n - 3, "...");
    CHECK(((unsigned char)e[n - 4] & 0xC0) != 0xC0);
    CHECK(((unsigned char)e[n - 4] & 0xC0) != 0x80 || (unsigned char)e[n - 5] == 0xc3);
    batchfit_ctx_free(ctx);
}
