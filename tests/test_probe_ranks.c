/* Trials across ranks (batchfit_options.ranks) with threads standing in
 * for ranks: each thread probes its own sim device, and the all-gather is
 * a shared table between two barriers, as MPI_Allgather is between
 * processes. */
#include "test.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define RANKS 4
#define SIM16 "sim:capacity=16GiB,fixed=1GiB,per_sample=100MiB"

typedef struct thread_job {
    int size;
    pthread_barrier_t barrier;
    char *table; /* size rows of ROW bytes */
    int calls;
} thread_job;

enum { ROW = 16384 };

typedef struct member {
    thread_job *job;
    int rank;
    const char *spec;
    int fail_trials;   /* the step's trials fail with an error that is not OOM */
    int refuse;        /* the rank does not probe: batchfit_ranks_refuse */
    int bad_lattice;   /* the rank's options name no lattice */
    int rc;
    batchfit_result *result;
    char error[512];
} member;

static int thread_gather(thread_job *job, int rank, const void *mine, void *all, size_t len)
{
    if (len > ROW)
        return -1;
    memcpy(job->table + (size_t)rank * ROW, mine, len);
    __atomic_add_fetch(&job->calls, 1, __ATOMIC_SEQ_CST);
    pthread_barrier_wait(&job->barrier);
    for (int r = 0; r < job->size; r++)
        memcpy((char *)all + (size_t)r * len, job->table + (size_t)r * ROW, len);
    pthread_barrier_wait(&job->barrier);
    return 0;
}

static int gather(void *userdata, const void *mine, void *all, size_t len)
{
    member *m = userdata;
    return thread_gather(m->job, m->rank, mine, all, len);
}

/* The sim device's step, whose trials fail with a bug where asked. */
static batchfit_outcome failing_build(void *userdata, batchfit_device *device, void **state,
                                      char *msg, size_t msg_len)
{
    (void)userdata;
    return batchfit_sim_step()->build(NULL, device, state, msg, msg_len);
}

static batchfit_outcome failing_run(void *state, uint64_t batch, batchfit_step_report *report)
{
    (void)state;
    (void)batch;
    snprintf(report->message, sizeof report->message, "a bug in the step");
    return BATCHFIT_ERROR;
}

static void failing_release(void *state)
{
    batchfit_sim_step()->release(state);
}

/* The sim device's step, every trial of which fails with a bug. */
static batchfit_step failing_step(void)
{
    batchfit_step failing = *batchfit_sim_step();
    failing.build = failing_build;
    failing.run = failing_run;
    failing.release = failing_release;
    return failing;
}

static void *member_main(void *arg)
{
    member *m = arg;
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_ranks ranks = {sizeof ranks, m->rank, m->job->size, gather, m};
    if (m->refuse) {
        m->rc = batchfit_ranks_refuse(ctx, &ranks, BATCHFIT_E_PARSE, "bad hyperparameters");
    } else {
        batchfit_options o;
        batchfit_options_init(&o);
        o.parallel = RANKS;
        o.ranks = &ranks;
        if (m->bad_lattice)
            o.lattice = (batchfit_lattice_kind)7;
        batchfit_step failing = failing_step();
        batchfit_device *d = NULL;
        if (batchfit_device_open(ctx, m->spec, &d) == BATCHFIT_OK)
            m->rc = batchfit_probe(ctx, &o, d, m->fail_trials ? &failing : batchfit_sim_step(),
                                   NULL, &m->result);
        batchfit_device_free(d);
    }
    snprintf(m->error, sizeof m->error, "%s", batchfit_ctx_last_error(ctx));
    batchfit_ctx_free(ctx);
    return NULL;
}

