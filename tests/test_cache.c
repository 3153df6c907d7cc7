#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

TEST(cache_store_load_list_clear)
{
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/batchfit-test-%ld-cachelib/a/b", (long)getpid());
    batchfit_cache_entry e;
    memset(&e, 0, sizeof e);
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit__cache_key("device x\ncommand y\n", 19, e.key);
    CHECK_EQ(strlen(e.key), 32);
    char other[40];
    batchfit__cache_key("device x\ncommand z\n", 19, other);
    CHECK(strcmp(e.key, other) != 0);
    e.batch_size = 145;
    e.budget_bytes = 1000;
    e.fit.valid = 1;
    e.fit.intercept_bytes = 1.5;
    e.fit.bytes_per_sample = 2.25;
    e.fit.points = 3;
    snprintf(e.description, sizeof e.description, "cuda:0:\nnewlines flattened");
    batchfit_cache_entry got;
    CHECK_EQ(batchfit_cache_load(ctx, dir, e.key, &got), BATCHFIT_E_NOT_FOUND);
    CHECK_EQ(batchfit__cache_store(ctx, dir, &e), BATCHFIT_OK);
    struct stat st;
    CHECK_EQ(stat(dir, &st), 0);
    CHECK_EQ(st.st_mode & 0777, 0700);
    CHECK_EQ(batchfit_cache_load(ctx, dir, e.key, &got), BATCHFIT_OK);
    CHECK_EQ(got.batch_size, 145);
    CHECK_EQ(got.budget_bytes, 1000);
    CHECK(got.fit.valid);
    CHECK_NEAR(got.fit.bytes_per_sample, 2.25, 0);
    CHECK_STR(got.version, BATCHFIT_VERSION_STRING);
    CHECK_STR(got.description, "cuda:0: newlines flattened");
    CHECK(got.created > 0);
    /* A foreign file under an entry's name is reported, not fatal. */
    char path[400];
    snprintf(path, sizeof path, "%s/%s.entry", dir, other);
    FILE *f = fopen(path, "w");
    fputs("{\"not\": \"ours\"}\n", f);
    fclose(f);
    CHECK_EQ(batchfit_cache_load(ctx, dir, other, &got), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "not a batchfit cache file");
    CHECK_EQ(batchfit_cache_load(ctx, dir, "../../etc/passwd", &got),
             BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "invalid key");
    /* A missing directory is named as such, not blamed on a valid key. */
    CHECK_EQ(batchfit_cache_load(ctx, NULL, e.key, &got), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "cache load: no directory given");
    CHECK_EQ(batchfit_cache_load(ctx, dir, e.key, NULL), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "cache load: no entry given");
    size_t n = 0;
    CHECK_EQ(batchfit_cache_clear(ctx, dir, &n), BATCHFIT_OK);
    CHECK_EQ(n, 2);
    CHECK_EQ(batchfit_cache_load(ctx, dir, e.key, &got), BATCHFIT_E_NOT_FOUND);
    batchfit_ctx_free(ctx);
    char lock[300];
    snprintf(lock, sizeof lock, "%s/.lock", dir);
    unlink(lock);
    rmdir(dir);
    snprintf(dir, sizeof dir, "/tmp/batchfit-test-%ld-cachelib/a", (long)getpid());
    rmdir(dir);
    snprintf(dir, sizeof dir, "/tmp/batchfit-test-%ld-cachelib", (long)getpid());
    rmdir(dir);
}

