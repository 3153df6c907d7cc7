#include "test.h"

#include <math.h>

#include <stdlib.h>

static uint64_t size_ok(const char *text)
{
    uint64_t v = 0;
    char err[256] = "";
    if (batchfit__parse_size(text, "--size", &v, err, sizeof err) != BATCHFIT_OK)
        return UINT64_MAX;
    return v;
}

TEST(parse_size_units)
{
    CHECK_EQ(size_ok("4096"), 4096);
    CHECK_EQ(size_ok("7B"), 7);
    CHECK_EQ(size_ok("1KiB"), 1024);
    CHECK_EQ(size_ok("2MiB"), 2u << 20);
    CHECK_EQ(size_ok("80GiB"), UINT64_C(80) << 30);
    CHECK_EQ(size_ok("1TiB"), UINT64_C(1) << 40);
    CHECK_EQ(size_ok("1KB"), 1000);
    CHECK_EQ(size_ok("3MB"), 3000000);
    CHECK_EQ(size_ok("16GB"), UINT64_C(16000000000));
    CHECK_EQ(size_ok("2TB"), UINT64_C(2000000000000));
    CHECK_EQ(size_ok("1.5GiB"), UINT64_C(3) << 29);
    CHECK_EQ(size_ok(" 12 gib "), UINT64_C(12) << 30);
    CHECK_EQ(size_ok("0.5KiB"), 512);
    CHECK_EQ(size_ok("18446744073709551615"), UINT64_MAX);
}

