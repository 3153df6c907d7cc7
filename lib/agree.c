/* Agreement across ranks: every rank contributes one fixed-size record of
 * its outcome through the caller's all-gather, and every rank computes the
 * same verdict from the same records - the job fails as its first failed
 * rank did, else the batch size is the smallest answer (or each rank's
 * own). One collective, so no rank can wait for another that already
 * left. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* The record on the wire: fixed-width fields, the same on every rank. */
typedef struct wire {
    int32_t rank;
    int32_t status;
    uint64_t batch_size;
    uint64_t trials;
    uint64_t oom_trials;
    char device_spec[64];
    char device_name[96];
    char error[256];
    int32_t interrupted; /* stopped by its own interrupt, not by a peer */
    int32_t mode;        /* how this rank asked the ranks to agree */
} wire;

static void fill(wire *w, int rank, const batchfit_result *r)
{
    memset(w, 0, sizeof *w);
    w->rank = rank;
    if (!r) {
        w->status = BATCHFIT_E_NO_MEMORY;
        batchfit__copy(w->error, sizeof w->error, "out of memory before the probe");
        return;
    }
    w->status = r->complete ? r->status : BATCHFIT_E_ABORTED;
    w->interrupted = r->interrupted;
    w->batch_size = r->status == BATCHFIT_OK ? r->batch_size : 0;
    w->trials = r->trial_count;
    w->oom_trials = r->oom_trials;
    if (r->device_spec) {
        batchfit__copy(w->device_spec, sizeof w->device_spec, r->device_spec);
        batchfit__copy(w->device_name, sizeof w->device_name, r->device.name);
    }
    if (w->status != BATCHFIT_OK)
        batchfit__copy(w->error, sizeof w->error,
                       r->error ? r->error : batchfit_strerror(w->status));
}

static const char *mode_words(int32_t mode)
{
    return mode == BATCHFIT_AGREE_MIN        ? "the smallest answer (min)"
           : mode == BATCHFIT_AGREE_PER_RANK ? "each rank's own answer (per-rank)"
                                             : "an unknown mode";
}

int batchfit__ranks_valid(const batchfit_ranks *ranks)
{
    return ranks && ranks->struct_size >= sizeof *ranks && ranks->allgather && ranks->size >= 1 &&
           ranks->rank >= 0 && ranks->rank < ranks->size;
}

int batchfit_agree(batchfit_ctx *ctx, const batchfit_ranks *ranks, batchfit_agree_mode mode,
                   batchfit_result *result)
{
    if (!ctx || !batchfit__ranks_valid(ranks) ||
        (mode != BATCHFIT_AGREE_MIN && mode != BATCHFIT_AGREE_PER_RANK))
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "agree: ranks (struct_size, size, rank, allgather) and mode are "
                              "required");
    wire mine;
    fill(&mine, ranks->rank, result);
    mine.mode = (int32_t)mode;
    size_t n = (size_t)ranks->size;
    wire *all = batchfit__calloc(&ctx->allocator, n, sizeof *all);
    batchfit_rank_outcome *outcomes =
        result ? batchfit__calloc(&ctx->allocator, n, sizeof *outcomes) : NULL;
    if (!all || (result && !outcomes)) {
        /* Nowhere to receive the others' records: this rank cannot take
         * part, and says so, so that its caller ends the whole job. */
        batchfit__free(&ctx->allocator, all);
        batchfit__free(&ctx->allocator, outcomes);
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY,
                              "agree: out of memory before the exchange; abort the job (the "
                              "other ranks are waiting)");
    }
    if (ranks->allgather(ranks->userdata, &mine, all, sizeof mine) != 0) {
        batchfit__free(&ctx->allocator, all);
        batchfit__free(&ctx->allocator, outcomes);
        return batchfit__fail(ctx, BATCHFIT_E_DEVICE,
                              "agree: the exchange between the %d ranks failed", ranks->size);
    }
    if (!result) {
        batchfit__free(&ctx->allocator, all);
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "agree: this rank has no result");
    }
    int status = BATCHFIT_OK;
    int failed_rank = -1;
    uint64_t smallest = 0;
    for (size_t i = 0; i < n; i++) {
        const wire *w = &all[i];
        outcomes[i].rank = w->rank;
        outcomes[i].status = w->status;
        outcomes[i].batch_size = w->batch_size;
        outcomes[i].trials = (size_t)w->trials;
        outcomes[i].oom_trials = (size_t)w->oom_trials;
        memcpy(outcomes[i].device_spec, w->device_spec, sizeof w->device_spec);
        memcpy(outcomes[i].device_name, w->device_name, sizeof w->device_name);
        memcpy(outcomes[i].error, w->error, sizeof w->error);
        outcomes[i].device_spec[sizeof outcomes[i].device_spec - 1] = '\0';
        outcomes[i].device_name[sizeof outcomes[i].device_name - 1] = '\0';
        outcomes[i].error[sizeof outcomes[i].error - 1] = '\0';
        /* The cause is the first rank that failed on its own; ranks that
         * were stopped come after: an interrupted rank first, then those
         * that a peer's failure stopped. */
        int worse = failed_rank < 0 ||
                    (status == BATCHFIT_E_ABORTED && w->status != BATCHFIT_E_ABORTED) ||
                    (status == BATCHFIT_E_ABORTED && w->status == BATCHFIT_E_ABORTED &&
                     w->interrupted && !all[failed_rank].interrupted);
        if (w->status != BATCHFIT_OK && worse) {
            status = w->status;
            failed_rank = (int)i;
        }
        if (w->status == BATCHFIT_OK && (!smallest || w->batch_size < smallest))
            smallest = w->batch_size;
    }
    /* Ranks that ask to agree differently (an MPMD job given other flags
     * on some hosts) would each train with a size the others did not
     * expect: the job fails as the first that differs from rank 0, on
     * every rank alike (each judges from the same records). */
    char why[160] = "";
    for (size_t i = 1; i < n; i++)
        if (all[i].mode != all[0].mode) {
            snprintf(why, sizeof why,
                     "it asks the ranks to agree on %s, rank %d on %s; every rank must ask the same",
                     mode_words(all[i].mode), (int)all[0].rank, mode_words(all[0].mode));
            status = BATCHFIT_E_INVALID_ARGUMENT;
            failed_rank = (int)i;
            break;
        }
    batchfit__free(&ctx->allocator, all);
    int rc = batchfit__result_set_agreement(result, mode, outcomes, n, status, failed_rank,
                                            why[0] ? why : NULL);
    if (rc == BATCHFIT_OK && status == BATCHFIT_OK)
        result->agreed_batch_size = mode == BATCHFIT_AGREE_MIN ? smallest : result->batch_size;
    if (rc)
        return batchfit__fail(ctx, rc, "agree: out of memory");
    return BATCHFIT_OK;
}