TEST(cache_directory_from_the_environment)
{
    char dir[512];
    batchfit_ctx *ctx = test_ctx(NULL);
    char *saved_dir = getenv("BATCHFIT_CACHE_DIR") ? strdup(getenv("BATCHFIT_CACHE_DIR")) : NULL;
    setenv("BATCHFIT_CACHE_DIR", "/x/explicit", 1);
    setenv("XDG_CACHE_HOME", "/x/xdg", 1);
    CHECK_EQ(batchfit_cache_dir(ctx, dir, sizeof dir), BATCHFIT_OK);
    CHECK_STR(dir, "/x/explicit");
    /* A relative one is refused, not followed from wherever batchfit runs
     * ("~/x" quoted made a directory named "~"). */
    setenv("BATCHFIT_CACHE_DIR", "relcache", 1);
    CHECK_EQ(batchfit_cache_dir(ctx, dir, sizeof dir), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "BATCHFIT_CACHE_DIR (relcache) is relative");
    setenv("BATCHFIT_CACHE_DIR", "~/x", 1);
    CHECK_EQ(batchfit_cache_dir(ctx, dir, sizeof dir), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "(a ~ no shell expanded: use $HOME)");
    unsetenv("BATCHFIT_CACHE_DIR");
    CHECK_EQ(batchfit_cache_dir(ctx, dir, sizeof dir), BATCHFIT_OK);
    CHECK_STR(dir, "/x/xdg/batchfit");
    unsetenv("XDG_CACHE_HOME");
    char *saved_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("HOME", "/tmp", 1);
    CHECK_EQ(batchfit_cache_dir(ctx, dir, sizeof dir), BATCHFIT_OK);
    CHECK_STR(dir, "/tmp/.cache/batchfit");
    /* HOME itself is never made: one that is missing or relative is an
     * error naming it, and nothing is created. */
    static const char *const bad_homes[] = {"/nonexistent/batchfit-test-home", "relative/home",
                                            "/etc/passwd"};
    for (size_t i = 0; i < 3; i++) {
        setenv("HOME", bad_homes[i], 1);
        CHECK_EQ(batchfit_cache_dir(ctx, dir, sizeof dir), BATCHFIT_E_INVALID_ARGUMENT);
        CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "HOME (");
        CHECK_CONTAINS(batchfit_ctx_last_error(ctx), bad_homes[i]);
    }
    CHECK(access("/nonexistent/batchfit-test-home", F_OK) != 0);
    /* A relative XDG_CACHE_HOME is ignored, and the advice to set it says
     * so (it read as if the variable had not been set). */
    setenv("XDG_CACHE_HOME", "rel/cache", 1);
    CHECK_EQ(batchfit_cache_dir(ctx, dir, sizeof dir), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx),
                   "set BATCHFIT_CACHE_DIR or XDG_CACHE_HOME to an absolute path "
                   "(XDG_CACHE_HOME=rel/cache is relative, and ignored)");
    unsetenv("HOME");
    CHECK_EQ(batchfit_cache_dir(ctx, dir, sizeof dir), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "(XDG_CACHE_HOME=rel/cache is relative");
    unsetenv("XDG_CACHE_HOME");
    CHECK_EQ(batchfit_cache_dir(ctx, dir, sizeof dir), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "BATCHFIT_CACHE_DIR");
    if (saved_dir) {
        setenv("BATCHFIT_CACHE_DIR", saved_dir, 1);
        free(saved_dir);
    }
    if (saved_home) {
        setenv("HOME", saved_home, 1);
        free(saved_home);
    }
    batchfit_ctx_free(ctx);
}

/* The key hashes all of its material: two probes that differ only past
 * 100 KB of command text (in a setting at the end) get different keys. */
TEST(cache_key_hashes_the_whole_material)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, "sim:capacity=1GiB", &d), BATCHFIT_OK);
    size_t len = 100 * 1024;
    char *arg = malloc(len + 1);
    CHECK(arg != NULL);
    memset(arg, 'a', len);
    arg[len] = '\0';
    const char *argv[] = {"train", arg, NULL};
    batchfit_options o;
    batchfit_options_init(&o);
    char keys[3][40];
    for (int i = 0; i < 3; i++) {
        o.memory_budget_bytes = i == 1 ? 1000 : 2000;
        o.cache_key = i == 2 ? arg : NULL;
        batchfit__buf b;
        batchfit__buf_init(&b, &ctx->allocator);
        batchfit__cache_material(&b, &o, d, argv, "extra");
        CHECK(batchfit__buf_text(&b) != NULL);
        CHECK(b.len > len);
        batchfit__cache_key(b.data, b.len, keys[i]);
        batchfit__buf_free(&b);
    }
    CHECK(strcmp(keys[0], keys[1]) != 0);
    CHECK(strcmp(keys[0], keys[2]) != 0);
    free(arg);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}

