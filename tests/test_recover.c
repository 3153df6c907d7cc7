#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

typedef struct resizes {
    int calls;
    batchfit_recover_plan last;
    int stop;
    uint64_t min;        /* the minimum micro-batch make() asks for; 0: the default */
    unsigned grow_after; /* and the clean steps before growing back */
} resizes;

static int on_resize(const batchfit_recover_plan *plan, void *userdata)
{
    resizes *r = userdata;
    r->calls++;
    r->last = *plan;
    return r->stop;
}

typedef struct warnings {
    int count;
    int wins; /* of them, "the minimum wins" */
    char last[256];
} warnings;

static void count_warning(batchfit_log_level level, const char *message, void *userdata)
{
    warnings *w = userdata;
    if (level >= BATCHFIT_LOG_WARN) {
        w->count++;
        w->wins += strstr(message, "the minimum wins") != NULL;
        snprintf(w->last, sizeof w->last, "%s", message);
    }
}

static batchfit_recover *make(batchfit_ctx *ctx, uint64_t global, uint64_t micro, resizes *rs,
                              void (*tweak)(batchfit_recover_options *))
{
    batchfit_recover_options o;
    batchfit_recover_options_init(&o);
    o.global_batch = global;
    o.micro_batch = micro;
    o.resize = on_resize;
    o.userdata = rs;
    if (rs->min)
        o.min_batch = rs->min;
    o.grow_after = rs->grow_after;
    if (tweak)
        tweak(&o);
    batchfit_recover *r = NULL;
    if (batchfit_recover_create(ctx, &o, &r) != BATCHFIT_OK)
        return NULL;
    return r;
}

TEST(recover_shrinks_and_keeps_the_effective_batch)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    resizes rs = {0};
    batchfit_recover *r = make(ctx, 96, 32, &rs, NULL);
    CHECK(r != NULL);
    const batchfit_recover_plan *p = batchfit_recover_get(r);
    CHECK_EQ(p->micro_batch, 32);
    CHECK_EQ(p->accumulation, 3);
    CHECK_EQ(p->last_micro_batch, 32);
    CHECK_EQ(p->effective_batch, 96);
    CHECK_EQ(batchfit_recover_oom(r, 0), BATCHFIT_OK); /* no curve: halve */
    CHECK_EQ(p->micro_batch, 16);
    CHECK_EQ(p->accumulation, 6);
    CHECK_EQ(rs.calls, 1);
    CHECK_EQ(rs.last.micro_batch, 16);
    CHECK_EQ(batchfit_recover_oom(r, 0), BATCHFIT_OK);
    CHECK_EQ(p->micro_batch, 8);
    CHECK_EQ(p->accumulation, 12);
    batchfit_recover_free(r);

    /* A global batch the micro-batch does not divide: as few steps as
     * micro-batches of at most that size take, as even as they go (64 + 36
     * is 50 + 50; halved, 32 x 3 + 4 is 25 x 4). 97 from 32: 25 x 3 + 22,
     * not 32 x 3 + 1; halved, at most 12 a step: 11 x 8 + 9 (it was
     * 16 x 6 + 1, a last micro-batch of one sample that BatchNorm refuses). */
    static const struct {
        uint64_t global, micro;
        uint64_t plan[2][3]; /* micro-batch, accumulation, last: at first, halved */
    } uneven[] = {{100, 64, {{50, 2, 50}, {25, 4, 25}}}, {97, 32, {{25, 4, 22}, {11, 9, 9}}}};
    for (size_t i = 0; i < sizeof uneven / sizeof uneven[0]; i++) {
        r = make(ctx, uneven[i].global, uneven[i].micro, &rs, NULL);
        p = batchfit_recover_get(r);
        for (int h = 0; h < 2; h++) {
            if (h)
                CHECK_EQ(batchfit_recover_oom(r, 0), BATCHFIT_OK);
            CHECK_EQ(p->micro_batch, uneven[i].plan[h][0]);
            CHECK_EQ(p->accumulation, uneven[i].plan[h][1]);
            CHECK_EQ(p->last_micro_batch, uneven[i].plan[h][2]);
            CHECK_EQ(p->micro_batch * (p->accumulation - 1) + p->last_micro_batch,
                     uneven[i].global);
        }
        batchfit_recover_free(r);
    }
    batchfit_ctx_free(ctx);
}

