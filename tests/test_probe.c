#include "test.h"

#include "../bench/profiles.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>

/* A step that wraps the sim device's synthetic step and counts its
 * lifecycle calls, with failures injected where a test asks for them. */
typedef struct counting_step {
    int builds, built, releases, runs, on_ooms; /* built: builds that succeeded */
    batchfit_outcome build_as;  /* FITS: build normally */
    uint64_t error_from;        /* run() fails with an error from this batch; 0 = never */
    const char *error_text;
} counting_step;

static batchfit_outcome cs_build(void *userdata, batchfit_device *dev, void **state, char *msg,
                                 size_t len)
{
    counting_step *c = userdata;
    c->builds++;
    if (c->build_as != BATCHFIT_FITS) {
        snprintf(msg, len, "%s", c->build_as == BATCHFIT_OOM ? "CUDA out of memory while loading"
                                                             : "ModuleNotFoundError: torchvision");
        return c->build_as;
    }
    void *inner = NULL;
    batchfit_outcome o = batchfit_sim_step()->build(NULL, dev, &inner, msg, len);
    if (o != BATCHFIT_FITS)
        return o;
    void **pair = malloc(2 * sizeof *pair);
    if (!pair) {
        batchfit_sim_step()->release(inner);
        return BATCHFIT_ERROR;
    }
    pair[0] = c;
    pair[1] = inner;
    *state = pair;
    c->built++;
    return BATCHFIT_FITS;
}

static batchfit_outcome cs_run(void *state, uint64_t batch, batchfit_step_report *rep)
{
    void **pair = state;
    counting_step *c = pair[0];
    c->runs++;
    if (c->error_from && batch >= c->error_from) {
        snprintf(rep->message, sizeof rep->message, "%s", c->error_text);
        return BATCHFIT_ERROR;
    }
    return batchfit_sim_step()->run(pair[1], batch, rep);
}

static void cs_on_oom(void *state, uint64_t batch)
{
    void **pair = state;
    counting_step *c = pair[0];
    (void)batch;
    c->on_ooms++;
}

static void cs_release(void *state)
{
    void **pair = state;
    counting_step *c = pair[0];
    c->releases++;
    batchfit_sim_step()->release(pair[1]);
    free(pair);
}

static const batchfit_step counting = {sizeof(batchfit_step), "counting", 2, cs_build, cs_run,
                                       cs_on_oom, cs_release};

#define SPEC "sim:capacity=16GiB,fixed=2GiB,per_sample=37MiB,granule=2MiB"

/* After any probe the device must be as it was: no step memory, no ballast
 * (the only memory taken is what the spec's used= gives to others). */
static int device_is_clean(batchfit_device *d)
{
    uint64_t total, free_bytes;
    if (batchfit_device_memory(d, &total, &free_bytes) != BATCHFIT_OK)
        return 0;
    uint64_t taken = total - free_bytes;
    return batchfit__sim_in_use(d) == 0 && (taken == 0 || taken == UINT64_C(10) << 30);
}

/* A context, a sim device, a counting step and default options. */
typedef struct fixture {
    batchfit_ctx *ctx;
    batchfit_device *dev;
    counting_step step;
    batchfit_options opts;
    batchfit_result *result;
} fixture;

static int fixture_open(fixture *f, const char *spec)
{
    memset(f, 0, sizeof *f);
    f->ctx = test_ctx(NULL);
    batchfit_options_init(&f->opts);
    return f->ctx && batchfit_device_open(f->ctx, spec, &f->dev) == BATCHFIT_OK;
}

static int fixture_probe(fixture *f)
{
    batchfit_result_free(f->result);
    f->result = NULL;
    return batchfit_probe(f->ctx, &f->opts, f->dev, &counting, &f->step, &f->result);
}

static void fixture_close(fixture *f)
{
    batchfit_result_free(f->result);
    batchfit_device_free(f->dev);
    batchfit_ctx_free(f->ctx);
}