/* Opens the two simulated devices of specs a and b. */
static void open_pair(batchfit_ctx *ctx, const char *spec_a, const char *spec_b,
                      batchfit_device **a, batchfit_device **b)
{
    CHECK_EQ(batchfit_device_open(ctx, spec_a, a), BATCHFIT_OK);
    CHECK_EQ(batchfit_device_open(ctx, spec_b, b), BATCHFIT_OK);
}

/* Empties and removes a test's cache directory, which held entries. */
static void remove_cache_dir(batchfit_ctx *ctx, const char *dir, size_t entries)
{
    size_t removed = 0;
    CHECK_EQ(batchfit_cache_clear(ctx, dir, &removed), BATCHFIT_OK);
    CHECK_EQ(removed, entries);
    char lock[300];
    snprintf(lock, sizeof lock, "%s/.lock", dir);
    unlink(lock);
    rmdir(dir);
}

/* Options that remember results in dir under the caller's key. */
static void cache_options(batchfit_options *o, const char *dir, const char *key)
{
    batchfit_options_init(o);
    o->cache = 1;
    o->cache_dir = dir;
    o->cache_key = key;
}

/* The library's cache for an in-process probe: the first probe stores its
 * answer under its cache_key, the second verifies it in at most two trials;
 * another key is a miss. */
static void count_errors(batchfit_log_level level, const char *message, void *userdata)
{
    (void)message;
    if (level == BATCHFIT_LOG_ERROR)
        ++*(int *)userdata;
}