static void with_curve(batchfit_recover_options *o)
{
    o->fit.valid = 1;
    o->fit.intercept_bytes = 1000;
    o->fit.bytes_per_sample = 100;
    o->min_batch = 4;
    o->max_retries = 3;
}

static void with_curve_and_residual(batchfit_recover_options *o)
{
    with_curve(o);
    o->fit.max_residual_bytes = 100;
}

TEST(recover_uses_the_curve_and_gives_up_at_the_minimum)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    resizes rs = {0};
    batchfit_recover *r = make(ctx, 256, 64, &rs, with_curve);
    const batchfit_recover_plan *p = batchfit_recover_get(r);
    /* 1000 + 100 m <= 5350: at most 43 (not halved to 32), 6 steps:
     * 43 x 5 + 41. */
    CHECK_EQ(batchfit_recover_oom(r, 5350), BATCHFIT_OK);
    CHECK_EQ(p->micro_batch, 43);
    CHECK_EQ(p->accumulation, 6);
    CHECK_EQ(p->last_micro_batch, 41);
    /* The curve's answer never goes up or stays: at least one smaller. */
    CHECK_EQ(batchfit_recover_oom(r, 1000000), BATCHFIT_OK);
    CHECK_EQ(p->micro_batch, 20);
    /* Never below the minimum; out of memory at the minimum gives up. */
    CHECK_EQ(batchfit_recover_oom(r, 1200), BATCHFIT_OK);
    CHECK_EQ(p->micro_batch, 4);
    CHECK_EQ(batchfit_recover_oom(r, 0), BATCHFIT_E_MIN_DOES_NOT_FIT);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "minimum micro-batch of 4");
    batchfit_recover_free(r);

    /* The curve less its largest residual (100 bytes): 1000 + 100 m + 100
     * <= 5350 is at most 42, where the line alone says 43: 7 steps,
     * 37 x 6 + 34. */
    r = make(ctx, 256, 64, &rs, with_curve_and_residual);
    p = batchfit_recover_get(r);
    CHECK_EQ(batchfit_recover_oom(r, 5350), BATCHFIT_OK);
    CHECK_EQ(p->micro_batch, 37);
    CHECK_EQ(p->accumulation, 7);
    batchfit_recover_free(r);

    /* A bounded number of reductions without a clean step. */
    r = make(ctx, 1 << 20, 1 << 19, &rs, with_curve);
    int rc = BATCHFIT_OK, n = 0;
    while (rc == BATCHFIT_OK && n < 10) {
        rc = batchfit_recover_oom(r, 0);
        n++;
    }
    CHECK_EQ(rc, BATCHFIT_E_MIN_DOES_NOT_FIT);
    CHECK_EQ(n, 4);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "3 reductions in a row");
    batchfit_recover_free(r);

    /* The resize callback can stop training; the plan is then the one the
     * pipeline still has (it was the refused one). */
    rs.stop = 1;
    r = make(ctx, 64, 32, &rs, NULL);
    CHECK_EQ(batchfit_recover_oom(r, 0), BATCHFIT_E_ABORTED);
    CHECK_EQ(rs.last.micro_batch, 16);
    CHECK_EQ(batchfit_recover_get(r)->micro_batch, 32);
    CHECK_EQ(batchfit_recover_get(r)->accumulation, 2);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "the plan stays micro-batch 32");
    batchfit_recover_free(r);
    /* A refused grow leaves nothing half done: the next out of memory
     * halves the plan the pipeline has (it was read as a failed grow and
     * "went back" to that very plan, 16 again). */
    resizes g = {0};
    g.grow_after = 1;
    r = make(ctx, 64, 32, &g, NULL);
    CHECK_EQ(batchfit_recover_oom(r, 0), BATCHFIT_OK);
    CHECK_EQ(batchfit_recover_get(r)->micro_batch, 16);
    g.stop = 1;
    int changed = -1;
    CHECK_EQ(batchfit_recover_step_ok(r, &changed), BATCHFIT_E_ABORTED);
    CHECK_EQ(changed, 0);
    CHECK_EQ(batchfit_recover_get(r)->micro_batch, 16);
    g.stop = 0;
    CHECK_EQ(batchfit_recover_oom(r, 0), BATCHFIT_OK);
    CHECK_EQ(batchfit_recover_get(r)->micro_batch, 8);
    CHECK_EQ(g.last.micro_batch, 8);
    batchfit_recover_free(r);
    batchfit_ctx_free(ctx);
}

