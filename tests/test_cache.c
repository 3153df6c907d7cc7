#include "test.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

TEST(cache_store_load_list_clear)
{
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/batchfit-test-%ld-cachelib/a/b", (long)getpid());
    batchfit_cache_entry e;
    memset(&e, 0, sizeof e);
    batchfit_cache_key("device x\ncommand y\n", e.key);
    CHECK_EQ(strlen(e.key), 32);
    char other[40];
    batchfit_cache_key("device x\ncommand z\n", other);
    CHECK(strcmp(e.key, other) != 0);
    e.batch_size = 145;
    e.budget_bytes = 1000;
    e.fit.valid = 1;
    e.fit.intercept_bytes = 1.5;
    e.fit.bytes_per_sample = 2.25;
    e.fit.points = 3;
    snprintf(e.description, sizeof e.description, "cuda:0:\nnewlines flattened");
    char err[512];
    batchfit_cache_entry got;
    CHECK_EQ(batchfit_cache_load(dir, e.key, &got, err, sizeof err), 0);
    CHECK_EQ(batchfit_cache_store(dir, &e, err, sizeof err), BATCHFIT_OK);
    struct stat st;
    CHECK_EQ(stat(dir, &st), 0);
    CHECK_EQ(st.st_mode & 0777, 0700);
    CHECK_EQ(batchfit_cache_load(dir, e.key, &got, err, sizeof err), 1);
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
    CHECK_EQ(batchfit_cache_load(dir, other, &got, err, sizeof err), BATCHFIT_E_PARSE);
    CHECK_CONTAINS(err, "not a batchfit cache file");
    CHECK_EQ(batchfit_cache_load(dir, "../../etc/passwd", &got, err, sizeof err),
             BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_EQ(batchfit_cache_clear(dir, err, sizeof err), 2);
    CHECK_EQ(batchfit_cache_load(dir, e.key, &got, err, sizeof err), 0);
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
    char dir[512], err[256];
    char *saved_dir = getenv("BATCHFIT_CACHE_DIR") ? strdup(getenv("BATCHFIT_CACHE_DIR")) : NULL;
    setenv("BATCHFIT_CACHE_DIR", "/x/explicit", 1);
    setenv("XDG_CACHE_HOME", "/x/xdg", 1);
    CHECK_EQ(batchfit_cache_dir(dir, sizeof dir, err, sizeof err), BATCHFIT_OK);
    CHECK_STR(dir, "/x/explicit");
    unsetenv("BATCHFIT_CACHE_DIR");
    CHECK_EQ(batchfit_cache_dir(dir, sizeof dir, err, sizeof err), BATCHFIT_OK);
    CHECK_STR(dir, "/x/xdg/batchfit");
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/x/home", 1);
    CHECK_EQ(batchfit_cache_dir(dir, sizeof dir, err, sizeof err), BATCHFIT_OK);
    CHECK_STR(dir, "/x/home/.cache/batchfit");
    if (saved_dir) {
        setenv("BATCHFIT_CACHE_DIR", saved_dir, 1);
        free(saved_dir);
    }
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