TEST(probe_success_releases_once_and_frees_the_margin)
{
    fixture f;
    CHECK(fixture_open(&f, SPEC));
    CHECK_EQ(fixture_probe(&f), BATCHFIT_OK);
    batchfit_result *r = f.result;
    CHECK_EQ(f.step.builds, 1);
    CHECK_EQ(f.step.releases, 1);
    CHECK_EQ(f.step.on_ooms, (int)r->oom_trials);
    CHECK(device_is_clean(f.dev));
    /* Budget: 16 GiB free, 5% margin held as ballast. */
    uint64_t cap = UINT64_C(16) << 30;
    CHECK(r->budget.known);
    CHECK_EQ(r->budget.total_bytes, cap);
    CHECK_EQ(r->budget.margin_bytes, (uint64_t)((double)cap * 0.05));
    CHECK_EQ(r->budget.budget_bytes, cap - r->budget.margin_bytes);
    CHECK_EQ(r->budget.held_bytes, r->budget.margin_bytes);
    CHECK(r->baseline_known);
    CHECK_EQ(r->baseline_bytes, UINT64_C(2) << 30);
    /* Largest b with 2 GiB + round2MiB(37 MiB * b) <= budget. */
    uint64_t expect = 0;
    for (uint64_t b = 1; b < 10000; b++) {
        uint64_t act = (UINT64_C(37) << 20) * b;
        act = (act + (UINT64_C(2) << 20) - 1) / (UINT64_C(2) << 20) * (UINT64_C(2) << 20);
        if ((UINT64_C(2) << 30) + act <= r->budget.budget_bytes)
            expect = b;
    }
    CHECK_EQ(r->batch_size, expect);
    CHECK_EQ(r->min_batch, 2);
    CHECK_EQ(r->source, BATCHFIT_SOURCE_MEASURED);
    for (size_t i = 0; i < r->trial_count; i++)
        CHECK(r->trials[i].batch >= 2);
    fixture_close(&f);
}

TEST(probe_error_releases_once)
{
    fixture f;
    CHECK(fixture_open(&f, SPEC));
    f.step.error_from = 50;
    f.step.error_text = "RuntimeError: shape mismatch";
    CHECK_EQ(fixture_probe(&f), BATCHFIT_E_TRIAL_ERROR);
    CHECK_EQ(f.step.builds, 1);
    CHECK_EQ(f.step.releases, 1);
    CHECK(device_is_clean(f.dev));
    CHECK(f.result != NULL);
    CHECK_EQ(f.result->trials[f.result->trial_count - 1].outcome, BATCHFIT_ERROR);
    CHECK_CONTAINS(batchfit_ctx_last_error(f.ctx), "RuntimeError: shape mismatch");
    CHECK_EQ(f.result->batch_size, 0);
    fixture_close(&f);
}

TEST(probe_oom_at_the_minimum_releases_once)
{
    fixture f;
    CHECK(fixture_open(&f, "sim:capacity=16GiB,fixed=15GiB,per_sample=1GiB"));
    CHECK_EQ(fixture_probe(&f), BATCHFIT_E_MIN_DOES_NOT_FIT);
    CHECK_EQ(f.step.builds, 1);
    CHECK_EQ(f.step.releases, 1);
    CHECK_EQ(f.step.on_ooms, 1);
    CHECK_EQ(f.result->trial_count, 1);
    CHECK_EQ(f.result->trials[0].batch, 2);
    CHECK(device_is_clean(f.dev));
    CHECK_CONTAINS(batchfit_ctx_last_error(f.ctx), "minimum batch size 2 does not fit");

    /* The model itself does not fit: nothing was built, nothing to release. */
    f.step = (counting_step){0};
    f.step.build_as = BATCHFIT_OOM;
    CHECK_EQ(fixture_probe(&f), BATCHFIT_E_MIN_DOES_NOT_FIT);
    CHECK_EQ(f.step.builds, 1);
    CHECK_EQ(f.step.releases, 0);
    CHECK_EQ(f.result->trial_count, 0);
    CHECK(device_is_clean(f.dev));
    CHECK_CONTAINS(batchfit_ctx_last_error(f.ctx), "CUDA out of memory while loading");
    fixture_close(&f);
}

TEST(probe_build_error_is_reported)
{
    fixture f;
    CHECK(fixture_open(&f, SPEC));
    f.step.build_as = BATCHFIT_ERROR;
    CHECK_EQ(fixture_probe(&f), BATCHFIT_E_TRIAL_ERROR);
    CHECK_EQ(f.step.releases, 0);
    CHECK_EQ(f.step.runs, 0);
    CHECK(device_is_clean(f.dev));
    CHECK_CONTAINS(batchfit_ctx_last_error(f.ctx), "ModuleNotFoundError: torchvision");
    fixture_close(&f);
}