static void grow_after_3(batchfit_recover_options *o)
{
    o->grow_after = 3;
}

/* Runs clean steps until the plan grows: the step it grew at (1 the
 * first), 0 where it did not in limit steps or a step failed. */
static unsigned clean_steps_to_grow(batchfit_recover *r, unsigned limit)
{
    for (unsigned i = 1; i <= limit; i++) {
        int changed = 0;
        if (batchfit_recover_step_ok(r, &changed) != BATCHFIT_OK)
            return 0;
        if (changed)
            return i;
    }
    return 0;
}

TEST(recover_grows_back_when_asked)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    resizes rs = {0};
    batchfit_recover *r = make(ctx, 128, 32, &rs, grow_after_3);
    const batchfit_recover_plan *p = batchfit_recover_get(r);
    CHECK_EQ(batchfit_recover_oom(r, 0), BATCHFIT_OK);
    CHECK_EQ(p->micro_batch, 16);
    CHECK_EQ(clean_steps_to_grow(r, 100), 3);
    CHECK_EQ(p->micro_batch, 22); /* at most 24, halfway back to 32: 22 x 5 + 18 */
    CHECK_EQ(p->micro_batch * (p->accumulation - 1) + p->last_micro_batch, 128);
    /* Too hopeful: back to 16, and twice as long before the next try. */
    CHECK_EQ(batchfit_recover_oom(r, 0), BATCHFIT_OK);
    CHECK_EQ(p->micro_batch, 16);
    CHECK_EQ(clean_steps_to_grow(r, 100), 6);
    /* Not 22 again: halfway to 21, under the size the grow failed at:
     * 19 x 6 + 14. */
    CHECK_EQ(p->micro_batch, 19);
    /* A growth that held keeps the longer wait. Nothing larger splits
     * below 22 (20 and 21 are 19 x 6 + 14 again): after that wait at 19,
     * 22 is tried again (22 x 5 + 18). */
    CHECK_EQ(clean_steps_to_grow(r, 100), 6);
    CHECK_EQ(p->micro_batch, 22);
    /* Still too much: back to 19, and 12 clean steps before 22 again. */
    CHECK_EQ(batchfit_recover_oom(r, 0), BATCHFIT_OK);
    CHECK_EQ(p->micro_batch, 19);
    CHECK_EQ(clean_steps_to_grow(r, 100), 12);
    CHECK_EQ(p->micro_batch, 22);
    /* This time it runs clean for the wait (12 steps on trial): the
     * squeeze has passed, and growing goes on every 3 clean steps, halfway
     * to 32 (26 x 4 + 24), then 32. */
    CHECK_EQ(clean_steps_to_grow(r, 100), 12 + 3);
    CHECK_EQ(p->micro_batch, 26);
    CHECK_EQ(clean_steps_to_grow(r, 100), 3);
    CHECK_EQ(p->micro_batch, 32);
    CHECK_EQ(clean_steps_to_grow(r, 100), 0); /* the probed size: no higher */
    batchfit_recover_free(r);

    /* A second reviewer's loop: 28 from 15 at least 2, a step that runs
     * out of memory above 5. It grew to 7, failed, went back to 2, and grew
     * to 7 again for ever (12 failures in 2000 steps, 2 x 14 all along);
     * each failed grow now lowers the top and doubles the wait, so it
     * settles at 5 x 5 + 3, and tries past it less and less often. */
    resizes loop = {.min = 2, .grow_after = 1};
    int changed = 0;
    r = make(ctx, 28, 15, &loop, NULL);
    p = batchfit_recover_get(r);
    unsigned ooms = 0, ooms_late = 0, at_five = 0;
    for (int step = 0; step < 4000; step++) {
        if (p->micro_batch > 5) {
            ooms++;
            ooms_late += step >= 2000;
            CHECK_EQ(batchfit_recover_oom(r, 0), BATCHFIT_OK);
        } else {
            at_five += p->micro_batch == 5;
            CHECK_EQ(batchfit_recover_step_ok(r, &changed), BATCHFIT_OK);
        }
    }
    CHECK_EQ(p->micro_batch, 5);
    CHECK_EQ(p->last_micro_batch, 3);
    /* Two halvings from 15, then one failed grow a doubling of the wait
     * (2, 4, ... steps): at most 2 + log2(4000) = 13, one of them in the
     * second 2000 steps; every clean step but a few at 5. */
    CHECK(ooms <= 13);
    CHECK(ooms_late <= 1);
    CHECK(at_five >= 3980);
    batchfit_recover_free(r);

    /* Off by default: clean steps never change the plan. */
    r = make(ctx, 128, 32, &rs, NULL);
    p = batchfit_recover_get(r);
    CHECK_EQ(batchfit_recover_oom(r, 0), BATCHFIT_OK);
    for (int i = 0; i < 50; i++) {
        CHECK_EQ(batchfit_recover_step_ok(r, &changed), BATCHFIT_OK);
        CHECK_EQ(changed, 0);
    }
    CHECK_EQ(p->micro_batch, 16);
    batchfit_recover_free(r);
    batchfit_ctx_free(ctx);
}