/* Runs RANKS members at once; specs[i] is rank i's device. */
static void run_job(thread_job *job, member *m)
{
    pthread_t threads[RANKS];
    job->size = RANKS;
    job->calls = 0;
    job->table = calloc(RANKS, ROW);
    pthread_barrier_init(&job->barrier, NULL, RANKS);
    for (int i = 0; i < RANKS; i++) {
        m[i].job = job;
        m[i].rank = i;
        if (!m[i].spec)
            m[i].spec = SIM16;
        pthread_create(&threads[i], NULL, member_main, &m[i]);
    }
    for (int i = 0; i < RANKS; i++)
        pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&job->barrier);
    free(job->table);
}

static void free_members(member *m)
{
    for (int i = 0; i < RANKS; i++)
        batchfit_result_free(m[i].result);
}

/* Four identical ranks find the one-device answer (145 on this profile) in
 * fewer rounds than trials, every rank running trials and learning it. */
TEST(probe_ranks_share_the_rounds_and_agree_on_the_answer)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = NULL;
    batchfit_result *solo = NULL;
    batchfit_options o;
    batchfit_options_init(&o);
    CHECK_EQ(batchfit_device_open(ctx, SIM16, &d), BATCHFIT_OK);
    CHECK_EQ(batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &solo), BATCHFIT_OK);
    CHECK_EQ(solo->batch_size, 145);
    batchfit_result_free(solo);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);

    thread_job job;
    member m[RANKS];
    memset(m, 0, sizeof m);
    run_job(&job, m);
    const batchfit_result *r0 = m[0].result;
    for (int i = 0; i < RANKS; i++) {
        CHECK_EQ(m[i].rc, BATCHFIT_OK);
        CHECK_EQ(m[i].result->batch_size, 145);
        CHECK_EQ(m[i].result->rounds, r0->rounds);
    }
    CHECK(r0->rounds >= 1 && r0->rounds < r0->trial_count);
    CHECK(r0->trial_ranks != NULL);
    int ran[RANKS] = {0};
    for (size_t t = 0; t < r0->trial_count; t++) {
        CHECK(r0->trial_ranks[t] >= 0 && r0->trial_ranks[t] < RANKS);
        ran[r0->trial_ranks[t]]++;
    }
    for (int i = 0; i < RANKS; i++)
        CHECK(ran[i] >= 1);
    /* The first round: rank i ran the i-th size. */
    for (int i = 0; i < RANKS; i++)
        CHECK_EQ(r0->trial_ranks[i], i);
    /* Only rank 0 searched: the others hold the answer, not the trials. */
    CHECK_EQ(m[1].result->trial_count, 0);
    ctx = test_ctx(NULL);
    const char *json = NULL;
    CHECK_EQ(batchfit_result_json(ctx, r0, &json), BATCHFIT_OK);
    CHECK_CONTAINS(json, "\"rank\": 3");
    /* The JSON reads back with every trial's rank. */
    batchfit_result *back = NULL;
    CHECK_EQ(batchfit_result_from_json(ctx, json, strlen(json), &back), BATCHFIT_OK);
    CHECK_EQ(back->trial_count, r0->trial_count);
    CHECK(back->trial_ranks != NULL);
    for (size_t t = 0; back->trial_ranks && t < r0->trial_count; t++)
        CHECK_EQ(back->trial_ranks[t], r0->trial_ranks[t]);
    batchfit_result_free(back);
    batchfit_ctx_free(ctx);
    free_members(m);
}

/* Devices that differ are bad input on every rank, naming the rank. */
TEST(probe_ranks_refuse_devices_that_differ)
{
    thread_job job;
    member m[RANKS];
    memset(m, 0, sizeof m);
    m[2].spec = "sim:capacity=12GiB,fixed=1GiB,per_sample=100MiB";
    run_job(&job, m);
    for (int i = 0; i < RANKS; i++) {
        CHECK_EQ(m[i].rc, BATCHFIT_E_INVALID_ARGUMENT);
        CHECK_CONTAINS(m[i].error, "need identical devices");
        CHECK_CONTAINS(m[i].error, "rank 2 (sim:capacity=12GiB");
        CHECK_EQ(m[i].result->trial_count, 0);
    }
    /* One exchange each, and no trial. */
    CHECK_EQ(job.calls, RANKS);
    free_members(m);
}

