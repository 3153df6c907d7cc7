/* The result read back from its JSON, and drawn as SVG. */
#include "test.h"

#include <stdlib.h>
#include <string.h>

static batchfit_result *sim_probe(batchfit_ctx *ctx, const char *spec, uint64_t requested)
{
    batchfit_device *dev = NULL;
    batchfit_result *result = NULL;
    batchfit_options opts;
    batchfit_options_init(&opts);
    opts.requested_max = requested;
    opts.vram_limit_bytes = UINT64_C(6) << 30;
    if (batchfit_device_open(ctx, spec, &dev) == BATCHFIT_OK)
        batchfit_probe(ctx, &opts, dev, batchfit_sim_step(), NULL, &result);
    batchfit_device_free(dev);
    return result;
}

TEST(result_json_round_trip)
{
    batchfit_ctx *ctx = NULL;
    CHECK_EQ(batchfit_ctx_create(NULL, &ctx), BATCHFIT_OK);
    batchfit_result *r = sim_probe(ctx, "sim:capacity=8GiB,fixed=1GiB,per_sample=40MiB,noise=2%",
                                   0);
    CHECK(r != NULL);
    const char *json = NULL;
    CHECK_EQ(batchfit_result_json(ctx, r, &json), BATCHFIT_OK);
    char *first = strdup(json);
    batchfit_result *back = NULL;
    CHECK_EQ(batchfit_result_from_json(ctx, first, strlen(first), &back), BATCHFIT_OK);
    CHECK_EQ(back->batch_size, r->batch_size);
    CHECK_EQ(back->trial_count, r->trial_count);
    CHECK_EQ(back->budget.budget_bytes, r->budget.budget_bytes);
    CHECK_EQ(back->budget.vram_limit_bytes, UINT64_C(6) << 30);
    const char *again = NULL;
    CHECK_EQ(batchfit_result_json(ctx, back, &again), BATCHFIT_OK);
    CHECK_STR(again, first);
    /* The picture of both is the same picture. */
    const char *svg1 = NULL, *svg2 = NULL;
    CHECK_EQ(batchfit_result_svg(ctx, r, &svg1), BATCHFIT_OK);
    CHECK_EQ(batchfit_result_svg(ctx, back, &svg2), BATCHFIT_OK);
    CHECK_STR(svg1, svg2);
    char answer[64];
    snprintf(answer, sizeof answer, "batch_size=%llu</text>", (unsigned long long)r->batch_size);
    CHECK_CONTAINS(svg1, answer);
    CHECK_CONTAINS(svg1, "VRAM limit 6.00 GiB");
    CHECK_CONTAINS(svg1, "trial 1: batch 1 fits");
    free(first);
    batchfit_result_free(back);
    batchfit_result_free(r);
    batchfit_ctx_free(ctx);
}

TEST(result_from_json_rejects_what_it_cannot_read)
{
    static const struct {
        const char *json, *message;
    } bad[] = {
        {"", "unexpected end"},
        {"{\"schema_version\": 1,}", "expected a key"},
        {"[1, 2]", "an object"},
        {"{\"schema_version\": 2}", "schema_version 2 is not 1"},
        {"{\"schema_version\": 1, \"result\": {}, \"trials\": [{\"batch\": -1}]}",
         "trials[0].batch"},
        {"{\"schema_version\": 1, \"result\": {}, \"trials\": [{\"batch\": 3, \"outcome\": "
         "\"maybe\"}]}",
         "outcome"},
        {"{\"schema_version\": 1, \"trials\": [], \"result\": {}, \"budget\": "
         "{\"budget_bytes\": \"1\"}}",
         "budget.budget_bytes"},
        {"{\"schema_version\": 1, \"trials\": [], \"result\": {}, \"strategy\": \"guess\"}",
         "strategy"},
        {"{\"schema_version\": 1, \"s\": \"\\ud800\"}", "surrogate"},
        {"{\"schema_version\": 1} x", "text after"},
        /* batchfit info's and estimate's documents are no results. */
        {"{\"schema_version\": 1}", "no \"trials\""},
        {"{\"schema_version\": 1, \"backends\": []}", "is this batchfit info's or estimate's?"},
        {"{\"schema_version\": 1, \"trials\": []}", "no \"result\""},
    };
    batchfit_ctx *ctx = NULL;
    CHECK_EQ(batchfit_ctx_create(NULL, &ctx), BATCHFIT_OK);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        batchfit_result *r = (batchfit_result *)1;
        CHECK_EQ(batchfit_result_from_json(ctx, bad[i].json, strlen(bad[i].json), &r),
                 BATCHFIT_E_PARSE);
        CHECK(r == NULL);
        CHECK_CONTAINS(batchfit_ctx_last_error(ctx), bad[i].message);
    }
    /* Escapes are decoded and re-escaped: text survives the round trip. */
    const char *odd = "{\"schema_version\": 1, \"trials\": [], \"result\": {}, \"warnings\": "
                      "[\"a \\u00e9 \\ud83d\\ude00 <&>\"]}";
    batchfit_result *r = NULL;
    CHECK_EQ(batchfit_result_from_json(ctx, odd, strlen(odd), &r), BATCHFIT_OK);
    CHECK_EQ(r->warning_count, 1);
    CHECK_STR(r->warnings[0], "a \xc3\xa9 \xf0\x9f\x98\x80 <&>");
    const char *svg = NULL;
    CHECK_EQ(batchfit_result_svg(ctx, r, &svg), BATCHFIT_OK);
    CHECK_CONTAINS(svg, "&lt;&amp;&gt;");
    CHECK_CONTAINS(svg, "no batch size settled");
    batchfit_result_free(r);
    batchfit_ctx_free(ctx);
}