/* Runs steps that run out of memory above squeeze_limit for the first
 * squeeze steps, above limit after; the micro-batch of the last step that
 * ran clean, and the out-of-memory steps after the squeeze. */
typedef struct squeeze_run {
    uint64_t last_clean;
    unsigned ooms_after;
    int failed;
} squeeze_run;

static squeeze_run run_squeeze(batchfit_ctx *ctx, uint64_t global, uint64_t start, uint64_t min,
                               unsigned grow_after, uint64_t squeeze_limit, unsigned squeeze,
                               uint64_t limit, unsigned steps)
{
    squeeze_run out = {0, 0, 0};
    resizes rs = {.min = min, .grow_after = grow_after};
    batchfit_recover *r = make(ctx, global, start, &rs, NULL);
    if (!r) {
        out.failed = 1;
        return out;
    }
    const batchfit_recover_plan *p = batchfit_recover_get(r);
    for (unsigned step = 0; step < steps && !out.failed; step++) {
        uint64_t fits = step < squeeze ? squeeze_limit : limit;
        if (p->micro_batch > fits) {
            out.ooms_after += step >= squeeze;
            out.failed = batchfit_recover_oom(r, 0) != BATCHFIT_OK;
        } else {
            out.last_clean = p->micro_batch;
            out.failed = batchfit_recover_step_ok(r, NULL) != BATCHFIT_OK;
        }
    }
    batchfit_recover_free(r);
    return out;
}