/* Rank refused ended with code, before any trial; every other rank stopped
 * with ABORTED naming it (said), after one exchange each. */
static void refused_before_any_trial(const thread_job *job, const member *m, int refused, int code,
                                     const char *said)
{
    CHECK_EQ(m[refused].rc, code);
    CHECK_CONTAINS(said, m[refused].error);
    for (int i = 0; i < RANKS; i++) {
        if (i == refused)
            continue;
        CHECK_EQ(m[i].rc, BATCHFIT_E_ABORTED);
        CHECK_CONTAINS(m[i].error, said);
        CHECK(m[i].result != NULL);
        if (m[i].result)
            CHECK_EQ(m[i].result->trial_count, 0);
    }
    CHECK_EQ(job->calls, RANKS);
}

/* A rank whose trial fails with a bug ends with that error; the others
 * stop with ABORTED naming it. A rank that refuses to probe stops the
 * others before any trial. */
TEST(probe_ranks_a_failing_rank_stops_every_rank)
{
    thread_job job;
    member m[RANKS];
    memset(m, 0, sizeof m);
    m[3].fail_trials = 1;
    run_job(&job, m);
    CHECK_EQ(m[3].rc, BATCHFIT_E_TRIAL_ERROR);
    CHECK_CONTAINS(m[3].error, "a bug in the step");
    /* Rank 3 keeps its failed trial, to report it. */
    CHECK_EQ(m[3].result->trial_count, 1);
    CHECK_STR(m[3].result->trials[0].message, "a bug in the step");
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(m[i].rc, BATCHFIT_E_ABORTED);
        CHECK_CONTAINS(m[i].error, "rank 3 (" SIM16 ") failed");
        CHECK_CONTAINS(m[i].error, "a bug in the step");
    }
    /* Rank 0's result holds the round, the failed trial last, by rank 3. */
    const batchfit_result *r0 = m[0].result;
    CHECK_EQ(r0->trial_count, 4);
    CHECK_EQ(r0->trials[3].outcome, BATCHFIT_ERROR);
    CHECK_EQ(r0->trial_ranks[3], 3);
    free_members(m);

    memset(m, 0, sizeof m);
    m[1].refuse = 1;
    run_job(&job, m);
    refused_before_any_trial(&job, m, 1, BATCHFIT_E_PARSE,
                             "rank 1 (no device) failed: bad hyperparameters");
    free_members(m);

    /* Options the library refuses on one rank (no such lattice): that rank
     * joins the first exchange too (it returned at once, and the others
     * waited there for ever). */
    memset(m, 0, sizeof m);
    m[2].bad_lattice = 1;
    run_job(&job, m);
    refused_before_any_trial(&job, m, 2, BATCHFIT_E_INVALID_ARGUMENT,
                             "rank 2 (no device) failed: options: unknown lattice 7");
    free_members(m);
}

/* A peer that answers every exchange with this rank's own record: rank 0's
 * identical twin, for sweeping rank 0's path in one thread. */
static int echo_gather(void *userdata, const void *mine, void *all, size_t len)
{
    int *calls = userdata;
    ++*calls;
    memcpy(all, mine, len);
    memcpy((char *)all + len, mine, len);
    return 0;
}

/* Every allocation failure on rank 0's path across ranks ends cleanly:
 * a code, no leak, no crash. */
