/* Trials across the ranks of a job: one device a rank, rank 0's search
 * proposing a size for each rank every round. The only collective is the
 * caller's all-gather, so a broadcast is rank 0's record in an all-gather
 * (the others send zeros). Every exchange is reached by every rank on every
 * path, in the same order: the first (each rank's readiness and device),
 * then per round rank 0's order and every rank's trial, then rank 0's last
 * order with the outcome. No rank waits on one that already left. */
#include "probe.h"

#include <stdio.h>
#include <string.h>

/* The first exchange: whether the rank is ready, and what it probes on. */
typedef struct ready_wire {
    int32_t status;
    int32_t list; /* the device is a list of GPUs */
    uint64_t total_bytes;
    uint64_t budget_bytes;
    /* The sizes the search may answer: rank 0's search answers for all. */
    uint64_t min_batch, upper_bound, lattice_multiple;
    int32_t lattice, strategy;
    char spec[64];
    char name[96];
    char error[BATCHFIT_ERRMSG_MAX];
} ready_wire;

enum { ORDER_ROUND = 1, ORDER_END = 2 };

/* Rank 0's order: a round's sizes, or the end with the job's outcome. */
typedef struct order_wire {
    int32_t op;
    int32_t count;
    int32_t status;      /* ORDER_END: the code of the rank that failed, else 0 */
    int32_t failed_rank; /* ORDER_END: -1 when none */
    uint64_t batch_size; /* ORDER_END: the answer */
    uint64_t batches[BATCHFIT_MAX_PARALLEL];
    char error[BATCHFIT_ERRMSG_MAX];
} order_wire;

/* A rank's trial of a round; the trial's one pointer travels as text. */
typedef struct trial_wire {
    int32_t ran;
    int32_t rc;
    batchfit_trial trial;
    char peak_source[96];
    char error[BATCHFIT_ERRMSG_MAX];
} trial_wire;

/* One rank's view of the job. */
typedef struct job {
    batchfit_ctx *ctx;
    const batchfit_ranks *ranks;
    trial_source *src;
    batchfit_result *result;
    ready_wire *ready; /* every rank's, from the first exchange */
    void *buf;         /* size records of the largest kind */
    unsigned width;    /* trials a round */
    uint64_t tightest; /* the smallest budget of any rank */
    int failed_rank;   /* rank 0: whose failure ended the search; -1 none */
    char failed_error[BATCHFIT_ERRMSG_MAX]; /* rank 0: why that rank's trial could not run */
} job;

int batchfit__ranks_active(const batchfit_options *opts)
{
    return batchfit__ranks_valid(opts->ranks) && opts->parallel > 1 && opts->ranks->size > 1;
}

static int exchange(job *j, const void *mine, size_t len)
{
    if (j->ranks->allgather(j->ranks->userdata, mine, j->buf, len) != 0)
        return batchfit__fail(j->ctx, BATCHFIT_E_DEVICE,
                              "rank %d: the exchange between the %d ranks failed", j->ranks->rank,
                              j->ranks->size);
    return BATCHFIT_OK;
}

static const char *spec_of(const ready_wire *w)
{
    return w->spec[0] ? w->spec : "no device";
}

/* Allocates the exchange buffers; NULL-safe to free with job_free. */
static int job_init(job *j, batchfit_ctx *ctx, const batchfit_ranks *ranks)
{
    memset(j, 0, sizeof *j);
    j->ctx = ctx;
    j->ranks = ranks;
    j->failed_rank = -1;
    size_t n = (size_t)ranks->size, largest = sizeof(trial_wire);
    if (sizeof(order_wire) > largest)
        largest = sizeof(order_wire);
    if (sizeof(ready_wire) > largest)
        largest = sizeof(ready_wire);
    j->ready = batchfit__calloc(&ctx->allocator, n, sizeof *j->ready);
    j->buf = batchfit__calloc(&ctx->allocator, n, largest);
    return j->ready && j->buf ? BATCHFIT_OK : BATCHFIT_E_NO_MEMORY;
}

static void job_free(job *j)
{
    batchfit__free(&j->ctx->allocator, j->ready);
    batchfit__free(&j->ctx->allocator, j->buf);
}

/* "1 to 4096, multiples of 8, with model": the sizes a rank's search may
 * answer. */
static void sizes_searched(const ready_wire *w, char *out, size_t len)
{
    char lattice[48] = "";
    if (w->lattice == BATCHFIT_LATTICE_MULTIPLE)
        snprintf(lattice, sizeof lattice, ", multiples of %llu",
                 (unsigned long long)w->lattice_multiple);
    else if (w->lattice == BATCHFIT_LATTICE_POW2)
        snprintf(lattice, sizeof lattice, ", powers of two");
    const char *strategy = batchfit_strategy_name((batchfit_strategy)w->strategy);
    snprintf(out, len, "%llu to %llu%s, with %s", (unsigned long long)w->min_batch,
             (unsigned long long)w->upper_bound, lattice, strategy ? strategy : "?");
}