/* A squeeze that passes (another job's memory given back, a fragmented
 * pool released) is grown out of: a grow that failed under it bounded the
 * run for good (128 from 32, 10 fitting for 100 steps and 32 after: it
 * stayed at 10). Over random cases the run that met a squeeze ends where
 * the run that met none does, at the largest plan that fits, and pays at
 * most a failed grow a doubling of the wait after it. */
TEST(recover_grows_back_after_a_squeeze_passes)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    squeeze_run calm = run_squeeze(ctx, 128, 32, 1, 3, 32, 0, 32, 600);
    squeeze_run squeezed = run_squeeze(ctx, 128, 32, 1, 3, 10, 100, 32, 600);
    CHECK_EQ(calm.failed, 0);
    CHECK_EQ(squeezed.failed, 0);
    CHECK_EQ(calm.last_clean, 32);
    CHECK_EQ(squeezed.last_clean, 32);
    CHECK_EQ(squeezed.ooms_after, 0);

    /* Memory that comes and goes (room for 10 or 13 samples a step, at
     * random): a retried size is on trial for the wait, not passed after
     * one clean step (taken as passed, it ran out of memory 633 times in
     * 100000 steps, each halving, and the mean micro-batch fell to 8.97). */
    resizes coming = {.grow_after = 20};
    batchfit_recover *r = make(ctx, 64, 32, &coming, NULL);
    CHECK(r != NULL);
    const batchfit_recover_plan *p = batchfit_recover_get(r);
    unsigned ooms = 0;
    uint64_t samples = 0, draw = 12345;
    for (int step = 0; step < 100000; step++) {
        draw = draw * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
        uint64_t room = (draw >> 33) & 1 ? 13 : 10;
        if (p->micro_batch > room) {
            ooms++;
            CHECK_EQ(batchfit_recover_oom(r, 0), BATCHFIT_OK);
        } else {
            samples += p->micro_batch;
            CHECK_EQ(batchfit_recover_step_ok(r, NULL), BATCHFIT_OK);
        }
    }
    batchfit_recover_free(r);
    CHECK(ooms <= 30);
    CHECK(samples >= UINT64_C(990000)); /* a mean micro-batch of 9.9 at least */

    uint64_t seed = UINT64_C(0x9e3779b97f4a7c15);
    unsigned cases = 0;
    for (int k = 0; k < 2000; k++) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        uint64_t global = 2 + seed % 200, start = 1 + (seed >> 8) % global;
        uint64_t min = 1 + (seed >> 16) % 3, limit = min + (seed >> 24) % global;
        uint64_t squeeze_limit = min + (seed >> 32) % (limit - min + 1);
        unsigned grow_after = 1 + (unsigned)((seed >> 40) % 5);
        unsigned squeeze = (unsigned)((seed >> 44) % 300);
        squeeze_run a = run_squeeze(ctx, global, start, min, grow_after, limit, 0, limit, 1500);
        squeeze_run b = run_squeeze(ctx, global, start, min, grow_after, squeeze_limit, squeeze,
                                    limit, 1500);
        if (a.failed || b.failed)
            continue; /* no plan fits, or the minimum ran out of memory */
        cases++;
        if (a.last_clean != b.last_clean) {
            test_fail(__FILE__, __LINE__,
                      "%llu from %llu at least %llu, grow after %u, %u steps fitting %llu then "
                      "%llu: ended at %llu, %llu without the squeeze",
                      (unsigned long long)global, (unsigned long long)start,
                      (unsigned long long)min, grow_after, squeeze,
                      (unsigned long long)squeeze_limit, (unsigned long long)limit,
                      (unsigned long long)b.last_clean, (unsigned long long)a.last_clean);
            return;
        }
        /* The largest plan that fits: the one made for at most the limit
         * (or the start, where it is lower). */
        resizes none = {.min = min};
        batchfit_recover *best = make(ctx, global, limit < start ? limit : start, &none, NULL);
        CHECK(best != NULL);
        uint64_t largest = batchfit_recover_get(best)->micro_batch;
        batchfit_recover_free(best);
        CHECK_EQ(a.last_clean, largest);
        /* Halvings back down after a grow past the limit, then a failed
         * grow a doubling of the wait: log2(1500) + log2(global) + 2. */
        CHECK(b.ooms_after <= 20);
    }
    CHECK(cases >= 1000);
    batchfit_ctx_free(ctx);
}