static int abort_at_once(const batchfit_result *r, const batchfit_trial *t, void *userdata)
{
    (void)r;
    (void)t;
    (void)userdata;
    return 1;
}

TEST(probe_abort_from_callback_releases_once)
{
    fixture f;
    CHECK(fixture_open(&f, SPEC));
    f.opts.progress = abort_at_once;
    CHECK_EQ(fixture_probe(&f), BATCHFIT_E_ABORTED);
    CHECK_EQ(f.step.builds, 1);
    CHECK_EQ(f.step.releases, 1);
    CHECK_EQ(f.step.runs, 1);
    CHECK_EQ(f.result->trial_count, 1);
    CHECK(device_is_clean(f.dev));
    fixture_close(&f);
}

/* A request no probe consumes waits for the next one (the documented
 * contract); batchfit_interrupt_take() withdraws it, returning its signal,
 * and the next probe runs. */
TEST(probe_interrupt_waits_for_the_next_probe_unless_taken)
{
    fixture f;
    CHECK(fixture_open(&f, SPEC));
    CHECK_EQ(batchfit_interrupt_take(), 0);
    batchfit_interrupt(SIGTERM);
    CHECK_EQ(fixture_probe(&f), BATCHFIT_E_ABORTED);
    CHECK(f.result->interrupted);
    CHECK_EQ(f.result->interrupt_signal, SIGTERM);
    CHECK_EQ(batchfit_interrupt_take(), 0); /* consumed by the probe it stopped */
    batchfit_interrupt(0);
    CHECK_EQ(batchfit_interrupt_take(), SIGINT);
    CHECK_EQ(batchfit_interrupt_take(), 0);
    CHECK_EQ(fixture_probe(&f), BATCHFIT_OK);
    CHECK(!f.result->interrupted);
    fixture_close(&f);
}

