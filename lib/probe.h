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
} trial_source;

/* Runs the whole probe over a source: *out receives a result whenever one
 * could be allocated, with status, error and interrupted filled. */
int batchfit__probe_run(batchfit_ctx *ctx, const batchfit_options *opts, batchfit_device *device,
                        trial_source *src, batchfit_result **out);

#endif