TEST(recover_rejects_bad_options_and_survives_allocation_failure)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_recover_options o;
    batchfit_recover_options_init(&o);
    batchfit_recover *r = NULL;
    CHECK_EQ(batchfit_recover_create(ctx, &o, &r), BATCHFIT_E_INVALID_ARGUMENT);
    o.global_batch = 8;
    o.micro_batch = 4;
    o.min_batch = 16;
    CHECK_EQ(batchfit_recover_create(ctx, &o, &r), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK(r == NULL);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "the minimum micro-batch 16 exceeds the global batch 8");
    /* Past the accumulation steps a plan holds, that is what is said (it
     * read as a global batch that does not split). */
    o.global_batch = UINT64_C(1000000000000);
    o.micro_batch = 100;
    o.min_batch = 1;
    CHECK_EQ(batchfit_recover_create(ctx, &o, &r), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK(r == NULL);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx),
                   "the global batch of 1000000000000 in micro-batches of at most 100 takes more "
                   "than 4294967295 accumulation steps");
    o.global_batch = 8;
    o.micro_batch = 4;
    /* A fit that is no curve was ignored without a word at the first out
     * of memory: refused, whatever is wrong with it. */
    static const double bad[][3] = {
        {NAN, 1.0, 0.0}, {0.0, INFINITY, 0.0}, {0.0, 1.0, NAN}, {0.0, -1.0, 0.0}, {0.0, 1.0, -1.0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.fit.valid = 1;
        o.fit.intercept_bytes = bad[i][0];
        o.fit.bytes_per_sample = bad[i][1];
        o.fit.max_residual_bytes = bad[i][2];
        CHECK_EQ(batchfit_recover_create(ctx, &o, &r), BATCHFIT_E_INVALID_ARGUMENT);
        CHECK(r == NULL);
        CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "is not a curve");
    }
    o.fit.valid = 0;
    /* The minimum wins over a smaller starting size, with a warning. */
    warnings w = {0, 0, ""};
    batchfit_ctx_set_log(ctx, count_warning, &w, BATCHFIT_LOG_WARN);
    o.global_batch = 10;
    o.min_batch = 5;
    CHECK_EQ(batchfit_recover_create(ctx, &o, &r), BATCHFIT_OK);
    CHECK_EQ(batchfit_recover_get(r)->micro_batch, 5);
    CHECK_EQ(w.count, 1);
    CHECK_CONTAINS(w.last, "the starting micro-batch 4 is under the minimum of 5; the minimum wins");
    batchfit_recover_free(r);
    r = NULL;
    /* Not for a recovery then refused (10 at least 4 from 3: 4 + 4 + 2). */
    o.min_batch = 4;
    o.micro_batch = 3;
    CHECK_EQ(batchfit_recover_create(ctx, &o, &r), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK(r == NULL);
    CHECK_EQ(w.wins, 1);
    o.micro_batch = 4;
    o.global_batch = 8;
    batchfit_ctx_free(ctx);
    test_alloc_state st = {0, -1, 0, 0};
    ctx = test_ctx(&st);
    o.min_batch = 1;
    st.fail_at = st.calls;
    CHECK_EQ(batchfit_recover_create(ctx, &o, &r), BATCHFIT_E_NO_MEMORY);
    CHECK(r == NULL);
    batchfit_ctx_free(ctx);
    CHECK_EQ(st.outstanding, 0);
}

