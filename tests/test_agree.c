/* batchfit_agree over a scripted all-gather: the other ranks' records are
 * what real ranks would have sent (their results, agreed through the same
 * code), so the verdict can be checked rank by rank. */
#include "test.h"

#include <pthread.h>
#include <stdlib.h>

/* A job of threads: each calls batchfit_agree with its own result, and the
 * all-gather is a shared table between two barriers, as MPI_Allgather is
 * between processes. */
typedef struct thread_job {
    int size;
    pthread_barrier_t barrier;
    char table[8][1024];
    int fail;
    int calls;
} thread_job;

static int thread_gather(void *userdata, const void *mine, void *all, size_t len, int rank)
{
    thread_job *job = userdata;
    if (len > sizeof job->table[0])
        return -1;
    memcpy(job->table[rank], mine, len);
    __atomic_add_fetch(&job->calls, 1, __ATOMIC_SEQ_CST);
    pthread_barrier_wait(&job->barrier);
    for (int r = 0; r < job->size; r++)
        memcpy((char *)all + (size_t)r * len, job->table[r], len);
    pthread_barrier_wait(&job->barrier);
    return job->fail ? -1 : 0;
}

typedef struct member {
    thread_job *job;
    int rank;
    batchfit_agree_mode mode;
    batchfit_result *result;
    int rc;
} member;

#define GATHER_FOR(R)                                                                  \
    static int gather_##R(void *u, const void *m, void *a, size_t l)                   \
    {                                                                                  \
        return thread_gather(u, m, a, l, R);                                           \
    }
GATHER_FOR(0)
GATHER_FOR(1)
GATHER_FOR(2)

static void *member_main(void *arg)
{
    member *m = arg;
    static int (*const gathers[])(void *, const void *, void *, size_t) = {gather_0, gather_1,
                                                                         gather_2};
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_ranks ranks = {sizeof ranks, m->rank, m->job->size, gathers[m->rank], m->job};
    m->rc = batchfit_agree(ctx, &ranks, m->mode, m->result);
    batchfit_ctx_free(ctx);
    return NULL;
}

/* Runs the three members' agreement at once, each in its own mode. */
static void agree_each(thread_job *job, member *members)
{
    pthread_t threads[3];
    job->calls = 0;
    pthread_barrier_init(&job->barrier, NULL, 3);
    for (int i = 0; i < 3; i++) {
        members[i].job = job;
        members[i].rank = i;
        pthread_create(&threads[i], NULL, member_main, &members[i]);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&job->barrier);
}

/* The same, all in one mode. */
static void agree_all(thread_job *job, member *members, batchfit_agree_mode mode)
{
    for (int i = 0; i < 3; i++)
        members[i].mode = mode;
    agree_each(job, members);
}

static batchfit_result *probe_sim(batchfit_ctx *ctx, const char *spec)
{
    batchfit_device *d = NULL;
    batchfit_result *r = NULL;
    batchfit_options o;
    batchfit_options_init(&o);
    if (batchfit_device_open(ctx, spec, &d) == BATCHFIT_OK)
        batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &r);
    batchfit_device_free(d);
    return r;
}

