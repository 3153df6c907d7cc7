/* The probe's orchestration and its trial sources (internal). */
#ifndef BATCHFIT_PROBE_H
#define BATCHFIT_PROBE_H

#include "internal.h"

/* Where trials come from. The orchestration calls begin() once the budget
 * is settled and the ballast held, runs the search with trial() as its
 * oracle (userdata: the source), and calls end() exactly once after every
 * begin() that succeeded, on every path. */
typedef struct trial_source {
    const char *name;               /* the step's name, for the cache key; may be NULL */
    const char *cache_key;          /* opts->cache_key, for the cache's description */
    const char *const *argv;        /* a command (child trials), else NULL */
    const char *settings;           /* source settings that change the answer (cache key) */
    uint64_t step_min;
    int (*begin)(struct trial_source *src, batchfit_ctx *ctx, batchfit_device *device,
                 batchfit_result *result);
    batchfit_oracle_fn trial;
    /* Set by begin() where the source runs several trials at once (one
     * per identical device): the round function (userdata: the source)
     * and how many trials a round may hold. NULL/0: with opts->parallel
     * above 1, a round's trials run one after another through trial(). */
    batchfit_round_fn round;
    unsigned round_width;
    void (*end)(struct trial_source *src);
    int joined; /* set once this rank took part in a job's first exchange (probe_ranks.c) */
    int in_process; /* the trials run in this process (a step), not in children */
} trial_source;

/* Runs the whole probe over a source: *out receives a result whenever one
 * could be allocated, with status, error and interrupted filled. */
int batchfit__probe_run(batchfit_ctx *ctx, const batchfit_options *opts, batchfit_device *device,
                        trial_source *src, batchfit_result **out);

/* probe_ranks.c: trials across the ranks of a job (opts->ranks). Whether
 * opts asks for them. */
int batchfit__ranks_active(const batchfit_options *opts);
/* Replaces the search on every rank: the first exchange (ready is this
 * rank's code so far: BATCHFIT_OK once the source began), then rank 0's
 * search with a round on every rank, or the others' serving of it, and the
 * last exchange. Marks src joined. */
int batchfit__ranks_search(batchfit_ctx *ctx, const batchfit_options *opts,
                           batchfit_device *device, trial_source *src, int ready,
                           batchfit_result *result);
/* A rank that failed (code, the context's last error) before its source
 * began takes part in the job's first exchange all the same (result, if
 * any, says what it would have probed on); returns what the rank ends
 * with. Without opts->ranks, returns code. */
int batchfit__ranks_refused(batchfit_ctx *ctx, const batchfit_options *opts, int code,
                            const batchfit_result *result);

#endif