/* Every micro-batch, the last too, holds at least the minimum (a layer
 * that needs two samples fails on a last micro-batch of 1): where the
 * remainder would be smaller, a smaller micro-batch whose remainder is not;
 * where none is, the search gives up (or the options are refused) saying
 * why. The sizes always add up to the global batch. */
TEST(recover_last_micro_batch_holds_the_minimum)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    resizes rs = {0};
    rs.min = 2;
    /* 9 in 8s at least 2: 8 + 1 would leave 1; 5 + 4 does not. */
    batchfit_recover *r = make(ctx, 9, 8, &rs, NULL);
    CHECK(r != NULL);
    const batchfit_recover_plan *p = batchfit_recover_get(r);
    CHECK_EQ(p->micro_batch, 5);
    CHECK_EQ(p->last_micro_batch, 4);
    CHECK_EQ(p->micro_batch * (p->accumulation - 1) + p->last_micro_batch, 9);
    batchfit_recover_free(r);
    /* 100 halved down to 6, 3 at least 2: 6 x 16 + 4, then 3 x 33 + 1 is 2 x 50. */
    r = make(ctx, 100, 100, &rs, NULL);
    p = batchfit_recover_get(r);
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(batchfit_recover_oom(r, 0), BATCHFIT_OK);
        CHECK(p->last_micro_batch >= 2);
        CHECK(p->last_micro_batch <= p->micro_batch);
        CHECK_EQ(p->micro_batch * (p->accumulation - 1) + p->last_micro_batch, 100);
    }
    CHECK_EQ(p->micro_batch, 2);
    CHECK_EQ(p->accumulation, 50);
    batchfit_recover_free(r);
    /* 10 at least 4 splits evenly only as 5 + 5 or 10. Growing back where
     * the split rounds the halfway size down to no larger a micro-batch
     * goes to the probed size itself; and out of memory where nothing
     * smaller splits gives up, naming the split. */
    rs.min = 4;
    rs.grow_after = 1;
    r = make(ctx, 10, 10, &rs, NULL);
    p = batchfit_recover_get(r);
    CHECK_EQ(p->micro_batch, 10);
    CHECK_EQ(batchfit_recover_oom(r, 0), BATCHFIT_OK);
    CHECK_EQ(p->micro_batch, 5);
    CHECK_EQ(p->last_micro_batch, 5);
    int changed = 0;
    CHECK_EQ(batchfit_recover_step_ok(r, &changed), BATCHFIT_OK);
    CHECK_EQ(changed, 1);
    CHECK_EQ(p->micro_batch, 10); /* halfway is 8, which splits as 5 + 5: the probed size */
    CHECK_EQ(batchfit_recover_oom(r, 0), BATCHFIT_OK); /* too hopeful: back to 5 */
    CHECK_EQ(p->micro_batch, 5);
    CHECK_EQ(p->last_micro_batch, 5);
    /* Halved to 2, held at the minimum of 4, 10 leaves 4 + 4 + 2, and no
     * size under 5 splits it. */
    CHECK_EQ(batchfit_recover_oom(r, 0), BATCHFIT_E_MIN_DOES_NOT_FIT); /* 4 + 4 + 2 */
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "does not split");
    CHECK_EQ(p->micro_batch, 5);
    batchfit_recover_free(r);
    /* Out of memory where the half does not split but a size between it
     * and the micro-batch does: 11 at least 4 halves to 5 (5 + 5 + 1, 4 +
     * 4 + 3), and 6 + 5 splits it; 7 at least 3 to 4 + 3; 13 at least 5 to
     * 7 + 6. Training went on (it gave up, with a split at hand). */
    static const struct {
        uint64_t global, min, micro, last;
    } nearest[] = {{11, 4, 6, 5}, {7, 3, 4, 3}, {13, 5, 7, 6}, {100, 40, 50, 50}};
    for (size_t i = 0; i < sizeof nearest / sizeof nearest[0]; i++) {
        rs.min = nearest[i].min;
        r = make(ctx, nearest[i].global, nearest[i].global, &rs, NULL);
        CHECK(r != NULL);
        p = batchfit_recover_get(r);
        CHECK_EQ(batchfit_recover_oom(r, 0), BATCHFIT_OK);
        CHECK_EQ(p->micro_batch, nearest[i].micro);
        CHECK_EQ(p->accumulation, 2);
        CHECK_EQ(p->last_micro_batch, nearest[i].last);
        batchfit_recover_free(r);
    }
    /* Plans at creation: the fewest steps that split, as even as they go, found at once
     * however far below the size asked for (not size by size); refused
     * where none splits or the steps would not fit the plan's count. */
    static const struct {
        uint64_t global, micro, min;
        int rc;
        uint64_t micro_batch, accumulation, last;
    } plans[] = {
        {10, 4, 4, BATCHFIT_E_INVALID_ARGUMENT, 0, 0, 0},
        {10000000, 9999999, 4000000, BATCHFIT_OK, 5000000, 2, 5000000},
        {1000000000, 3, 2, BATCHFIT_OK, 2, 500000000, 2},
        {UINT64_C(1) << 40, 2, 1, BATCHFIT_E_INVALID_ARGUMENT, 0, 0, 0},
        {UINT64_MAX, UINT64_MAX - 1, 1, BATCHFIT_OK, UINT64_C(1) << 63, 2,
         (UINT64_C(1) << 63) - 1},
    };
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        batchfit_recover_options o;
        batchfit_recover_options_init(&o);
        o.global_batch = plans[i].global;
        o.micro_batch = plans[i].micro;
        o.min_batch = plans[i].min;
        r = NULL;
        CHECK_EQ(batchfit_recover_create(ctx, &o, &r), plans[i].rc);
        if (plans[i].rc != BATCHFIT_OK) {
            CHECK(r == NULL);
            continue;
        }
        p = batchfit_recover_get(r);
        CHECK_EQ(p->micro_batch, plans[i].micro_batch);
        CHECK_EQ(p->accumulation, plans[i].accumulation);
        CHECK_EQ(p->last_micro_batch, plans[i].last);
        batchfit_recover_free(r);
    }
    CHECK_EQ(batchfit_recover_create(ctx, &(batchfit_recover_options){0}, &r),
             BATCHFIT_E_INVALID_ARGUMENT);
    batchfit_ctx_free(ctx);
}

