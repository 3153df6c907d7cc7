#include "test.h"

#include <stddef.h>

static batchfit_result *decide(batchfit_ctx *ctx, const batchfit_options *o, uint64_t step_min,
                               int *rc)
{
    batchfit_result *r = NULL;
    *rc = batchfit_decide(ctx, o, step_min, &r);
    return r;
}

TEST(decide_device_decides_by_default)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_options o;
    batchfit_options_init(&o);
    int rc;
    batchfit_result *r = decide(ctx, &o, 0, &rc);
    CHECK_EQ(rc, BATCHFIT_OK);
    CHECK_EQ(r->min_batch, 1);
    CHECK_EQ(r->upper_bound, BATCHFIT_DEFAULT_UPPER_LIMIT);
    CHECK_EQ(r->warning_count, 0);
    CHECK_EQ(r->trial_count, 0);
    CHECK_EQ(r->batch_size, 0);
    CHECK_EQ(r->source, BATCHFIT_SOURCE_NONE);
    batchfit_result_free(r);
    batchfit_ctx_free(ctx);
}

TEST(decide_minimum_wins_over_smaller_requested_max)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_options o;
    batchfit_options_init(&o);
    o.requested_max = 1;
    int rc;
    batchfit_result *r = decide(ctx, &o, 2, &rc);
    CHECK_EQ(rc, BATCHFIT_OK);
    CHECK_EQ(r->min_batch, 2);
    CHECK_EQ(r->upper_bound, 2);
    CHECK_EQ(r->warning_count, 1);
    CHECK_STR(r->warnings[0], "requested max_batch_size=1 is below the step's minimum of 2; using 2");
    batchfit_result_free(r);
    batchfit_ctx_free(ctx);
}

TEST(decide_minimum_rounds_up_onto_the_lattice)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_options o;
    batchfit_options_init(&o);
    o.lattice = BATCHFIT_LATTICE_MULTIPLE;
    o.lattice_multiple = 8;
    o.min_batch = 3;
    o.requested_max = 100;
    int rc;
    batchfit_result *r = decide(ctx, &o, 2, &rc);
    CHECK_EQ(rc, BATCHFIT_OK);
    CHECK_EQ(r->min_batch, 8);
    CHECK_EQ(r->upper_bound, 96);
    CHECK_EQ(r->warning_count, 0);
    batchfit_result_free(r);

    o.lattice = BATCHFIT_LATTICE_POW2;
    o.requested_max = 300;
    r = decide(ctx, &o, 0, &rc);
    CHECK_EQ(r->min_batch, 4);
    CHECK_EQ(r->upper_bound, 300); /* the requested maximum is the extra candidate */
    batchfit_result_free(r);

    o.requested_max = 0;
    o.samples = 1000;
    r = decide(ctx, &o, 0, &rc);
    CHECK_EQ(r->upper_bound, 512);
    batchfit_result_free(r);

    /* The minimum on the lattice is what the warning names, as the
     * lattice's (not the step's). */
    o.lattice = BATCHFIT_LATTICE_MULTIPLE;
    o.samples = 0;
    o.min_batch = 2;
    o.requested_max = 1;
    r = decide(ctx, &o, 0, &rc);
    CHECK_EQ(r->min_batch, 8);
    CHECK_EQ(r->upper_bound, 8);
    CHECK_STR(r->warnings[0], "requested max_batch_size=1 is below the smallest allowed batch "
                              "size, 8 (the minimum 2 rounded up onto multiples of 8); using 8");
    batchfit_result_free(r);
    batchfit_ctx_free(ctx);
}

TEST(decide_dataset_bound)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_options o;
    batchfit_options_init(&o);
    o.requested_max = 2048;
    o.samples = 1000;
    int rc;
    batchfit_result *r = decide(ctx, &o, 0, &rc);
    CHECK_EQ(r->upper_bound, 1000);
    CHECK_EQ(r->warning_count, 0);
    batchfit_result_free(r);

    o.requested_max = 0;
    o.samples = 3;
    r = decide(ctx, &o, 4, &rc);
    CHECK_EQ(rc, BATCHFIT_OK);
    CHECK_EQ(r->min_batch, 4);
    CHECK_EQ(r->upper_bound, 4);
    CHECK_EQ(r->warning_count, 1);
    CHECK_CONTAINS(r->warnings[0], "3 samples");
    CHECK_CONTAINS(r->warnings[0], "using 4");
    batchfit_result_free(r);

    o.samples = 0;
    o.requested_max = 300;
    o.lattice = BATCHFIT_LATTICE_MULTIPLE;
    o.lattice_multiple = 64;
    r = decide(ctx, &o, 0, &rc);
    CHECK_EQ(r->min_batch, 64);
    CHECK_EQ(r->upper_bound, 256); /* only powers of two take the requested size as a candidate */
    batchfit_result_free(r);
    batchfit_ctx_free(ctx);
}