TEST(probe_bad_input_builds_nothing)
{
    fixture f;
    CHECK(fixture_open(&f, SPEC));
    f.opts.margin_fraction = -0.1;
    CHECK_EQ(fixture_probe(&f), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK(f.result == NULL);
    batchfit_step incomplete = counting;
    incomplete.release = NULL;
    batchfit_options_init(&f.opts);
    CHECK_EQ(batchfit_probe(f.ctx, &f.opts, f.dev, &incomplete, &f.step, &f.result),
             BATCHFIT_E_INVALID_ARGUMENT);
    CHECK(f.result == NULL);
    CHECK_EQ(f.step.builds, 0);
    /* A margin that leaves nothing is bad input, as a margin of 100% is. */
    f.opts.margin_bytes = UINT64_C(17) << 30;
    CHECK_EQ(fixture_probe(&f), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_EQ(f.step.builds, 0);
    CHECK_CONTAINS(batchfit_ctx_last_error(f.ctx), "margin");
    CHECK(device_is_clean(f.dev));
    fixture_close(&f);
    /* A device others hold entirely is the device's state, not a margin's
     * (it said "a margin of 0 B leaves nothing of the 0 B usable; give a
     * smaller margin" to a caller who gave none). */
    CHECK(fixture_open(&f, "sim:capacity=1GiB,used=1GiB"));
    CHECK_EQ(fixture_probe(&f), BATCHFIT_E_DEVICE);
    CHECK_EQ(f.step.builds, 0);
    CHECK_CONTAINS(batchfit_ctx_last_error(f.ctx),
                   "nothing of the 1.00 GiB of sim:capacity=1GiB,used=1GiB is free to probe");
    CHECK(strstr(batchfit_ctx_last_error(f.ctx), "margin") == NULL);
    fixture_close(&f);
}

TEST(probe_without_a_device_falls_back_without_building)
{
    fixture f;
    CHECK(fixture_open(&f, "sim:capacity=8GiB,unavailable=libcuda.so.1 not found"));
    CHECK_EQ(batchfit_probe(f.ctx, &f.opts, NULL, &counting, &f.step, &f.result), BATCHFIT_OK);
    batchfit_result *r = f.result;
    CHECK_EQ(r->source, BATCHFIT_SOURCE_FALLBACK);
    CHECK_EQ(r->batch_size, BATCHFIT_FALLBACK_BATCH_SIZE);
    CHECK_EQ(r->warning_count, 1);
    CHECK_CONTAINS(r->warnings[0], "no usable device (no device)");
    CHECK_CONTAINS(r->warnings[0], "not measured");
    CHECK_EQ(r->budget.known, 0);

    f.opts.requested_max = 100;
    f.opts.samples = 60;
    CHECK_EQ(fixture_probe(&f), BATCHFIT_OK);
    CHECK_EQ(f.result->batch_size, 60);
    CHECK_CONTAINS(f.result->warnings[0], "libcuda.so.1 not found");
    CHECK_CONTAINS(f.result->warnings[0], "dataset size");

    f.opts.samples = 0;
    f.opts.lattice = BATCHFIT_LATTICE_POW2;
    CHECK_EQ(fixture_probe(&f), BATCHFIT_OK);
    CHECK_EQ(f.result->batch_size, 100); /* the requested maximum is the extra candidate */

    f.opts.lattice = BATCHFIT_LATTICE_MULTIPLE;
    f.opts.lattice_multiple = 16;
    CHECK_EQ(fixture_probe(&f), BATCHFIT_OK);
    CHECK_EQ(f.result->batch_size, 96);

    f.opts.no_device = BATCHFIT_NO_DEVICE_ERROR;
    CHECK_EQ(fixture_probe(&f), BATCHFIT_E_NO_DEVICE);
    CHECK_CONTAINS(batchfit_ctx_last_error(f.ctx), "libcuda.so.1 not found");
    CHECK_EQ(f.result->batch_size, 0);
    CHECK_EQ(f.step.builds, 0);
    fixture_close(&f);
}

TEST(probe_vram_limit_and_memory_budget_cap_the_budget)
{
    fixture f;
    CHECK(fixture_open(&f, "sim:capacity=80GiB,used=10GiB,fixed=1GiB,per_sample=100MiB"));
    f.opts.vram_limit_bytes = UINT64_C(8) << 30;
    CHECK_EQ(fixture_probe(&f), BATCHFIT_OK);
    batchfit_budget *b = &f.result->budget;
    CHECK_EQ(b->free_bytes, UINT64_C(70) << 30);
    CHECK_EQ(b->usable_bytes, UINT64_C(8) << 30);
    CHECK_EQ(b->vram_limit_bytes, UINT64_C(8) << 30);
    CHECK_EQ(b->held_bytes, (UINT64_C(70) << 30) - b->budget_bytes);
    /* 1 GiB + 100 MiB * b <= 8 GiB * 0.95 */
    CHECK_EQ(f.result->batch_size,
             (uint64_t)(((double)(UINT64_C(8) << 30) * 0.95 - (double)(UINT64_C(1) << 30)) /
                        (double)(UINT64_C(100) << 20)));

    batchfit_options_init(&f.opts);
    f.opts.memory_budget_bytes = UINT64_C(4) << 30;
    f.opts.margin_bytes = UINT64_C(1) << 30;
    CHECK_EQ(fixture_probe(&f), BATCHFIT_OK);
    CHECK_EQ(f.result->budget.budget_bytes, UINT64_C(3) << 30);
    CHECK_EQ(f.result->batch_size, 20); /* 1 GiB + 100 MiB * 20 = 3 GiB - 48 MiB */

    f.opts.memory_budget_bytes = UINT64_C(100) << 30; /* more than is free: capped, with a warning */
    CHECK_EQ(fixture_probe(&f), BATCHFIT_OK);
    CHECK_EQ(f.result->budget.usable_bytes, UINT64_C(70) << 30);
    CHECK_CONTAINS(f.result->warnings[0],
                   "the memory budget of 100.00 GiB exceeds the 70.00 GiB free on the device");
    /* A VRAM limit above the whole device limits nothing, and says so (a
     * limit meant for another card); one below it says nothing. */
    batchfit_options_init(&f.opts);
    f.opts.vram_limit_bytes = UINT64_C(100) << 30;
    f.opts.vram_limit_source = "environment variable VRAM_LIMIT_GB";
    CHECK_EQ(fixture_probe(&f), BATCHFIT_OK);
    CHECK_EQ(f.result->budget.usable_bytes, UINT64_C(70) << 30);
    CHECK(f.result->warning_count >= 1);
    if (f.result->warning_count >= 1)
        CHECK_STR(f.result->warnings[0],
                  "the VRAM limit of 100.00 GiB (environment variable VRAM_LIMIT_GB) is above the "
                  "80.00 GiB of the device: it limits nothing here");
    f.opts.vram_limit_bytes = UINT64_C(8) << 30;
    CHECK_EQ(fixture_probe(&f), BATCHFIT_OK);
    for (size_t i = 0; i < f.result->warning_count; i++)
        CHECK(strstr(f.result->warnings[i], "VRAM limit") == NULL);
    /* An explicit budget the limit cuts is said, with where the limit came
     * from; one within the limit is not. */
    f.opts.memory_budget_bytes = UINT64_C(16) << 30;
    CHECK_EQ(fixture_probe(&f), BATCHFIT_OK);
    CHECK_EQ(f.result->budget.usable_bytes, UINT64_C(8) << 30);
    CHECK_EQ(f.result->warning_count, 1);
    CHECK_STR(f.result->warnings[0],
              "the VRAM limit of 8.00 GiB (environment variable VRAM_LIMIT_GB) caps the memory "
              "budget of 16.00 GiB: using 8.00 GiB");
    f.opts.memory_budget_bytes = UINT64_C(6) << 30;
    CHECK_EQ(fixture_probe(&f), BATCHFIT_OK);
    CHECK_EQ(f.result->budget.usable_bytes, UINT64_C(6) << 30);
    for (size_t i = 0; i < f.result->warning_count; i++)
        CHECK(strstr(f.result->warnings[i], "VRAM limit") == NULL);
    CHECK_EQ(f.step.builds, f.step.releases);
    CHECK(device_is_clean(f.dev));
    fixture_close(&f);
}

TEST(probe_every_allocation_failure_is_clean)
{
    long total = -1;
    for (long k = 0; total < 0 || k < total; k++) {
        test_alloc_state st = {0, total < 0 ? -1 : k, 0, 0};
        batchfit_ctx *ctx = test_ctx(&st);
        counting_step c = {0};
        batchfit_device *d = NULL;
        batchfit_result *r = NULL;
        int rc = -1;
        long failures_before_probe = 0;
        if (ctx && batchfit_device_open(ctx, "sim:capacity=16GiB,fixed=2GiB,per_sample=37MiB,"
                                             "unavailable=x", &d) == BATCHFIT_OK) {
            batchfit_device_free(d);
            d = NULL;
        }
        if (ctx && batchfit_device_open(ctx, SPEC ",jump=100:1GiB", &d) == BATCHFIT_OK) {
            failures_before_probe = st.failures;
            batchfit_options o;
            batchfit_options_init(&o);
            o.requested_max = 1; /* a warning, so its allocation is covered too */
            o.min_batch = 0;
            rc = batchfit_probe(ctx, &o, d, &counting, &c, &r);
            CHECK_EQ(c.built, c.releases);
            CHECK(device_is_clean(d));
            batchfit_result_free(r);
            r = NULL;
            batchfit_options_init(&o);
            rc = rc ? rc : batchfit_probe(ctx, &o, d, &counting, &c, &r);
            CHECK_EQ(c.built, c.releases);
            CHECK(device_is_clean(d));
        }
        if (total < 0) {
            CHECK_EQ(rc, BATCHFIT_OK);
            CHECK(r->trial_count >= 2);
            total = st.calls;
        } else {
            CHECK_EQ(st.failures, 1);
            if (ctx && d && !failures_before_probe)
                CHECK(rc == BATCHFIT_E_NO_MEMORY || rc == BATCHFIT_E_TRIAL_ERROR);
        }
        batchfit_result_free(r);
        batchfit_device_free(d);
        batchfit_ctx_free(ctx);
        CHECK_EQ(st.outstanding, 0);
    }
    CHECK(total > 8);
}

/* Seeded random profiles, harsher than the benchmark's families: fixed
 * memory 5-90% of a 16-141 GiB device, a largest batch anywhere from 1 to
 * 50,000 (so per-sample memory often below the 2 MiB granule), 0-3 jumps
 * of up to 8% of the room. Peaks and truths come from bench/profiles.c. */
static double rng_unit(uint64_t *s)
{
    return (double)(batchfit__splitmix64(s) >> 11) * 0x1.0p-53;
}

static void make_profile(uint64_t *rng, bench_profile *p)
{
    double gib = 1073741824.0;
    *p = (bench_profile){0};
    p->family = "random";
    p->granule = UINT64_C(2) << 20;
    p->capacity = (uint64_t)((16.0 + 125.0 * rng_unit(rng)) * gib);
    double fixed_share = 0.05 + 0.85 * rng_unit(rng);
    p->fixed = (uint64_t)(fixed_share * (double)p->capacity * 0.95);
    double target = exp(log(50000.0) * rng_unit(rng));
    double room = (double)p->capacity * 0.95 - (double)p->fixed;
    p->per_sample = (uint64_t)(room / (target + 0.5)) + 1;
    p->jumps = (unsigned)(batchfit__splitmix64(rng) % 4);
    for (unsigned j = 0; j < p->jumps; j++) {
        p->jump_batch[j] = 1 + (uint64_t)(rng_unit(rng) * target * 1.2);
        p->jump_bytes[j] = (uint64_t)(rng_unit(rng) * 0.08 * room);
    }
}

static int compare_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

TEST(probe_sim_profiles_exact_maximum)
{
    static const batchfit_strategy exact[] = {BATCHFIT_STRATEGY_MODEL, BATCHFIT_STRATEGY_BISECT,
                                              BATCHFIT_STRATEGY_BINSEARCH};
    uint64_t rng = 20261129;
    batchfit_ctx *ctx = test_ctx(NULL);
    size_t model_trials[150], bisect_total = 0, model_total = 0;
    for (int i = 0; i < 150; i++) {
        bench_profile p;
        make_profile(&rng, &p);
        char spec[512];
        bench_profile_spec(&p, NULL, spec, sizeof spec);
        for (size_t s = 0; s < 3; s++) {
            batchfit_device *d = NULL;
            CHECK_EQ(batchfit_device_open(ctx, spec, &d), BATCHFIT_OK);
            batchfit_options o;
            batchfit_options_init(&o);
            o.strategy = exact[s];
            o.requested_max = 65536;
            batchfit_result *r = NULL;
            int rc = batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &r);
            uint64_t truth = bench_profile_truth(&p, r->budget.budget_bytes, 65536, 0.0);
            if (truth == 0) {
                CHECK_EQ(rc, BATCHFIT_E_MIN_DOES_NOT_FIT);
            } else {
                if (r->batch_size != truth || getenv("BATCHFIT_TEST_SPECS"))
                    printf("    profile %d (%s) strategy %s\n", i, spec,
                           batchfit_strategy_name(exact[s]));
                CHECK_EQ(rc, BATCHFIT_OK);
                CHECK_EQ(r->batch_size, truth);
            }
            if (exact[s] == BATCHFIT_STRATEGY_MODEL) {
                model_trials[i] = r->trial_count;
                model_total += r->trial_count;
            }
            if (exact[s] == BATCHFIT_STRATEGY_BISECT)
                bisect_total += r->trial_count;
            if (getenv("BATCHFIT_TEST_VERBOSE"))
                printf("    profile %d %s: %zu trials, %zu oom, answer %llu\n", i,
                       batchfit_strategy_name(exact[s]), r->trial_count, r->oom_trials,
                       (unsigned long long)r->batch_size);
            CHECK(device_is_clean(d));
            batchfit_result_free(r);
            batchfit_device_free(d);
        }
    }
    /* Far fewer trials than bisection (16 over 1..65536), and never more. */
    qsort(model_trials, 150, sizeof model_trials[0], compare_size);
    CHECK(model_trials[75] <= 4);
    CHECK(model_trials[149] <= 16);
    CHECK(model_total * 3 < bisect_total);
    batchfit_ctx_free(ctx);
}

TEST(probe_noise_never_yields_an_answer_that_fails_on_rerun)
{
    uint64_t rng = 777;
    batchfit_ctx *ctx = test_ctx(NULL);
    for (int i = 0; i < 60; i++) {
        bench_profile p;
        make_profile(&rng, &p);
        p.noise = (double)(uint64_t)((0.001 + 0.009 * rng_unit(&rng)) * 1e8) / 1e8;
        for (int s = 0; s < 5; s++) {
            char spec[512];
            p.seed = (uint64_t)(i * 5 + s + 1);
            bench_profile_spec(&p, NULL, spec, sizeof spec);
            batchfit_device *d = NULL;
            CHECK_EQ(batchfit_device_open(ctx, spec, &d), BATCHFIT_OK);
            batchfit_options o;
            batchfit_options_init(&o);
            o.strategy = (batchfit_strategy)s;
            o.requested_max = 65536;
            batchfit_result *r = NULL;
            int rc = batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &r);
            batchfit_device_free(d);
            if (rc == BATCHFIT_OK) {
                /* Even the top of the noise band stays within the budget... */
                CHECK(bench_profile_peak(&p, r->batch_size, p.noise) <= r->budget.budget_bytes);
                /* ...and so do real re-runs, under the same budget. */
                char rerun[600];
                char used[64];
                snprintf(used, sizeof used, ",used=%llu",
                         (unsigned long long)(p.capacity - r->budget.budget_bytes));
                p.seed = (uint64_t)(1000 + i);
                bench_profile_spec(&p, used, rerun, sizeof rerun);
                batchfit_device *again = NULL;
                CHECK_EQ(batchfit_device_open(ctx, rerun, &again), BATCHFIT_OK);
                const batchfit_step *step = batchfit_sim_step();
                void *state = NULL;
                char msg[128];
                CHECK_EQ(step->build(NULL, again, &state, msg, sizeof msg), BATCHFIT_FITS);
                for (int k = 0; k < 50; k++) {
                    batchfit_step_report rep;
                    memset(&rep, 0, sizeof rep);
                    CHECK_EQ(step->run(state, r->batch_size, &rep), BATCHFIT_FITS);
                }
                step->release(state);
                batchfit_device_free(again);
            } else {
                CHECK_EQ(rc, BATCHFIT_E_MIN_DOES_NOT_FIT);
            }
            batchfit_result_free(r);
        }
    }
    batchfit_ctx_free(ctx);
}