/* Memory that does not grow with the batch ends the search at its own
 * upper limit: the answer says so instead of passing a million on as a
 * finding; bounded by the dataset, the same answer needs no warning. */
TEST(probe_warns_when_the_answer_is_the_search_limit)
{
    batchfit_ctx *ctx = NULL;
    CHECK_EQ(batchfit_ctx_create(NULL, &ctx), BATCHFIT_OK);
    const char *flat = "sim:capacity=8GiB,fixed=1GiB,per_sample=0";
    batchfit_result *r = sim_probe(ctx, flat, 0);
    CHECK(r != NULL);
    CHECK_EQ(r->batch_size, BATCHFIT_DEFAULT_UPPER_LIMIT);
    CHECK_EQ(r->warning_count, 1);
    CHECK_CONTAINS(r->warnings[0], "batch size 1048576 is the search's upper limit, not a "
                                   "memory limit: it fit (peak 1.00 GiB of the 5.70 GiB budget)");
    batchfit_result_free(r);
    batchfit_device *dev = NULL;
    batchfit_options opts;
    batchfit_options_init(&opts);
    opts.samples = 5000;
    CHECK_EQ(batchfit_device_open(ctx, flat, &dev), BATCHFIT_OK);
    r = NULL;
    CHECK_EQ(batchfit_probe(ctx, &opts, dev, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    CHECK_EQ(r->batch_size, 5000);
    CHECK_EQ(r->warning_count, 0);
    batchfit_result_free(r);
    batchfit_device_free(dev);
    batchfit_ctx_free(ctx);
}

TEST(probe_warns_when_the_requested_maximum_uses_under_half)
{
    batchfit_ctx *ctx = NULL;
    CHECK_EQ(batchfit_ctx_create(NULL, &ctx), BATCHFIT_OK);
    batchfit_result *r = sim_probe(ctx, "sim:capacity=8GiB,fixed=1GiB,per_sample=40MiB", 32);
    CHECK(r != NULL);
    CHECK_EQ(r->batch_size, 32);
    CHECK_EQ(r->warning_count, 1);
    /* budget 95% of 6 GiB (the VRAM limit) = 5836.8 MiB: 2304 MiB is 39% of it, and
     * (5836.8 - 1024) / 40 = 120 */
    CHECK_CONTAINS(r->warnings[0], "max_batch_size=32 uses 39% of the budget; about 120 would fit");
    batchfit_result_free(r);
    /* At more than half of the budget, nothing to say. */
    r = sim_probe(ctx, "sim:capacity=8GiB,fixed=1GiB,per_sample=40MiB", 100);
    CHECK(r != NULL);
    CHECK_EQ(r->batch_size, 100);
    CHECK_EQ(r->warning_count, 0);
    batchfit_result_free(r);
    batchfit_ctx_free(ctx);
}

/* Every allocation of reading a result back and drawing it is failed in
 * turn: a clean BATCHFIT_E_NO_MEMORY, no result half made, nothing leaked. */
TEST(result_read_and_draw_every_allocation_failure_is_clean)
{
    batchfit_ctx *plain = test_ctx(NULL);
    batchfit_result *source = sim_probe(plain, "sim:capacity=16GiB,fixed=1GiB,per_sample=100MiB", 0);
    CHECK(source != NULL);
    const char *json = NULL;
    CHECK_EQ(batchfit_result_json(plain, source, &json), BATCHFIT_OK);
    char *text = strdup(json);
    CHECK(text != NULL);
    long total = -1;
    for (long k = 0; total < 0 || k < total; k++) {
        test_alloc_state st = {0, total < 0 ? -1 : k, 0, 0};
        batchfit_ctx *ctx = test_ctx(&st);
        CHECK(ctx != NULL);
        batchfit_result *r = NULL;
        const char *svg = NULL;
        int rc = batchfit_result_from_json(ctx, text, strlen(text), &r);
        if (rc != BATCHFIT_OK)
            CHECK(r == NULL);
        else
            rc = batchfit_result_svg(ctx, r, &svg);
        if (total < 0) {
            CHECK_EQ(rc, BATCHFIT_OK);
            CHECK(svg && strstr(svg, "<svg") != NULL);
            total = st.calls;
        } else {
            CHECK_EQ(st.failures, 1);
            CHECK_EQ(rc, BATCHFIT_E_NO_MEMORY);
        }
        batchfit_result_free(r);
        batchfit_ctx_free(ctx);
        CHECK_EQ(st.outstanding, 0);
    }
    CHECK(total >= 10);
    free(text);
    batchfit_result_free(source);
    batchfit_ctx_free(plain);
}

/* A trial's message drawn as XML 1.0 takes it: a Latin-1 byte (0xE9, not
 * UTF-8) as its character, U+FFFE and U+FFFF (UTF-8, but no XML
 * characters) as U+FFFD, a control byte left out, well-formed UTF-8 as it
 * is. Either of the first two made the picture unreadable (xmllint: "Input
 * is not proper UTF-8", "Char 0xFFFE out of allowed range"). */
TEST(svg_text_is_xml_whatever_the_output_held)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_result *r = sim_probe(ctx, "sim:capacity=16GiB,fixed=1GiB,per_sample=100MiB", 0);
    CHECK(r != NULL);
    if (!r)
        return;
    /* The result's own trial (allocated by the library, const to callers). */
    batchfit_trial *t = (batchfit_trial *)&r->trials[r->trial_count - 1];
    snprintf(t->message, sizeof t->message,
             "m\xe9moire \xef\xbf\xbe|\xef\xbf\xbf|\x01|caf\xc3\xa9|\xf0\x9f\x92\xa5 & <");
    /* An out of memory that read nothing says so ("needed at least unknown"). */
    batchfit_trial *first = (batchfit_trial *)&r->trials[0];
    first->outcome = BATCHFIT_OOM;
    first->peak_known = 0;
    const char *svg = NULL;
    CHECK_EQ(batchfit_result_svg(ctx, r, &svg), BATCHFIT_OK);
    char expect[96];
    snprintf(expect, sizeof expect, "trial 1: batch %llu oom, memory unknown,",
             (unsigned long long)first->batch);
    CHECK_CONTAINS(svg, expect);
    CHECK(strstr(svg, "at least unknown") == NULL);
    CHECK_CONTAINS(svg, "m\xc3\xa9moire \xef\xbf\xbd|\xef\xbf\xbd||caf\xc3\xa9|\xf0\x9f\x92\xa5 &amp; &lt;");
    /* Every byte of the document is well-formed UTF-8, and no XML-illegal
     * character is in it. */
    for (const unsigned char *p = (const unsigned char *)svg; *p;) {
        size_t n = batchfit__utf8_length(p);
        CHECK(n > 0);
        if (n == 0)
            break;
        CHECK(*p >= 0x20 || *p == '\n' || *p == '\t' || *p == '\r');
        CHECK(!(n == 3 && p[0] == 0xEF && p[1] == 0xBF && p[2] >= 0xBE));
        p += n;
    }
    /* A fit that reaches infinity across the plot (a hand-edited document's
     * 1e308 bytes and -1e308 a sample) draws no line: "-inf" was written as
     * a coordinate. */
    r->fit.valid = 1;
    r->fit.intercept_bytes = 1e308;
    r->fit.bytes_per_sample = -1e308;
    r->fit.max_residual_bytes = 1e308;
    CHECK_EQ(batchfit_result_svg(ctx, r, &svg), BATCHFIT_OK);
    CHECK(strstr(svg, "-inf") == NULL && strstr(svg, "\"inf\"") == NULL);
    CHECK(strstr(svg, "infL") == NULL && strstr(svg, "infZ") == NULL);
    CHECK(strstr(svg, "nan") == NULL);
    batchfit_result_free(r);
    batchfit_ctx_free(ctx);
}