TEST(agree_min_per_rank_and_the_failed_rank)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    member m[3];
    memset(m, 0, sizeof m);
    m[0].result = probe_sim(ctx, "sim:capacity=16GiB,fixed=1GiB,per_sample=100MiB");
    m[1].result = probe_sim(ctx, "sim:capacity=12GiB,fixed=1GiB,per_sample=100MiB");
    m[2].result = probe_sim(ctx, "sim:capacity=8GiB,fixed=1GiB,per_sample=100MiB");
    CHECK(m[0].result && m[1].result && m[2].result);
    CHECK_EQ(m[0].result->batch_size, 145);
    CHECK_EQ(m[2].result->batch_size, 67);
    thread_job job;
    memset(&job, 0, sizeof job);
    job.size = 3;
    agree_all(&job, m, BATCHFIT_AGREE_MIN);
    CHECK_EQ(job.calls, 3);
    for (int i = 0; i < 3; i++) {
        const batchfit_result *r = m[i].result;
        CHECK_EQ(m[i].rc, BATCHFIT_OK);
        CHECK(r->agreed);
        CHECK_EQ(r->agreed_status, BATCHFIT_OK);
        CHECK_EQ(r->agreed_batch_size, 67);
        CHECK_EQ(r->rank_count, 3);
        for (int k = 0; k < 3; k++) {
            CHECK_EQ(r->rank_outcomes[k].rank, k);
            CHECK_EQ(r->rank_outcomes[k].batch_size, m[k].result->batch_size);
        }
    }
    CHECK_STR(m[1].result->rank_outcomes[2].device_spec,
              "sim:capacity=8GiB,fixed=1GiB,per_sample=100MiB");
    const char *json = NULL;
    CHECK_EQ(batchfit_result_json(ctx, m[0].result, &json), BATCHFIT_OK);
    CHECK_CONTAINS(json, "\"agreement\": {");
    CHECK_CONTAINS(json, "\"mode\": \"min\"");
    agree_all(&job, m, BATCHFIT_AGREE_PER_RANK);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(m[i].result->agreed_batch_size, m[i].result->batch_size);

    /* A rank that asks for its own answer where rank 0 asks for the
     * smallest would train with a size the others did not expect: the job
     * fails as that rank, the same on every rank, even where one failed. */
    m[0].mode = m[1].mode = BATCHFIT_AGREE_MIN;
    m[2].mode = BATCHFIT_AGREE_PER_RANK;
    agree_each(&job, m);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(m[i].rc, BATCHFIT_OK);
        CHECK_EQ(m[i].result->agreed_status, BATCHFIT_E_INVALID_ARGUMENT);
        CHECK_EQ(m[i].result->agreed_batch_size, 0);
        CHECK_STR(m[i].result->agreed_error,
                  "rank 2 (sim:capacity=8GiB,fixed=1GiB,per_sample=100MiB): it asks the ranks to "
                  "agree on each rank's own answer (per-rank), rank 0 on the smallest answer "
                  "(min); every rank must ask the same");
    }
    CHECK_EQ(batchfit_exit_status(m[0].result->agreed_status), 2);

    /* A rank stopped by a peer (ABORTED) is not the cause; the rank that
     * failed on its own is, on every rank. */
    batchfit_result_free(m[0].result);
    batchfit_result_free(m[2].result);
    CHECK_EQ(batchfit_result_failed(ctx, BATCHFIT_E_ABORTED, "stopped", &m[0].result), BATCHFIT_OK);
    CHECK_EQ(batchfit_result_failed(ctx, BATCHFIT_E_MIN_DOES_NOT_FIT,
                                    "even the minimum does not fit", &m[2].result),
             BATCHFIT_OK);
    agree_all(&job, m, BATCHFIT_AGREE_MIN);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(m[i].rc, BATCHFIT_OK);
        CHECK_EQ(m[i].result->agreed_status, BATCHFIT_E_MIN_DOES_NOT_FIT);
        CHECK_CONTAINS(m[i].result->agreed_error, "rank 2");
        CHECK_CONTAINS(m[i].result->agreed_error, "even the minimum does not fit");
    }

    /* Among ranks that were stopped, the one its own interrupt stopped is
     * the cause, not those its failure stopped. */
    batchfit_result_free(m[2].result);
    CHECK_EQ(batchfit_result_failed(ctx, BATCHFIT_E_ABORTED, "interrupted", &m[2].result),
             BATCHFIT_OK);
    m[2].result->interrupted = 1;
    batchfit_result_free(m[1].result);
    CHECK_EQ(batchfit_result_failed(ctx, BATCHFIT_E_ABORTED, "stopped", &m[1].result),
             BATCHFIT_OK);
    agree_all(&job, m, BATCHFIT_AGREE_MIN);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(m[i].result->agreed_status, BATCHFIT_E_ABORTED);
        CHECK_STR(m[i].result->agreed_error, "rank 2 (no device): interrupted");
    }

    /* A failed exchange is the agreement's own error. */
    job.fail = 1;
    agree_all(&job, m, BATCHFIT_AGREE_MIN);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(m[i].rc, BATCHFIT_E_DEVICE);
    for (int i = 0; i < 3; i++)
        batchfit_result_free(m[i].result);
    batchfit_ctx_free(ctx);
}

/* A gather that must never be called. */
static int never_gather(void *u, const void *m, void *a, size_t l)
{
    (void)m;
    (void)a;
    (void)l;
    ++*(int *)u;
    return -1;
}

/* Out of memory before the exchange: the rank does not call the
 * all-gather (its caller must end the job) and leaks nothing. */
TEST(agree_out_of_memory_takes_no_part)
{
    test_alloc_state st = {0, -1, 0, 0};
    batchfit_ctx *ctx = test_ctx(&st);
    batchfit_result *r = NULL;
    CHECK_EQ(batchfit_result_failed(ctx, BATCHFIT_E_ABORTED, "stopped", &r), BATCHFIT_OK);
    int calls = 0;
    batchfit_ranks ranks = {sizeof ranks, 0, 2, never_gather, &calls};
    st.fail_at = st.calls;
    CHECK_EQ(batchfit_agree(ctx, &ranks, BATCHFIT_AGREE_MIN, r), BATCHFIT_E_NO_MEMORY);
    CHECK_EQ(calls, 0);
    st.fail_at = -1;
    batchfit_result_free(r);
    batchfit_ctx_free(ctx);
    CHECK_EQ(st.outstanding, 0);
    batchfit_ranks bad = {sizeof bad, 2, 2, never_gather, &calls};
    ctx = test_ctx(NULL);
    CHECK_EQ(batchfit_agree(ctx, &bad, BATCHFIT_AGREE_MIN, NULL), BATCHFIT_E_INVALID_ARGUMENT);
    batchfit_ctx_free(ctx);
}