TEST(cache_in_process_probe_remembers)
{
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/batchfit-test-%ld-cacheprobe", (long)getpid());
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, "sim:capacity=16GiB,fixed=1GiB,per_sample=100MiB", &d),
             BATCHFIT_OK);
    batchfit_options o;
    cache_options(&o, dir, "resnet");
    batchfit_result *r = NULL;
    /* A miss is no failure: no error logged, none left behind the success
     * (each first probe logged "cache: no entry" at the error level). */
    int errors = 0;
    batchfit_ctx_set_log(ctx, count_errors, &errors, BATCHFIT_LOG_DEBUG);
    CHECK_EQ(batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    CHECK(!r->cache_hit);
    CHECK(r->cache_key != NULL);
    CHECK_EQ(errors, 0);
    CHECK_STR(batchfit_ctx_last_error(ctx), "");
    batchfit_ctx_set_log(ctx, NULL, NULL, BATCHFIT_LOG_WARN);
    uint64_t answer = r->batch_size;
    size_t first_trials = r->trial_count;
    batchfit_result_free(r);
    CHECK_EQ(batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    CHECK(r->cache_hit);
    CHECK_EQ(r->cache_remembered, answer);
    CHECK_EQ(r->batch_size, answer);
    CHECK(r->trial_count <= 2);
    CHECK(r->trial_count < first_trials);
    batchfit_result_free(r);
    o.cache_key = "vit";
    CHECK_EQ(batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    CHECK(!r->cache_hit);
    batchfit_result_free(r);
    /* An empty directory is no directory: said, not silently off. */
    o.cache_dir = "";
    CHECK_EQ(batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    CHECK(!r->cache_hit);
    CHECK_EQ(r->warning_count, 1);
    CHECK_STR(r->warnings[0], "cache off: cache_dir is empty (NULL is the default directory)");
    batchfit_result_free(r);
    o.cache_dir = dir;
    remove_cache_dir(ctx, dir, 2);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}

/* A cache directory too long to name (a deep HOME, a runaway variable)
 * turns the cache off with a warning naming where it came from; the probe
 * answers all the same (the cut path had been used as the directory, and
 * the save after it crashed). */
TEST(cache_a_directory_path_too_long_turns_the_cache_off)
{
    size_t n = 5000;
    char *longdir = malloc(n + 1);
    CHECK(longdir != NULL);
    memset(longdir, 'd', n);
    longdir[0] = '/';
    longdir[n] = '\0';
    char *saved = getenv("BATCHFIT_CACHE_DIR") ? strdup(getenv("BATCHFIT_CACHE_DIR")) : NULL;
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, "sim:capacity=16GiB,fixed=1GiB,per_sample=100MiB", &d),
             BATCHFIT_OK);
    for (int via_option = 0; via_option < 2; via_option++) {
        batchfit_options o;
        cache_options(&o, via_option ? longdir : NULL, "resnet");
        setenv("BATCHFIT_CACHE_DIR", longdir, 1);
        batchfit_result *r = NULL;
        CHECK_EQ(batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
        CHECK_EQ(r->batch_size, 145);
        CHECK(!r->cache_hit);
        CHECK(r->cache_key == NULL);
        CHECK_EQ(r->warning_count, 1);
        CHECK_CONTAINS(r->warnings[0], "cache off: cache directory path is too long");
        CHECK_CONTAINS(r->warnings[0], via_option ? "(cache_dir)" : "(BATCHFIT_CACHE_DIR)");
        batchfit_result_free(r);
    }
    if (saved)
        setenv("BATCHFIT_CACHE_DIR", saved, 1);
    else
        unsetenv("BATCHFIT_CACHE_DIR");
    free(saved);
    free(longdir);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}

/* A re-run that verifies the remembered size in one trial has no fit of
 * its own; stored in place of the remembered curve, it left the next probe
 * of a changed program nothing to continue from (it stopped 16 sizes
 * short). The curve stays while it describes what the re-run measured; a
 * changed program's verification fails, and its new curve replaces the
 * old one. */
TEST(cache_a_verifying_rerun_keeps_the_remembered_curve)
{
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/batchfit-test-%ld-cachecurve", (long)getpid());
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *a = NULL, *b = NULL;
    open_pair(ctx, "sim:capacity=16GiB,fixed=1GiB,per_sample=100MiB,granule=2MiB",
              "sim:capacity=16GiB,fixed=1GiB,per_sample=120MiB,granule=2MiB", &a, &b);
    batchfit_options o;
    cache_options(&o, dir, "gpt");
    batchfit_result *r = NULL;
    CHECK_EQ(batchfit_probe(ctx, &o, a, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    batchfit_fit first = r->fit;
    uint64_t answer_a = r->batch_size;
    batchfit_result_free(r);
    CHECK(first.valid);
    CHECK_EQ(batchfit_probe(ctx, &o, a, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    CHECK(r->cache_hit);
    CHECK_EQ(r->trial_count, 1);
    /* The result reports that curve too (its one trial draws no line; two
     * neighbours' noise could tilt one anywhere), and says whose it is. */
    CHECK_EQ(r->fit_remembered, 1);
    CHECK_EQ(r->fit.points, first.points);
    CHECK(r->fit.bytes_per_sample == first.bytes_per_sample);
    const char *json = NULL;
    CHECK_EQ(batchfit_result_json(ctx, r, &json), BATCHFIT_OK);
    CHECK_CONTAINS(json, "\"remembered\": true");
    batchfit_result *back = NULL;
    CHECK_EQ(batchfit_result_from_json(ctx, json, strlen(json), &back), BATCHFIT_OK);
    CHECK_EQ(back->fit_remembered, 1);
    batchfit_result_free(back);
    batchfit_cache_entry e;
    CHECK_EQ(batchfit_cache_load(ctx, dir, r->cache_key, &e), BATCHFIT_OK);
    batchfit_result_free(r);
    CHECK(e.fit.valid);
    CHECK_EQ(e.fit.points, first.points);
    CHECK(e.fit.bytes_per_sample == first.bytes_per_sample);
    CHECK_EQ(e.batch_size, answer_a);

    /* The program changed (a fifth more a sample): its key, remembering a's
     * answer and curve. */
    CHECK_EQ(batchfit_probe(ctx, &o, b, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    uint64_t answer_b = r->batch_size;
    char key_b[40];
    snprintf(key_b, sizeof key_b, "%s", r->cache_key);
    batchfit_result_free(r);
    CHECK(answer_b < answer_a);
    snprintf(e.key, sizeof e.key, "%s", key_b);
    CHECK_EQ(batchfit__cache_store(ctx, dir, &e), BATCHFIT_OK);
    CHECK_EQ(batchfit_probe(ctx, &o, b, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    CHECK(r->cache_hit);
    CHECK_EQ(r->trials[0].batch, answer_a);
    CHECK_EQ(r->batch_size, answer_b);
    CHECK_EQ(r->fit_remembered, 0); /* the changed program's own line */
    batchfit_result_free(r);
    CHECK_EQ(batchfit_cache_load(ctx, dir, key_b, &e), BATCHFIT_OK);
    CHECK(e.fit.valid);
    CHECK(fabs(e.fit.bytes_per_sample - 120.0 * 1048576.0) < 0.01 * 120.0 * 1048576.0);

    remove_cache_dir(ctx, dir, 2);
    batchfit_device_free(a);
    batchfit_device_free(b);
    batchfit_ctx_free(ctx);
}

/* The model strategy verifies a remembered size in two trials, or one when
 * the remembered curve still matches and certifies the next size. */
TEST(cache_verification_in_the_search)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    const char *spec = "sim:capacity=16GiB,fixed=1GiB,per_sample=100MiB,granule=2MiB";
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, spec, &d), BATCHFIT_OK);
    batchfit_options o;
    batchfit_options_init(&o);
    batchfit_result *r = NULL;
    CHECK_EQ(batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    uint64_t answer = r->batch_size;
    batchfit_fit fit = r->fit;
    CHECK_EQ(answer, 145);
    batchfit_result_free(r);

    o.cached_batch = answer;
    CHECK_EQ(batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    CHECK_EQ(r->batch_size, answer);
    CHECK_EQ(r->trial_count, 2);
    CHECK_EQ(r->trials[0].batch, answer);
    CHECK_EQ(r->trials[1].batch, answer + 1);
    batchfit_result_free(r);

    o.cached_fit = fit;
    CHECK_EQ(batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    CHECK_EQ(r->batch_size, answer);
    CHECK_EQ(r->trial_count, 1);
    batchfit_result_free(r);

    /* A stale memory (the model grew): verification fails, the search goes on. */
    o.cached_batch = 200;
    memset(&o.cached_fit, 0, sizeof o.cached_fit);
    CHECK_EQ(batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    CHECK_EQ(r->batch_size, answer);
    CHECK_EQ(r->trials[0].batch, 200);
    CHECK_EQ(r->trials[0].outcome, BATCHFIT_OOM);
    batchfit_result_free(r);
    o.cached_batch = 100;
    CHECK_EQ(batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    CHECK_EQ(r->batch_size, answer);
    batchfit_result_free(r);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}

/* The budget grew (a larger device, the same program): the remembered
 * size fits and the remembered curve, which its peak agrees with, says
 * where the threshold is crossed now. The search goes there, not one size
 * at a time: the answer of a fresh search in at most three trials (the
 * third, the next size, out of memory). */
TEST(cache_remembered_curve_leads_to_a_larger_budget)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *small = NULL, *large = NULL;
    open_pair(ctx, "sim:capacity=16GiB,fixed=1GiB,per_sample=100MiB,granule=2MiB",
              "sim:capacity=20GiB,fixed=1GiB,per_sample=100MiB,granule=2MiB", &small, &large);
    batchfit_options o;
    batchfit_options_init(&o);
    batchfit_result *r = NULL;
    CHECK_EQ(batchfit_probe(ctx, &o, small, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    uint64_t remembered = r->batch_size;
    batchfit_fit fit = r->fit;
    batchfit_result_free(r);
    CHECK_EQ(batchfit_probe(ctx, &o, large, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    uint64_t fresh = r->batch_size;
    batchfit_result_free(r);
    CHECK(fresh > remembered + 30);

    o.cached_batch = remembered;
    o.cached_fit = fit;
    CHECK_EQ(batchfit_probe(ctx, &o, large, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    CHECK_EQ(r->batch_size, fresh);
    CHECK_EQ(r->trials[0].batch, remembered);
    CHECK(r->trials[1].batch > remembered + 30);
    CHECK(r->trial_count <= 3);
    CHECK(r->oom_trials <= 1); /* the next size, which settles it */
    batchfit_result_free(r);
    batchfit_device_free(small);
    batchfit_device_free(large);
    batchfit_ctx_free(ctx);
}

/* Probes d with o on the sim step: *answer (0 on failure) and, where fit
 * is given, the curve the probe fitted. */
static void probe_answer(batchfit_ctx *ctx, const batchfit_options *o, batchfit_device *d,
                         uint64_t *answer, batchfit_fit *fit)
{
    batchfit_result *r = NULL;
    int rc = batchfit_probe(ctx, o, d, batchfit_sim_step(), NULL, &r);
    *answer = r ? r->batch_size : 0;
    if (fit)
        *fit = r ? r->fit : (batchfit_fit){0};
    batchfit_result_free(r);
    CHECK_EQ(rc, BATCHFIT_OK);
}

/* A noisy program (9% trial to trial, 4 MiB a sample on a 1 GiB base)
 * remembered from a 16 GiB device, probed on a 20 GiB one: the readings
 * agree with the remembered curve, which places the new crossing. Each
 * reading lies close to the last (a secant between them is a draw), and
 * before the curve was followed the search crept up from them one size at
 * a time, then doubling: 11 trials on one seed, 7 on another. Now at most
 * 6 on each of twelve seeds, and the answers on average within 7% of
 * bisection's under the same draws (the model aims the noise's standard
 * error below the threshold; bisection keeps whatever draw passed). */
TEST(cache_a_noisy_stale_entry_follows_the_remembered_curve)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    double answers = 0.0, bisected = 0.0;
    for (int seed = 1; seed <= 12; seed++) {
        char small_spec[160], large_spec[160];
        snprintf(small_spec, sizeof small_spec,
                 "sim:capacity=16GiB,fixed=1GiB,per_sample=4MiB,granule=2MiB,noise=9%%,seed=%d",
                 seed);
        snprintf(large_spec, sizeof large_spec,
                 "sim:capacity=20GiB,fixed=1GiB,per_sample=4MiB,granule=2MiB,noise=9%%,seed=%d",
                 seed + 100);
        batchfit_device *small = NULL, *large = NULL;
        open_pair(ctx, small_spec, large_spec, &small, &large);
        batchfit_options o;
        batchfit_options_init(&o);
        batchfit_fit fit;
        uint64_t remembered, bisection;
        probe_answer(ctx, &o, small, &remembered, &fit);
        CHECK(fit.valid);
        o.strategy = BATCHFIT_STRATEGY_BISECT;
        probe_answer(ctx, &o, large, &bisection, NULL);
        bisected += (double)bisection;
        o.strategy = BATCHFIT_STRATEGY_MODEL;
        batchfit_result *r = NULL;
        o.cached_batch = remembered;
        o.cached_fit = fit;
        CHECK_EQ(batchfit_probe(ctx, &o, large, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
        if (r) {
            CHECK_EQ(r->trials[0].batch, remembered);
            CHECK(r->trial_count <= 6);
            CHECK(r->batch_size > remembered);
            answers += (double)r->batch_size;
        }
        batchfit_result_free(r);
        batchfit_device_free(small);
        batchfit_device_free(large);
    }
    CHECK(answers >= 0.93 * bisected);
    batchfit_ctx_free(ctx);
}

/* A smaller device than the one remembered: the remembered size and the
 * first size below it both fail. The remembered line (64 MiB a sample,
 * fitted across a 3 GiB workspace that appears at 20) is steeper than the
 * curve up there; the two failures' needs give the curve's own slope, and
 * the search goes down along it to the answer, not to half of it first
 * (it ran 94 before, a trial that told nothing). */
TEST(cache_two_failures_give_the_slope_below_a_stale_size)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *large = NULL, *small = NULL;
    open_pair(ctx, "sim:capacity=20GiB,fixed=1GiB,per_sample=64MiB,granule=2MiB,jump=20:3GiB",
              "sim:capacity=16GiB,fixed=1GiB,per_sample=64MiB,granule=2MiB,jump=20:3GiB", &large,
              &small);
    batchfit_options o;
    batchfit_options_init(&o);
    batchfit_fit fit;
    uint64_t remembered, fresh;
    probe_answer(ctx, &o, large, &remembered, &fit);
    CHECK(fit.bytes_per_sample > 64.0 * 1048576.0);
    probe_answer(ctx, &o, small, &fresh, NULL);
    batchfit_result *r = NULL;
    o.cached_batch = remembered;
    o.cached_fit = fit;
    CHECK_EQ(batchfit_probe(ctx, &o, small, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    if (r) {
        CHECK_EQ(r->batch_size, fresh);
        CHECK(r->trial_count <= 4);
        for (size_t i = 0; i < r->trial_count; i++)
            CHECK(r->trials[i].batch >= fresh);
    }
    batchfit_result_free(r);
    batchfit_device_free(large);
    batchfit_device_free(small);
    batchfit_ctx_free(ctx);
}

/* Writes text as the entry of key in dir. */
static void plant(const char *dir, const char *key, const char *text)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s.entry", dir, key);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Absurd contents are damage, not hints: a size of 10^18 or -5, a fit of
 * nan, inf or -1e308, a negative creation time. */
TEST(cache_absurd_fields_are_damage)
{
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/batchfit-test-%ld-absurd", (long)getpid());
    mkdir(dir, 0700);
    batchfit_ctx *ctx = test_ctx(NULL);
    const char *key = "0123456789abcdef0123456789abcdef";
    static const char *const bodies[] = {
        "batch_size 1000000000000000000\n",
        "batch_size -5\n",
        "batch_size 12abc\n",
        "batch_size 64\nfit nan 1 1 3\n",
        "batch_size 64\nfit 1 inf 1 3\n",
        "batch_size 64\nfit -1e308 1 1 3\n",
        "batch_size 64\nfit 1 -5 1 3\n",
        "batch_size 64\nfit 1 5 1 1\n",
        "batch_size 64\ncreated -7\n",
        "batch_size 64\nbudget_bytes 99999999999999999999999\n",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "batchfit-cache 1\nkey %s\n%s", key, bodies[i]);
        plant(dir, key, text);
        batchfit_cache_entry e;
        CHECK_EQ(batchfit_cache_load(ctx, dir, key, &e), BATCHFIT_E_PARSE);
        CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "damaged");
    }
    char text[512];
    snprintf(text, sizeof text,
             "batchfit-cache 1\nkey %s\nbatch_size 64\nbudget_bytes 1000\nfit 1e6 2e5 10 3\n"
             "created 5\n",
             key);
    plant(dir, key, text);
    batchfit_cache_entry e;
    CHECK_EQ(batchfit_cache_load(ctx, dir, key, &e), BATCHFIT_OK);
    CHECK_EQ(e.batch_size, 64);
    CHECK(e.fit.valid);
    /* What the cache stores it reads back: a probe of memory that does not
     * grow fits a slope of noise a few bytes below 0, and its entry was
     * stored with it, then read as damaged and searched again. */
    e.fit.bytes_per_sample = -34.83;
    e.fit.points = 4;
    CHECK_EQ(batchfit__cache_store(ctx, dir, &e), BATCHFIT_OK);
    batchfit_cache_entry back;
    CHECK_EQ(batchfit_cache_load(ctx, dir, key, &back), BATCHFIT_OK);
    CHECK_EQ(back.batch_size, 64);
    CHECK(!back.fit.valid);
    size_t n = 0;
    CHECK_EQ(batchfit_cache_clear(ctx, dir, &n), BATCHFIT_OK);
    CHECK_EQ(n, 1);
    char lock[300];
    snprintf(lock, sizeof lock, "%s/.lock", dir);
    unlink(lock);
    rmdir(dir);
    batchfit_ctx_free(ctx);
}

/* A cache directory others may write in is refused (another user could
 * plant links at the names we open); in our own directory no link is
 * followed: a link planted at .lock is neither followed nor written
 * through. */
TEST(cache_untrusted_directory_and_planted_links)
{
    char dir[256], victim[300], lock[300];
    snprintf(dir, sizeof dir, "/tmp/batchfit-test-%ld-shared-cache", (long)getpid());
    snprintf(victim, sizeof victim, "/tmp/batchfit-test-%ld-victim", (long)getpid());
    snprintf(lock, sizeof lock, "%s/.lock", dir);
    mkdir(dir, 0700);
    CHECK_EQ(chmod(dir, 0777), 0);
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_cache_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.key, sizeof e.key, "0123456789abcdef0123456789abcdef");
    e.batch_size = 8;
    CHECK_EQ(batchfit__cache_store(ctx, dir, &e), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "writable by others");
    CHECK_EQ(batchfit_cache_load(ctx, dir, e.key, &e), BATCHFIT_E_INVALID_ARGUMENT);
    /* A missing callback is named as such (it was "no directory given"). */
    CHECK_EQ(batchfit_cache_list(ctx, dir, NULL, NULL, NULL), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "cache list: no callback given");
    /* The probe says why the cache is off and goes on without it. */
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, "sim:capacity=16GiB,fixed=1GiB,per_sample=100MiB", &d),
             BATCHFIT_OK);
    batchfit_options o;
    batchfit_options_init(&o);
    o.cache = 1;
    o.cache_dir = dir;
    o.cache_key = "model";
    batchfit_result *r = NULL;
    CHECK_EQ(batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &r), BATCHFIT_OK);
    CHECK_EQ(r->warning_count, 1);
    CHECK_CONTAINS(r->warnings[0], "the cache is off");
    batchfit_result_free(r);
    CHECK_EQ(chmod(dir, 0700), 0);
    /* Ours again, with a link planted at .lock: stored, the victim untouched. */
    unlink(victim);
    CHECK_EQ(symlink(victim, lock), 0);
    e.batch_size = 8;
    snprintf(e.key, sizeof e.key, "0123456789abcdef0123456789abcdef");
    CHECK_EQ(batchfit__cache_store(ctx, dir, &e), BATCHFIT_OK);
    CHECK(access(victim, F_OK) != 0);
    /* A FIFO, or a link, in an entry's place: reported and ignored, never
     * waited on (a FIFO held the probe and cache list for ever). */
    char entry[400];
    snprintf(entry, sizeof entry, "%s/%s.entry", dir, e.key);
    for (int link = 0; link < 2; link++) {
        unlink(entry);
        CHECK_EQ(link ? symlink(victim, entry) : mkfifo(entry, 0600), 0);
        CHECK_EQ(batchfit_cache_load(ctx, dir, e.key, &e), BATCHFIT_E_PARSE);
        CHECK_CONTAINS(batchfit_ctx_last_error(ctx),
                       link ? "a symbolic link, which the cache does not follow"
                            : "is not a regular file; ignoring it");
    }
    unlink(entry);
    e.batch_size = 8;
    CHECK_EQ(batchfit__cache_store(ctx, dir, &e), BATCHFIT_OK);
    size_t n = 0;
    CHECK_EQ(batchfit_cache_clear(ctx, dir, &n), BATCHFIT_OK);
    CHECK_EQ(n, 1);
    unlink(lock);
    rmdir(dir);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}