TEST(probe_ranks_every_allocation_failure_is_clean)
{
    long total = -1;
    for (long i = -1; i < total || total < 0; i++) {
        test_alloc_state st = {0, -1, 0, 0};
        batchfit_ctx *ctx = test_ctx(&st);
        batchfit_device *d = NULL;
        CHECK_EQ(batchfit_device_open(ctx, SIM16, &d), BATCHFIT_OK);
        int calls = 0;
        batchfit_ranks ranks = {sizeof ranks, 0, 2, echo_gather, &calls};
        batchfit_options o;
        batchfit_options_init(&o);
        o.parallel = 2;
        o.ranks = &ranks;
        o.max_trials = 6;
        long base = st.calls;
        if (i >= 0)
            st.fail_at = base + i;
        batchfit_result *r = NULL;
        int rc = batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &r);
        if (i < 0) {
            /* The twin ran every size rank 0 ran: the exchanges happened. */
            CHECK(calls >= 3);
            CHECK(r && r->trial_count >= 2 && r->rounds >= 1);
            total = st.calls - base;
        } else {
            /* It fails only where an allocation did (building the sim
             * step reports that as the step's failure). */
            CHECK(rc == BATCHFIT_OK || st.failures > 0);
            CHECK(!r || r->status == rc);
        }
        batchfit_result_free(r);
        batchfit_device_free(d);
        batchfit_ctx_free(ctx);
        CHECK_EQ(st.outstanding, 0);
    }
    /* The result, the exchanges' buffers, the trials and their ranks. */
    CHECK(total >= 5);
}

/* Ranks options that cannot be used are bad input, found before any
 * exchange (no all-gather to call, a rank outside the job). */
TEST(probe_ranks_unusable_ranks_are_refused_before_any_exchange)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, SIM16, &d), BATCHFIT_OK);
    int calls = 0;
    batchfit_ranks bad[3] = {{sizeof bad[0], 0, 2, NULL, &calls},
                             {sizeof bad[0], 2, 2, echo_gather, &calls},
                             {sizeof bad[0], -1, 2, echo_gather, &calls}};
    for (int i = 0; i < 3; i++) {
        batchfit_options o;
        batchfit_options_init(&o);
        o.parallel = 2;
        o.ranks = &bad[i];
        batchfit_result *r = NULL;
        CHECK_EQ(batchfit_probe(ctx, &o, d, batchfit_sim_step(), NULL, &r), BATCHFIT_E_INVALID_ARGUMENT);
        CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "options: ranks needs");
        CHECK(r == NULL || r->trial_count == 0);
        batchfit_result_free(r);
        CHECK_EQ(batchfit_ranks_refuse(ctx, &bad[i], BATCHFIT_E_PARSE, "x"),
                 BATCHFIT_E_INVALID_ARGUMENT);
    }
    CHECK_EQ(calls, 0);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}

/* Two ranks whose all-gather gives up after a while instead of waiting
 * forever: a rank left waiting for a peer that went its own way is a
 * failure of the test, not a hang. */
typedef struct timed_job {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned long arrived[2]; /* exchanges each rank entered */
    char row[2][ROW];
    size_t len[2];
    int timed_out;
    int mismatched;
    int aborted; /* a rank that could not take part ended the job */
} timed_job;

typedef struct timed_member {
    timed_job *job;
    int rank;
    test_alloc_state alloc;
    long fail_after_open; /* rank 1: the allocation after its device's that fails; -1 none */
    int rc;
    int joined;
} timed_member;

static int timed_gather(void *userdata, const void *mine, void *all, size_t len)
{
    timed_member *m = userdata;
    timed_job *job = m->job;
    if (len > ROW)
        return -1;
    pthread_mutex_lock(&job->lock);
    unsigned long round = job->arrived[m->rank];
    /* Wait until the other rank finished the previous exchange. */
    memcpy(job->row[m->rank], mine, len);
    job->len[m->rank] = len;
    job->arrived[m->rank]++;
    pthread_cond_broadcast(&job->cond);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    int other = 1 - m->rank;
    int rc = 0;
    while (job->arrived[other] <= round && rc == 0 && !job->aborted)
        rc = pthread_cond_timedwait(&job->cond, &job->lock, &until);
    if (rc || job->aborted) {
        job->timed_out |= rc != 0;
        pthread_mutex_unlock(&job->lock);
        return -1;
    }
    if (job->len[other] != len)
        job->mismatched = 1;
    memcpy((char *)all + (size_t)m->rank * len, mine, len);
    memcpy((char *)all + (size_t)other * len, job->row[other], len < job->len[other] ? len : job->len[other]);
    /* Both copied before either writes the next exchange. */
    job->arrived[m->rank]++;
    pthread_cond_broadcast(&job->cond);
    while (job->arrived[other] <= round + 1 && rc == 0 && !job->aborted)
        rc = pthread_cond_timedwait(&job->cond, &job->lock, &until);
    if (rc)
        job->timed_out = 1;
    pthread_mutex_unlock(&job->lock);
    return rc || job->aborted ? -1 : 0;
}