/* The first exchange. Returns BATCHFIT_OK when every rank is ready on a
 * device identical to rank 0's; else this rank's code, with a message
 * naming the rank that failed (the same verdict on every rank). */
static int first_exchange(job *j, int status, const batchfit_result *result,
                          batchfit_device *device)
{
    ready_wire mine;
    memset(&mine, 0, sizeof mine);
    mine.status = status;
    if (result && result->device_spec) {
        batchfit__copy(mine.spec, sizeof mine.spec, result->device_spec);
        batchfit__copy(mine.name, sizeof mine.name, result->device.name);
        mine.total_bytes = result->budget.total_bytes;
        mine.budget_bytes = result->budget.budget_bytes;
        mine.min_batch = result->min_batch;
        mine.upper_bound = result->upper_bound;
        mine.lattice_multiple = result->lattice_multiple;
        mine.lattice = (int32_t)result->lattice;
        mine.strategy = (int32_t)result->strategy;
    }
    mine.list = device && batchfit__device_is_list(device);
    if (status)
        batchfit__copy(mine.error, sizeof mine.error, batchfit_ctx_last_error(j->ctx));
    int rc = exchange(j, &mine, sizeof mine);
    if (rc)
        return rc;
    memcpy(j->ready, j->buf, (size_t)j->ranks->size * sizeof *j->ready);
    /* Every rank's texts end inside their fields, whatever arrived. */
    for (int r = 0; r < j->ranks->size; r++) {
        ready_wire *w = &j->ready[r];
        w->spec[sizeof w->spec - 1] = '\0';
        w->name[sizeof w->name - 1] = '\0';
        w->error[sizeof w->error - 1] = '\0';
    }
    const ready_wire *all = j->ready;
    /* The cause is the first rank that failed on its own, as in the
     * agreement; a rank stopped by an interrupt counts after those. */
    int failed = -1;
    for (int r = 0; r < j->ranks->size; r++)
        if (all[r].status && (failed < 0 || (all[failed].status == BATCHFIT_E_ABORTED &&
                                             all[r].status != BATCHFIT_E_ABORTED)))
            failed = r;
    /* A rank that failed on its own reports its own failure (the
     * agreement then names the first); the others, the first. */
    if (status)
        return status;
    if (failed >= 0) {
        const ready_wire *f = &all[failed];
        return batchfit__fail(j->ctx, BATCHFIT_E_ABORTED,
                              "stopped before any trial: rank %d (%s) failed: %s", failed,
                              spec_of(f), f->error);
    }
    j->tightest = all[0].budget_bytes;
    for (int r = 0; r < j->ranks->size; r++) {
        const ready_wire *w = &all[r];
        if (w->list)
            return batchfit__fail(j->ctx, BATCHFIT_E_INVALID_ARGUMENT,
                                  "trials in parallel across ranks need one device a rank: rank "
                                  "%d has %s, a device of several GPUs",
                                  r, w->spec);
        if (strcmp(w->name, all[0].name) != 0 ||
            w->total_bytes != all[0].total_bytes)
            return batchfit__fail(j->ctx, BATCHFIT_E_INVALID_ARGUMENT,
                                  "trials in parallel across ranks need identical devices: rank "
                                  "0 (%s) is %s with %llu bytes, rank %d (%s) is %s with %llu "
                                  "bytes",
                                  spec_of(&all[0]), all[0].name,
                                  (unsigned long long)all[0].total_bytes, r, spec_of(w), w->name,
                                  (unsigned long long)w->total_bytes);
        /* Rank 0's search answers for every rank: a rank asking for
         * other sizes (its own --max, --samples, --multiple-of, a
         * hyperparameters file's maximum) was answered with rank 0's
         * (135 where it asked for at most 50), without a word. */
        if (w->min_batch != all[0].min_batch || w->upper_bound != all[0].upper_bound ||
            w->lattice != all[0].lattice || w->lattice_multiple != all[0].lattice_multiple ||
            w->strategy != all[0].strategy) {
            char first[96], other[96];
            sizes_searched(&all[0], first, sizeof first);
            sizes_searched(w, other, sizeof other);
            return batchfit__fail(j->ctx, BATCHFIT_E_INVALID_ARGUMENT,
                                  "trials in parallel across ranks search one set of sizes for "
                                  "all: rank 0 searches %s, rank %d %s; give every rank the same "
                                  "--min, --max, --samples, --multiple-of or --power-of-two and "
                                  "--strategy",
                                  first, r, other);
        }
        if (w->budget_bytes < j->tightest)
            j->tightest = w->budget_bytes;
    }
    return BATCHFIT_OK;
}

