#include "test.h"

static batchfit_estimate estimate(batchfit_estimate_input *in, int *rc)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_estimate e;
    *rc = batchfit_estimate_memory(ctx, in, &e);
    batchfit_ctx_free(ctx);
    return e;
}

/* The ZeRO paper: mixed-precision Adam keeps 16 bytes a parameter - 24 GB
 * for 1.5B parameters, 120 GB for 7.5B. */
TEST(estimate_model_state_matches_zero)
{
    batchfit_estimate_input in;
    batchfit_estimate_input_init(&in);
    in.precision = BATCHFIT_PRECISION_MIXED16;
    in.optimizer = BATCHFIT_OPTIMIZER_ADAM;
    in.activation_bytes_per_sample = 1;
    int rc;
    in.params = 1500000000;
    batchfit_estimate e = estimate(&in, &rc);
    CHECK_EQ(rc, BATCHFIT_OK);
    CHECK_NEAR(e.bytes_per_param, 16.0, 0);
    CHECK_EQ(e.model_state_bytes, UINT64_C(24000000000));
    in.params = 7500000000;
    e = estimate(&in, &rc);
    CHECK_EQ(e.model_state_bytes, UINT64_C(120000000000));
    /* The other precisions and optimizers. */
    static const struct {
        batchfit_precision p;
        batchfit_optimizer o;
        double bytes;
    } rows[] = {
        {BATCHFIT_PRECISION_FP32, BATCHFIT_OPTIMIZER_ADAMW, 16},
        {BATCHFIT_PRECISION_FP32, BATCHFIT_OPTIMIZER_SGD, 8},
        {BATCHFIT_PRECISION_FP32, BATCHFIT_OPTIMIZER_MOMENTUM, 12},
        {BATCHFIT_PRECISION_MIXED16, BATCHFIT_OPTIMIZER_SGD, 8},
        {BATCHFIT_PRECISION_MIXED16, BATCHFIT_OPTIMIZER_ADAFACTOR, 8},
        {BATCHFIT_PRECISION_INT8, BATCHFIT_OPTIMIZER_ADAMW, 1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        in.precision = rows[i].p;
        in.optimizer = rows[i].o;
        e = estimate(&in, &rc);
        CHECK_NEAR(e.bytes_per_param, rows[i].bytes, 0);
    }
}

/* Korthikanti et al. 2022: s*b*h*(34 + 5*a*s/h) bytes per layer in 16-bit
 * precision without recomputation; GPT-3's shape (s=2048, h=12288, a=96)
 * gives 2048 * 12288 * 114 bytes a layer and sample. */
TEST(estimate_transformer_activations_match_korthikanti)
{
    batchfit_estimate_input in;
    batchfit_estimate_input_init(&in);
    in.params = 175000000000;
    in.layers = 96;
    in.hidden = 12288;
    in.heads = 96;
    in.seq = 2048;
    int rc;
    batchfit_estimate e = estimate(&in, &rc);
    CHECK_EQ(rc, BATCHFIT_OK);
    CHECK_EQ(e.activation_bytes_per_sample, UINT64_C(96) * 2048 * 12288 * 114);
    /* Full recomputation keeps each layer's 16-bit input, plus one layer. */
    in.checkpointing = 1;
    e = estimate(&in, &rc);
    CHECK_EQ(e.activation_bytes_per_sample,
             UINT64_C(96) * 2 * 2048 * 12288 + UINT64_C(2048) * 12288 * 114);
    /* fp32 doubles activations; the output logits add 4*s*v. */
    in.checkpointing = 0;
    in.precision = BATCHFIT_PRECISION_FP32;
    in.vocab = 50257;
    e = estimate(&in, &rc);
    CHECK_EQ(e.activation_bytes_per_sample,
             UINT64_C(2) * 96 * 2048 * 12288 * 114 + UINT64_C(4) * 2048 * 50257);
}

TEST(estimate_largest_batch_against_a_device)
{
    batchfit_estimate_input in;
    batchfit_estimate_input_init(&in);
    in.params = 1500000000; /* 24 GB of state with mixed-precision AdamW */
    in.activation_bytes_per_sample = UINT64_C(2000000000);
    in.device_bytes = UINT64_C(80000000000);
    in.margin_fraction = 0.05; /* 76 GB budget: (76 - 24) / 2 = 26 */
    int rc;
    batchfit_estimate e = estimate(&in, &rc);
    CHECK_EQ(rc, BATCHFIT_OK);
    CHECK_EQ(e.budget_bytes, UINT64_C(76000000000));
    CHECK_EQ(e.max_batch, 26);
    CHECK_EQ(e.predicted_peak_bytes, UINT64_C(24000000000) + 26 * UINT64_C(2000000000));
    in.device_bytes = UINT64_C(20000000000); /* the state alone does not fit */
    e = estimate(&in, &rc);
    CHECK_EQ(e.max_batch, 0);
    in.activation_bytes_per_sample = 0; /* neither activations nor a shape */
    e = estimate(&in, &rc);
    CHECK_EQ(rc, BATCHFIT_E_INVALID_ARGUMENT);
    in.params = 0;
    in.activation_bytes_per_sample = 1;
    e = estimate(&in, &rc);
    CHECK_EQ(rc, BATCHFIT_E_INVALID_ARGUMENT);
}

TEST(estimate_parses_counts_and_names)
{
    uint64_t n = 0;
    char err[256];
    /* 1.1M is 1100000.0000000002 in binary: still a whole count. */
    static const struct {
        const char *text;
        uint64_t count;
    } good[] = {{"124M", 124000000},  {"7.5B", 7500000000}, {"350K", 350000}, {"1000", 1000},
                {"1.5K", 1500},       {"1.1M", 1100000},    {"0.3B", 300000000}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        CHECK_EQ(batchfit__parse_params(good[i].text, "--params", &n, err, sizeof err),
                 BATCHFIT_OK);
        CHECK_EQ(n, good[i].count);
    }
    static const char *const bad[] = {"", "7.5X", "-3M", "0", "M", "1e9", "12MB"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ(batchfit__parse_params(bad[i], "--params", &n, err, sizeof err), BATCHFIT_E_PARSE);
        CHECK_CONTAINS(err, "--params");
    }
    /* A unit left out: refused with the units it could have meant. */
    CHECK_EQ(batchfit__parse_params("1.5", "--params", &n, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_STR(err, "--params: \"1.5\" is not a whole number of parameters; give a unit (1.5M, "
                   "1.5B)");
    CHECK_EQ(batchfit__parse_params("7", "--params", &n, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_STR(err, "--params: \"7\" has no unit and would be 7 parameters; give a unit (7M, 7B)");
    CHECK_EQ(batchfit__parse_params("1.0005K", "--params", &n, err, sizeof err), BATCHFIT_E_PARSE);
    batchfit_precision p;
    batchfit_optimizer o;
    CHECK_EQ(batchfit__parse_precision("mixed16", NULL, &p, err, sizeof err), BATCHFIT_OK);
    CHECK_EQ(p, BATCHFIT_PRECISION_MIXED16);
    CHECK_EQ(batchfit__parse_precision("fp16", "--precision", &p, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(err, "\"fp16\"");
    CHECK_EQ(batchfit__parse_optimizer("AdamW", NULL, &o, err, sizeof err), BATCHFIT_OK);
    CHECK_EQ(o, BATCHFIT_OPTIMIZER_ADAMW);
    CHECK_EQ(batchfit__parse_optimizer("lion", "--optimizer", &o, err, sizeof err), BATCHFIT_E_PARSE);
}

/* A figure past 2^63 bytes is an error, not a clamped number. */
TEST(estimate_refuses_figures_beyond_64_bits)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_estimate_input in;
    batchfit_estimate_input_init(&in);
    in.params = 1000000;
    in.layers = 1u << 30;
    in.hidden = 1u << 20;
    in.heads = 1;
    in.seq = 1u << 20;
    batchfit_estimate e;
    CHECK_EQ(batchfit_estimate_memory(ctx, &in, &e), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "beyond 2^63 bytes");
    CHECK_EQ(e.max_batch, 0);
    CHECK_EQ(e.model_state_bytes, 0);
    in.layers = 2;
    in.hidden = 64;
    in.seq = 16;
    CHECK_EQ(batchfit_estimate_memory(ctx, &in, &e), BATCHFIT_OK);
    batchfit_ctx_free(ctx);
}