/* Runs the example trainer and returns its last line. */
static int trainer(const char *extra, char *last, size_t len)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "'%s/examples/trainer' --batch-size 32 --global-batch 96 --steps 6 %s 2>/dev/null",
             test_build_dir(), extra);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char line[512];
    last[0] = '\0';
    while (fgets(line, sizeof line, p))
        snprintf(last, len, "%s", line);
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Memory runs short at step 3 of 6 (the limit falls from 64 MiB to 8 MiB):
 * with recovery the trainer finishes with the same effective batch, the
 * same samples seen and the very same final loss as an undisturbed run. */
TEST(recover_through_the_example_trainer)
{
    char calm[512], short_of_memory[512], no_recovery[512];
    CHECK_EQ(trainer("--memory-limit 64", calm, sizeof calm), 0);
    CHECK_CONTAINS(calm, "samples seen 576, effective batch 96, final loss ");
    CHECK_EQ(trainer("--memory-limit 64 --shrink-at 3:8 --recover", short_of_memory,
                     sizeof short_of_memory),
             0);
    CHECK_STR(short_of_memory, calm);
    CHECK_EQ(trainer("--memory-limit 64 --shrink-at 3:8", no_recovery, sizeof no_recovery), 1);
    /* Too little even for one sample (64 channels: ~3 MiB a sample):
     * recovery gives up, clearly. */
    CHECK_EQ(trainer("--channels 64 --memory-limit 512 --shrink-at 2:1 --recover", no_recovery,
                     sizeof no_recovery),
             1);
}
