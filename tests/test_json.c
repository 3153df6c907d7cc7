#include "test.h"

#include "internal.h"

#include <stdlib.h>
#include <unistd.h>

static int requested(const char *text, uint64_t *out, char *err, size_t len)
{
    return batchfit__json_requested(text, strlen(text), "hp.json", out, NULL, err, len);
}

TEST(json_reads_max_batch_size_only)
{
    uint64_t v = 99;
    char err[512];
    CHECK_EQ(requested("{\"max_batch_size\": 256}", &v, err, sizeof err), BATCHFIT_OK);
    CHECK_EQ(v, 256);
    CHECK_EQ(requested("{\"lr\": 0.1, \"layers\": [1, {\"a\": null}], \"max_batch_size\": \"300\"}",
                       &v, err, sizeof err),
             BATCHFIT_OK);
    CHECK_EQ(v, 300);
    static const char *const decides[] = {"{}", "{\"max_batch_size\": null}",
                                          "{\"max_batch_size\": 0}", "{\"max_batch_size\": \"\"}",
                                          "{\"max_batch_size\": \"none\"}",
                                          " {\"x\": {\"max_batch_size\": 7}} "};
    for (size_t i = 0; i < sizeof decides / sizeof decides[0]; i++) {
        v = 99;
        CHECK_EQ(requested(decides[i], &v, err, sizeof err), BATCHFIT_OK);
        CHECK_EQ(v, 0);
    }
    /* A whole number in another JSON form, as a tool that writes floats
     * writes it (it was refused: "expected a positive integer"). */
    static const char *const whole[] = {"{\"max_batch_size\": 1e3}", "{\"max_batch_size\": 1000.0}",
                                        "{\"max_batch_size\": 1.0E3}"};
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++) {
        v = 99;
        CHECK_EQ(requested(whole[i], &v, err, sizeof err), BATCHFIT_OK);
        CHECK_EQ(v, 1000);
    }
    CHECK_EQ(requested("{\"max_batch_size\": 1.5e0}", &v, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(err, "expected a whole number");
    CHECK_EQ(requested("{\"max_batch_size\": 1e300}", &v, err, sizeof err), BATCHFIT_E_PARSE);
    /* batch_size is an output: it is never read back as the bound. */
    v = 99;
    CHECK_EQ(requested("{\"batch_size\": 512}", &v, err, sizeof err), BATCHFIT_OK);
    CHECK_EQ(v, 0);
}

TEST(json_errors_name_the_file)
{
    static const char *const bad[] = {"", "[1]", "{\"max_batch_size\": }", "{\"a\": 1,}",
                                      "{\"max_batch_size\": 1} x", "{\"a\": \"\\q\"}",
                                      "{\"max_batch_size\": 1, \"max_batch_size\": 2}",
                                      "{\"a\": [1, 2}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 99;
        char err[512] = "";
        CHECK_EQ(requested(bad[i], &v, err, sizeof err), BATCHFIT_E_PARSE);
        CHECK_CONTAINS(err, "hp.json");
        CHECK_CONTAINS(err, "not valid JSON");
        CHECK_EQ(v, 99);
    }
    static const char *const wrong[] = {"{\"max_batch_size\": -4}", "{\"max_batch_size\": 12.5}",
                                        "{\"max_batch_size\": true}",
                                        "{\"max_batch_size\": [64]}",
                                        "{\"max_batch_size\": \"lots\"}"};
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        uint64_t v = 99;
        char err[512] = "";
        CHECK_EQ(requested(wrong[i], &v, err, sizeof err), BATCHFIT_E_PARSE);
        CHECK_CONTAINS(err, "hp.json: max_batch_size");
    }
    char deep[300];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = '\0';
    char doc[400];
    snprintf(doc, sizeof doc, "{\"a\": %s}", deep);
    uint64_t v;
    char err[512];
    CHECK_EQ(requested(doc, &v, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(err, "nested too deeply");
}

TEST(json_reads_a_file)
{
    char path[] = "/tmp/batchfit-hp-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    const char *text = "{\n  \"max_batch_size\": 48,\n  \"batch_size\": 4096\n}\n";
    CHECK_EQ(write(fd, text, strlen(text)), strlen(text));
    close(fd);
    test_alloc_state st = {0, -1, 0, 0};
    batchfit_ctx *ctx = test_ctx(&st);
    uint64_t v = 0;
    CHECK_EQ(batchfit_read_hyperparameters(ctx, path, &v), BATCHFIT_OK);
    CHECK_EQ(v, 48);
    st.fail_at = st.calls;
    CHECK_EQ(batchfit_read_hyperparameters(ctx, path, &v), BATCHFIT_E_NO_MEMORY);
    st.fail_at = -1;
    unlink(path);
    CHECK_EQ(batchfit_read_hyperparameters(ctx, path, &v), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), path);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "No such file");
    batchfit_ctx_free(ctx);
    CHECK_EQ(st.outstanding, 0);
}