/* A program built against the header before cached_budget_bytes passes
 * a smaller struct_size: the library reads the struct as far as it goes
 * and the field past it keeps its default (it refused such a struct as
 * not initialised), whatever lies in memory beyond the caller's struct. */
TEST(decide_takes_options_from_an_older_header)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    struct {
        batchfit_options o;
        unsigned char beyond[64];
    } older;
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, "sim:capacity=16GiB,fixed=1GiB,per_sample=100MiB", &d),
             BATCHFIT_OK);
    /* The curve a probe of this device fits, for the remembered size. */
    batchfit_options fresh;
    batchfit_options_init(&fresh);
    batchfit_result *r = NULL;
    CHECK_EQ(batchfit_probe(ctx, &fresh, d, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    batchfit_fit fit = r->fit;
    batchfit_result_free(r);
    memset(&older, 0xA5, sizeof older);
    batchfit_options_init(&older.o);
    older.o.requested_max = 300;
    older.o.cached_batch = 100;
    older.o.cached_fit = fit;
    older.o.struct_size = offsetof(batchfit_options, cached_budget_bytes);
    older.o.cached_budget_bytes = 0xA5A5A5A5A5A5A5A5ull; /* what lies past the old struct */
    CHECK_EQ(batchfit_probe(ctx, &older.o, d, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    /* The remembered 100 ran first, then the curve led to the answer: read
     * as a budget, the garbage would have put the earlier probe's crossing
     * far above 100, and the next size, 101, would have run second. */
    CHECK_EQ(r->trials[0].batch, 100);
    CHECK(r->trial_count >= 2 && r->trials[1].batch > 101);
    CHECK_EQ(r->batch_size, 145);
    CHECK_EQ(r->upper_bound, 300);
    batchfit_result_free(r);
    int rc;
    batchfit_result *decided = decide(ctx, &older.o, 0, &rc);
    CHECK_EQ(rc, BATCHFIT_OK);
    CHECK_EQ(decided->upper_bound, 300);
    batchfit_result_free(decided);
    older.o.struct_size = offsetof(batchfit_options, cached_budget_bytes) - 1;
    CHECK(decide(ctx, &older.o, 0, &rc) == NULL);
    CHECK_EQ(rc, BATCHFIT_E_INVALID_ARGUMENT);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}

TEST(decide_rejects_bad_options)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_options o;
    int rc;
    batchfit_result *r;

    batchfit_options_init(&o);
    o.struct_size = 3;
    r = decide(ctx, &o, 0, &rc);
    CHECK_EQ(rc, BATCHFIT_E_INVALID_ARGUMENT);
    CHECK(r == NULL);

    batchfit_options_init(&o);
    o.lattice = BATCHFIT_LATTICE_MULTIPLE;
    o.lattice_multiple = 0;
    CHECK(decide(ctx, &o, 0, &rc) == NULL);
    CHECK_EQ(rc, BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "lattice_multiple");

    batchfit_options_init(&o);
    o.margin_fraction = 1.0;
    CHECK(decide(ctx, &o, 0, &rc) == NULL);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "margin_fraction");

    batchfit_options_init(&o);
    o.max_trials = 0;
    CHECK(decide(ctx, &o, 0, &rc) == NULL);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "max_trials");

    batchfit_options_init(&o);
    o.strategy = (batchfit_strategy)42;
    CHECK(decide(ctx, &o, 0, &rc) == NULL);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "strategy");

    batchfit_options_init(&o);
    o.peak_spread = 0.7;
    CHECK(decide(ctx, &o, 0, &rc) == NULL);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "peak_spread");

    batchfit_options_init(&o);
    o.requested_max = UINT64_MAX;
    CHECK(decide(ctx, &o, 0, &rc) == NULL);
    CHECK_EQ(rc, BATCHFIT_E_INVALID_ARGUMENT);

    CHECK_EQ(batchfit_decide(ctx, &o, 0, NULL), BATCHFIT_E_INVALID_ARGUMENT);
    batchfit_ctx_free(ctx);
}