/* Runs this rank's trial of a round (when it has one) and fills its
 * record; *own (may be NULL) receives the trial as it ran. */
static void run_mine(job *j, const order_wire *o, trial_wire *mine, batchfit_trial *own)
{
    memset(mine, 0, sizeof *mine);
    int rank = j->ranks->rank;
    if (rank >= o->count)
        return;
    mine->ran = 1;
    mine->trial.batch = o->batches[rank];
    mine->rc = j->src->trial(j->src, o->batches[rank], &mine->trial);
    if (own)
        *own = mine->trial;
    if (mine->trial.process.peak_source)
        batchfit__copy(mine->peak_source, sizeof mine->peak_source,
                       mine->trial.process.peak_source);
    mine->trial.process.peak_source = NULL;
    if (mine->rc)
        batchfit__copy(mine->error, sizeof mine->error, batchfit_ctx_last_error(j->ctx));
}

/* Rank 0's round: the order out, every rank's trial back, in proposal
 * order (rank i ran batches[i]). */
static int round_on_ranks(void *userdata, const uint64_t *batches, size_t count,
                          batchfit_trial *trials)
{
    job *j = userdata;
    order_wire order;
    memset(&order, 0, sizeof order);
    order.op = ORDER_ROUND;
    order.count = (int32_t)count;
    memcpy(order.batches, batches, count * sizeof *batches);
    int rc = exchange(j, &order, sizeof order);
    if (rc)
        return rc;
    trial_wire mine;
    run_mine(j, &order, &mine, NULL);
    rc = exchange(j, &mine, sizeof mine);
    if (rc)
        return rc;
    const trial_wire *all = j->buf;
    batchfit_result *result = j->result;
    for (size_t i = 0; i < count; i++) {
        const trial_wire *w = &all[i];
        if (w->rc) {
            /* The search words an abort its own way; the rank's words are
             * put back once it returns. */
            j->failed_rank = (int)i;
            memcpy(j->failed_error, w->error, sizeof j->failed_error);
            j->failed_error[sizeof j->failed_error - 1] = '\0';
            return batchfit__fail(j->ctx, w->rc, "%s", j->failed_error);
        }
        trials[i] = w->trial;
        trials[i].message[sizeof trials[i].message - 1] = '\0';
        trials[i].process.tail[sizeof trials[i].process.tail - 1] = '\0';
        trials[i].process.oom_signature[sizeof trials[i].process.oom_signature - 1] = '\0';
        trials[i].process.left_running_name[sizeof trials[i].process.left_running_name - 1] = '\0';
        if (w->peak_source[0]) {
            char source[sizeof w->peak_source];
            memcpy(source, w->peak_source, sizeof source);
            source[sizeof source - 1] = '\0';
            if (batchfit__result_keep(result, &trials[i].process.peak_source, source))
                return batchfit__fail(j->ctx, BATCHFIT_E_NO_MEMORY,
                                      "out of memory recording a trial");
        }
        /* Judged against rank 0's budget as if it ran on the tightest
         * rank: accepted only where it fits on every rank. */
        if (trials[i].peak_known)
            trials[i].peak_bytes = batchfit__scale_to_budget(trials[i].peak_bytes, j->tightest,
                                                             result->budget.budget_bytes);
        if (trials[i].outcome == BATCHFIT_ERROR && j->failed_rank < 0)
            j->failed_rank = (int)i;
        if (batchfit__result_set_trial_rank(result, result->trial_count + i, (int)i))
            return batchfit__fail(j->ctx, BATCHFIT_E_NO_MEMORY,
                                  "out of memory recording a trial's rank");
    }
    return BATCHFIT_OK;
}

/* Every rank but 0: runs its size of each round until the end. Returns
 * rank 0's verdict for this rank. */
static int serve(job *j, batchfit_result *result, order_wire *end)
{
    int kept = BATCHFIT_OK; /* NO_MEMORY once a trial could not be kept */
    for (;;) {
        order_wire none;
        memset(&none, 0, sizeof none);
        int rc = exchange(j, &none, sizeof none);
        if (rc)
            return rc;
        const order_wire *o = j->buf;
        if (o->op != ORDER_ROUND) {
            *end = *o;
            return kept == BATCHFIT_OK ? BATCHFIT_OK
                                       : batchfit__fail(j->ctx, kept,
                                                        "out of memory recording a trial");
        }
        order_wire order = *o;
        if (order.count < 0 || order.count > BATCHFIT_MAX_PARALLEL)
            order.count = 0;
        trial_wire mine;
        batchfit_trial own;
        run_mine(j, &order, &mine, &own);
        result->rounds++;
        rc = exchange(j, &mine, sizeof mine);
        if (rc)
            return rc;
        /* A trial of this rank's that failed with a bug stays in its
         * result too, so that the rank can show what its command said;
         * where that fails, the rank still serves to the end (rank 0
         * waits for it), and then says so. */
        if (mine.ran && !mine.rc && own.outcome == BATCHFIT_ERROR &&
            batchfit__result_add_trial(result, &own) != BATCHFIT_OK)
            kept = BATCHFIT_E_NO_MEMORY;
    }
}