/* The benchmark's own suite (its first 96 profiles, every family): the
 * model strategy is exact where there is no noise, never unsafe where there
 * is, and takes a median of at most 3 trials. make bench reports all 300. */
TEST(probe_bench_suite_model_targets)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    size_t trials[96];
    for (unsigned i = 0; i < 96; i++) {
        bench_profile p;
        bench_profile_make(20261129, i, &p);
        char spec[1024];
        bench_profile_spec(&p, NULL, spec, sizeof spec);
        batchfit_device *d = NULL;
        CHECK_EQ(batchfit_device_open(ctx, spec, &d), BATCHFIT_OK);
        batchfit_options o;
        batchfit_options_init(&o);
        o.requested_max = 65536;
        batchfit_result *r = NULL;
        CHECK_EQ(batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
        uint64_t budget = r->budget.budget_bytes;
        if (p.noise == 0.0)
            CHECK_EQ(r->batch_size, bench_profile_truth(&p, budget, 65536, 0.0));
        CHECK(bench_profile_peak(&p, r->batch_size, p.noise) <= budget);
        trials[i] = r->trial_count;
        batchfit_result_free(r);
        batchfit_device_free(d);
    }
    qsort(trials, 96, sizeof trials[0], compare_size);
    CHECK(trials[48] <= 3);
    CHECK(trials[95] <= 12);
    batchfit_ctx_free(ctx);
}

TEST(probe_parallel_on_a_sim_device_finds_the_same_size_in_fewer_rounds)
{
    fixture f;
    CHECK(fixture_open(&f, SPEC));
    CHECK_EQ(fixture_probe(&f), BATCHFIT_OK);
    uint64_t serial = f.result->batch_size;
    size_t serial_rounds = f.result->rounds;
    CHECK_EQ(serial_rounds, f.result->trial_count);
    f.opts.parallel = 4;
    CHECK_EQ(fixture_probe(&f), BATCHFIT_OK);
    batchfit_result *r = f.result;
    CHECK_EQ(r->batch_size, serial);
    CHECK(r->rounds < r->trial_count);
    CHECK(r->rounds <= serial_rounds);
    CHECK(r->rounds <= 2);
    /* The step is built once and released once, whatever the rounds. */
    CHECK_EQ(f.step.builds, 2);
    CHECK_EQ(f.step.releases, 2);
    CHECK(device_is_clean(f.dev));
    fixture_close(&f);
}