TEST(parse_size_errors_name_the_input)
{
    uint64_t v = 99;
    char err[256];
    CHECK_EQ(batchfit__parse_size("12XB", "--margin", &v, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(err, "--margin");
    CHECK_CONTAINS(err, "\"12XB\"");
    CHECK_CONTAINS(err, "unknown unit");
    CHECK_EQ(batchfit__parse_size("-1GiB", "--memory-budget", &v, err, sizeof err),
             BATCHFIT_E_PARSE);
    CHECK_CONTAINS(err, "negative");
    CHECK_EQ(batchfit__parse_size("18446744073709551616", "x", &v, err, sizeof err),
             BATCHFIT_E_PARSE);
    CHECK_CONTAINS(err, "too large");
    CHECK_EQ(batchfit__parse_size("17179869184GiB", "x", &v, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(err, "too large");
    CHECK_EQ(batchfit__parse_size("GiB", "x", &v, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_EQ(batchfit__parse_size("", "x", &v, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_EQ(batchfit__parse_size("1.5", "x", &v, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(err, "whole");
    CHECK_EQ(batchfit__parse_size("nan", "x", &v, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_EQ(batchfit__parse_size("1e9", "x", &v, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_EQ(batchfit__parse_size(NULL, "x", &v, NULL, 0), BATCHFIT_E_PARSE);
    CHECK_EQ(v, 99); /* nothing written on failure */
}

TEST(parse_percent)
{
    double f = -1;
    char err[256];
    CHECK_EQ(batchfit__parse_percent("5%", "--margin", &f, err, sizeof err), BATCHFIT_OK);
    CHECK_NEAR(f, 0.05, 1e-12);
    CHECK_EQ(batchfit__parse_percent("0.5 %", "--margin", &f, err, sizeof err), BATCHFIT_OK);
    CHECK_NEAR(f, 0.005, 1e-12);
    CHECK_EQ(batchfit__parse_percent("0%", "--margin", &f, err, sizeof err), BATCHFIT_OK);
    CHECK_NEAR(f, 0.0, 0);
    CHECK_EQ(batchfit__parse_percent("5", "--margin", &f, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(err, "--margin");
    CHECK_EQ(batchfit__parse_percent("101%", "--margin", &f, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(err, "above 100%");
    CHECK_EQ(batchfit__parse_percent("-5%", "--margin", &f, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_EQ(batchfit__parse_percent("5%x", "--margin", &f, err, sizeof err), BATCHFIT_E_PARSE);
}

TEST(parse_requested_size_device_decides)
{
    static const char *const decides[] = {"", "0", "none", "null", "None", "NULL", "  0 ", " none"};
    uint64_t v;
    for (size_t i = 0; i < sizeof decides / sizeof decides[0]; i++) {
        v = 77;
        CHECK_EQ(batchfit__parse_requested_size(decides[i], "max_batch_size", &v, NULL, 0),
                 BATCHFIT_OK);
        CHECK_EQ(v, 0);
    }
    v = 77;
    CHECK_EQ(batchfit__parse_requested_size(NULL, "max_batch_size", &v, NULL, 0), BATCHFIT_OK);
    CHECK_EQ(v, 0);
    CHECK_EQ(batchfit__parse_requested_size("300", "max_batch_size", &v, NULL, 0), BATCHFIT_OK);
    CHECK_EQ(v, 300);
    CHECK_EQ(batchfit__parse_requested_size(" 64 ", "max_batch_size", &v, NULL, 0), BATCHFIT_OK);
    CHECK_EQ(v, 64);
}

TEST(parse_requested_size_errors_quote_the_value)
{
    static const char *const bad[] = {"abc", "-4", "12.5", "12.", "1e3", "nonesuch", "99999999999999999999",
                                      "32 64", "0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 5;
        char err[256] = "";
        CHECK_EQ(batchfit__parse_requested_size(bad[i], "hyperparameters.json max_batch_size", &v,
                                               err, sizeof err),
                 BATCHFIT_E_PARSE);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "\"%s\"", bad[i]);
        CHECK_CONTAINS(err, quoted);
        CHECK_CONTAINS(err, "hyperparameters.json max_batch_size");
        /* A number past the range says so, not that it is no integer. */
        CHECK_CONTAINS(err, strcmp(bad[i], "99999999999999999999") == 0
                                ? "is too large (at most 9223372036854775807)"
                                : "expected a positive integer");
        CHECK_EQ(v, 5);
    }
}

TEST(parse_count)
{
    uint64_t v = 0;
    char err[256];
    CHECK_EQ(batchfit__parse_count("12", "--min", 100, &v, err, sizeof err), BATCHFIT_OK);
    CHECK_EQ(v, 12);
    CHECK_EQ(batchfit__parse_count("0", "--min", 100, &v, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(err, "at least 1");
    CHECK_EQ(batchfit__parse_count("101", "--min", 100, &v, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(err, "at most 100");
    CHECK_EQ(batchfit__parse_count("x", "--samples", 100, &v, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(err, "--samples");
}

static void clear_vram_env(void)
{
    unsetenv("VRAM_LIMIT_GB");
    unsetenv("BATCHFIT_VRAM_LIMIT_GB");
}

TEST(parse_vram_limit_precedence)
{
    uint64_t bytes = 1;
    const char *source = NULL;
    char err[256];
    clear_vram_env();
    CHECK_EQ(batchfit__resolve_vram_limit(NULL, NULL, &bytes, &source, err, sizeof err), BATCHFIT_OK);
    CHECK_EQ(bytes, 0);
    CHECK_STR(source, "none");

    setenv("BATCHFIT_VRAM_LIMIT_GB", "4", 1);
    CHECK_EQ(batchfit__resolve_vram_limit(NULL, NULL, &bytes, &source, err, sizeof err), BATCHFIT_OK);
    CHECK_EQ(bytes, UINT64_C(4) << 30);
    CHECK_STR(source, "environment variable BATCHFIT_VRAM_LIMIT_GB");

    setenv("VRAM_LIMIT_GB", "6.5", 1);
    CHECK_EQ(batchfit__resolve_vram_limit(NULL, NULL, &bytes, &source, err, sizeof err), BATCHFIT_OK);
    CHECK_EQ(bytes, UINT64_C(13) << 29);
    CHECK_STR(source, "environment variable VRAM_LIMIT_GB");

    CHECK_EQ(batchfit__resolve_vram_limit("8", NULL, &bytes, &source, err, sizeof err), BATCHFIT_OK);
    CHECK_EQ(bytes, UINT64_C(8) << 30);
    CHECK_STR(source, "--vram-limit-gb");

    /* An empty variable counts as unset. */
    setenv("VRAM_LIMIT_GB", "", 1);
    CHECK_EQ(batchfit__resolve_vram_limit(NULL, NULL, &bytes, &source, err, sizeof err), BATCHFIT_OK);
    CHECK_EQ(bytes, UINT64_C(4) << 30);
    clear_vram_env();
}

TEST(parse_vram_limit_errors_name_the_source)
{
    static const char *const bad[] = {"-1", "0", "nan", "NaN", "inf", "abc", "1e400", "", "0.0000000001",
                                      "99999999999"};
    char err[256];
    uint64_t bytes;
    clear_vram_env();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECK_EQ(batchfit__resolve_vram_limit(bad[i], NULL, &bytes, NULL, err, sizeof err),
                 BATCHFIT_E_PARSE);
        CHECK_CONTAINS(err, "--vram-limit-gb");
    }
    /* Each says what is wrong with it: 1e-9 and 1e30 are positive numbers,
     * written with an exponent (both said "expected a positive number"). */
    static const struct {
        const char *text, *says;
    } why[] = {{"1e-9", "written out without an exponent"},
               {"1E30", "written out without an exponent"},
               {"123456789012345678901234567890", "is too large"},
               {"8589934592", "is too large"},
               {"0.0000000001", "rounds to zero bytes"},
               {"0.0000001", "107 bytes, under 1 MiB, where no model fits"},
               {"-2", "it must be positive"}};
    for (size_t i = 0; i < sizeof why / sizeof why[0]; i++) {
        CHECK_EQ(batchfit__resolve_vram_limit(why[i].text, NULL, &bytes, NULL, err, sizeof err),
                 BATCHFIT_E_PARSE);
        CHECK_CONTAINS(err, why[i].says);
    }
    setenv("VRAM_LIMIT_GB", "lots", 1);
    CHECK_EQ(batchfit__resolve_vram_limit(NULL, NULL, &bytes, NULL, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(err, "environment variable VRAM_LIMIT_GB");
    CHECK_CONTAINS(err, "\"lots\"");
    unsetenv("VRAM_LIMIT_GB");
    setenv("BATCHFIT_VRAM_LIMIT_GB", "-3", 1);
    CHECK_EQ(batchfit__resolve_vram_limit(NULL, NULL, &bytes, NULL, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(err, "environment variable BATCHFIT_VRAM_LIMIT_GB");
    /* A valid flag still wins over a broken variable: the variable is not read. */
    CHECK_EQ(batchfit__resolve_vram_limit("2", "--vram", &bytes, NULL, err, sizeof err), BATCHFIT_OK);
    CHECK_EQ(bytes, UINT64_C(2) << 30);
    clear_vram_env();
}

/* The public parsers report through the context, naming the input. */
TEST(parse_public_calls_report_through_the_context)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    uint64_t v = 0;
    double f = 0;
    const char *source = NULL;
    batchfit_strategy st;
    CHECK_EQ(batchfit_parse_size(ctx, "1.5GiB", "--memory-budget", &v), BATCHFIT_OK);
    CHECK_EQ(v, UINT64_C(3) << 29);
    CHECK_EQ(batchfit_parse_size(ctx, "12XB", "--margin", &v), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "--margin");
    CHECK_EQ(batchfit_parse_percent(ctx, "150%", "--peak-spread", &f), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "--peak-spread");
    CHECK_EQ(batchfit_parse_requested_size(ctx, "none", "max_batch_size", &v), BATCHFIT_OK);
    CHECK_EQ(v, 0);
    CHECK_EQ(batchfit_parse_count(ctx, "0", "--min", 10, &v), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "--min");
    CHECK_EQ(batchfit_resolve_vram_limit(ctx, "0.5", NULL, &v, &source), BATCHFIT_OK);
    CHECK_EQ(v, UINT64_C(1) << 29);
    CHECK_STR(source, "--vram-limit-gb");
    CHECK_EQ(batchfit_parse_strategy(ctx, "fast", "--strategy", &st), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "\"fast\"");
    batchfit_ctx_free(ctx);
}

TEST(parse_strategy_names)
{
    batchfit_strategy s = BATCHFIT_STRATEGY_MODEL;
    char err[256];
    static const char *const names[] = {"model", "bisect", "binsearch", "power", "halving"};
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(batchfit__parse_strategy(names[i], "--strategy", &s, err, sizeof err), BATCHFIT_OK);
        CHECK_EQ(s, i);
        CHECK_STR(batchfit_strategy_name(s), names[i]);
    }
    /* In any case, as units are ("Model" was refused). */
    CHECK_EQ(batchfit__parse_strategy("Model", "--strategy", &s, err, sizeof err), BATCHFIT_OK);
    CHECK_EQ(s, BATCHFIT_STRATEGY_MODEL);
    CHECK_EQ(batchfit__parse_strategy("BISECT", "--strategy", &s, err, sizeof err), BATCHFIT_OK);
    CHECK_EQ(s, BATCHFIT_STRATEGY_BISECT);
    CHECK_EQ(batchfit__parse_strategy("fast", "--strategy", &s, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(err, "\"fast\"");
    CHECK(batchfit_strategy_name((batchfit_strategy)17) == NULL);
}

TEST(parse_format_bytes)
{
    char buf[32];
    batchfit_format_bytes(512, buf, sizeof buf);
    CHECK_STR(buf, "512 B");
    batchfit_format_bytes(1536, buf, sizeof buf);
    CHECK_STR(buf, "1.50 KiB");
    batchfit_format_bytes(80.0 * 1073741824.0, buf, sizeof buf);
    CHECK_STR(buf, "80.00 GiB");
    batchfit_format_bytes(3.0 * 1099511627776.0 * 1024.0, buf, sizeof buf);
    CHECK_STR(buf, "3.00 PiB");
    batchfit_format_bytes(18446744073709551615.0, buf, sizeof buf);
    CHECK_STR(buf, "16.00 EiB");
    /* Past any uint64_t the unit stays in the text (1e300 printed 31
     * digits and lost it); a difference below zero is a signed size; what
     * is no number says so. */
    batchfit_format_bytes(1e300, buf, sizeof buf);
    CHECK_STR(buf, "8.67e+281 EiB");
    batchfit_format_bytes(-3e9, buf, sizeof buf);
    CHECK_STR(buf, "-2.79 GiB");
    batchfit_format_bytes(-5, buf, sizeof buf);
    CHECK_STR(buf, "-5 B");
    batchfit_format_bytes(NAN, buf, sizeof buf);
    CHECK_STR(buf, "NaN B");
    batchfit_format_bytes(-INFINITY, buf, sizeof buf);
    CHECK_STR(buf, "-inf B");
    batchfit_format_bytes(1, NULL, 0);
}

/* Two different figures are never printed as the same text. */
TEST(parse_format_bytes_apart_never_prints_equal_texts)
{
    char a[32], b[32];
    batchfit__format_bytes_apart(1046.8 * 1048576.0, 1045.0 * 1048576.0, a, b, sizeof a);
    CHECK(strcmp(a, b) != 0);
    CHECK_STR(a, "1.022 GiB");
    CHECK_STR(b, "1.021 GiB");
    batchfit__format_bytes_apart(1073741824.0, 1073741825.0, a, b, sizeof a);
    CHECK_STR(a, "1.000000000 GiB");
    CHECK_STR(b, "1.000000001 GiB");
    batchfit__format_bytes_apart(3000.0, 5000.0, a, b, sizeof a);
    CHECK_STR(a, "2.93 KiB");
    CHECK_STR(b, "4.88 KiB");
    batchfit__format_bytes_apart(7.0, 7.0, a, b, sizeof a);
    CHECK_STR(a, b);
}
