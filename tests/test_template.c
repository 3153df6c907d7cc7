#include "test.h"

#include "internal.h"

static const char *expand(const char *arg, uint64_t batch)
{
    static char buf[256];
    batchfit__template_expand(arg, batch, buf, sizeof buf);
    return buf;
}

TEST(template_expands_placeholders_and_escapes)
{
    CHECK_STR(expand("--batch-size", 8), "--batch-size");
    CHECK_STR(expand("{batch}", 8), "8");
    CHECK_STR(expand("--bs={batch}", 1024), "--bs=1024");
    CHECK_STR(expand("{batch}x{batch}", 12), "12x12");
    CHECK_STR(expand("{{batch}}", 3), "{batch}");
    CHECK_STR(expand("{{{batch}}}", 3), "{3}");
    CHECK_STR(expand("json={{\"bs\": {batch}}}", 64), "json={\"bs\": 64}");
    CHECK_EQ(batchfit__template_expand("{batch}-{batch}", 123456, NULL, 0), 13);
    char small[4];
    CHECK_EQ(batchfit__template_expand("{batch}", 123456, small, sizeof small), 6);
    CHECK_STR(small, "123");
}

TEST(template_rejects_stray_braces)
{
    static const char *const bad[] = {"{", "}", "{bat}", "{batch", "x}y", "{Batch}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int has = 0;
        char err[256] = "";
        CHECK_EQ(batchfit__template_check(bad[i], &has, err, sizeof err),
                 BATCHFIT_E_INVALID_ARGUMENT);
        CHECK_CONTAINS(err, bad[i]);
        CHECK_CONTAINS(err, "{{");
    }
    int has = 0;
    CHECK_EQ(batchfit__template_check("--lr=0.1", &has, NULL, 0), BATCHFIT_OK);
    CHECK_EQ(has, 0);
    CHECK_EQ(batchfit__template_check("{{}}{batch}", &has, NULL, 0), BATCHFIT_OK);
    CHECK_EQ(has, 1);
}