static void *timed_main(void *arg)
{
    timed_member *m = arg;
    batchfit_ctx *ctx = test_ctx(m->rank == 1 ? &m->alloc : NULL);
    batchfit_ranks ranks = {sizeof ranks, m->rank, 2, timed_gather, m};
    batchfit_options o;
    batchfit_options_init(&o);
    o.parallel = 2;
    o.ranks = &ranks;
    batchfit_step failing = failing_step();
    batchfit_device *d = NULL;
    batchfit_result *r = NULL;
    m->rc = BATCHFIT_E_NO_MEMORY;
    if (batchfit_device_open(ctx, SIM16, &d) == BATCHFIT_OK) {
        if (m->rank == 1 && m->fail_after_open >= 0)
            m->alloc.fail_at = m->alloc.calls + m->fail_after_open;
        m->rc = batchfit_probe(ctx, &o, d, m->rank == 1 ? &failing : batchfit_sim_step(), NULL,
                               &r);
    }
    m->joined = r && r->ranks_joined;
    if (m->rc == BATCHFIT_E_NO_MEMORY && !m->joined) {
        /* What the header asks of the caller: abort the job. */
        pthread_mutex_lock(&m->job->lock);
        m->job->aborted = 1;
        pthread_cond_broadcast(&m->job->cond);
        pthread_mutex_unlock(&m->job->lock);
    }
    batchfit_result_free(r);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
    return NULL;
}

/* Rank 1's trial fails with a bug, and each of its allocations in turn
 * fails: wherever that happens, both ranks make the same exchanges and
 * end (rank 1 with a code; if it could not take part at all, with
 * BATCHFIT_E_NO_MEMORY and no ranks_joined, which tells its caller to
 * abort the job - the one case where rank 0 is left waiting). */
TEST(probe_ranks_a_rank_out_of_memory_never_leaves_its_peer_waiting)
{
    long total = -1;
    for (long i = -1; i < total || total < 0; i++) {
        timed_job job;
        memset(&job, 0, sizeof job);
        pthread_mutex_init(&job.lock, NULL);
        pthread_cond_init(&job.cond, NULL);
        timed_member m[2];
        memset(m, 0, sizeof m);
        m[1].alloc.fail_at = -1;
        m[1].fail_after_open = i;
        pthread_t threads[2];
        for (int k = 0; k < 2; k++) {
            m[k].job = &job;
            m[k].rank = k;
            pthread_create(&threads[k], NULL, timed_main, &m[k]);
        }
        for (int k = 0; k < 2; k++)
            pthread_join(threads[k], NULL);
        if (i < 0) {
            total = m[1].alloc.calls;
            CHECK_EQ(m[1].rc, BATCHFIT_E_TRIAL_ERROR);
            CHECK_EQ(m[0].rc, BATCHFIT_E_ABORTED);
        }
        CHECK(!job.timed_out);
        if (!job.aborted) {
            CHECK(!job.timed_out);
            CHECK(!job.mismatched);
            CHECK_EQ(job.arrived[0], job.arrived[1]);
            CHECK(m[0].rc != BATCHFIT_OK);
            CHECK(m[1].rc != BATCHFIT_OK);
        }
        CHECK_EQ(m[1].alloc.outstanding, 0);
        pthread_cond_destroy(&job.cond);
        pthread_mutex_destroy(&job.lock);
    }
    CHECK(total >= 5);
}