/* The end as every rank learns it: the answer, or who failed. */
static int finish(job *j, const order_wire *end, batchfit_result *result)
{
    int me = j->ranks->rank;
    if (end->status == BATCHFIT_OK) {
        if (me != 0) {
            result->batch_size = end->batch_size;
            result->source = BATCHFIT_SOURCE_MEASURED;
        }
        return BATCHFIT_OK;
    }
    if (end->failed_rank == me)
        return batchfit__fail(j->ctx, end->status, "%.*s", (int)sizeof end->error, end->error);
    int failed = end->failed_rank >= 0 && end->failed_rank < j->ranks->size ? end->failed_rank : 0;
    return batchfit__fail(j->ctx, BATCHFIT_E_ABORTED, "stopped: rank %d (%s) failed: %.*s",
                          failed, spec_of(&j->ready[failed]), (int)sizeof end->error,
                          end->error);
}

int batchfit__ranks_search(batchfit_ctx *ctx, const batchfit_options *opts,
                           batchfit_device *device, trial_source *src, int ready,
                           batchfit_result *result)
{
    src->joined = 1;
    job j;
    int rc = job_init(&j, ctx, opts->ranks);
    if (rc) {
        job_free(&j);
        return batchfit__fail(ctx, rc, "out of memory before the ranks' first exchange; abort "
                                       "the job (the other ranks are waiting)");
    }
    j.src = src;
    j.result = result;
    if (result)
        result->ranks_joined = 1;
    rc = first_exchange(&j, ready, result, device);
    if (rc) {
        job_free(&j);
        return rc;
    }
    unsigned width = opts->parallel < (unsigned)opts->ranks->size ? opts->parallel
                                                                   : (unsigned)opts->ranks->size;
    order_wire end;
    memset(&end, 0, sizeof end);
    if (opts->ranks->rank == 0) {
        rc = batchfit__search_run_parallel(ctx, opts, width, round_on_ranks, &j, result);
        if (rc && j.failed_error[0])
            batchfit__fail(ctx, rc, "%s", j.failed_error);
        end.op = ORDER_END;
        end.status = rc;
        end.failed_rank = rc ? (j.failed_rank >= 0 ? j.failed_rank : 0) : -1;
        end.batch_size = rc ? 0 : result->batch_size;
        if (rc)
            batchfit__copy(end.error, sizeof end.error, batchfit_ctx_last_error(ctx));
        int xrc = exchange(&j, &end, sizeof end);
        if (rc == BATCHFIT_OK)
            rc = xrc;
        if (rc && end.failed_rank != 0)
            rc = finish(&j, &end, result);
    } else {
        rc = serve(&j, result, &end);
        if (rc == BATCHFIT_OK)
            rc = finish(&j, &end, result);
    }
    job_free(&j);
    return rc;
}

int batchfit__ranks_refused(batchfit_ctx *ctx, const batchfit_options *opts, int code,
                            const batchfit_result *result)
{
    if (!batchfit__ranks_active(opts))
        return code;
    if (code == BATCHFIT_OK)
        code = batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "this rank ended before the job's first exchange");
    trial_source none;
    memset(&none, 0, sizeof none);
    char message[BATCHFIT_ERRMSG_MAX];
    batchfit__copy(message, sizeof message, batchfit_ctx_last_error(ctx));
    int rc = batchfit__ranks_search(ctx, opts, NULL, &none, code, (batchfit_result *)result);
    /* This rank's own failure is what it reports. */
    if (rc == code)
        batchfit__fail(ctx, code, "%s", message);
    return rc;
}

int batchfit_ranks_refuse(batchfit_ctx *ctx, const batchfit_ranks *ranks, int code,
                          const char *message)
{
    if (!ctx || !batchfit__ranks_valid(ranks))
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "ranks_refuse: a context and ranks (struct_size, size, rank, "
                              "allgather) are required");
    /* Any other mistake still takes part, so that no peer waits. */
    if (code <= BATCHFIT_OK || code > BATCHFIT_E_NOT_FOUND)
        code = BATCHFIT_E_INVALID_ARGUMENT;
    batchfit__fail(ctx, code, "%s", message ? message : batchfit_strerror(code));
    batchfit_options opts;
    batchfit_options_init(&opts);
    opts.ranks = ranks;
    opts.parallel = BATCHFIT_MAX_PARALLEL;
    return batchfit__ranks_refused(ctx, &opts, code, NULL);
}
