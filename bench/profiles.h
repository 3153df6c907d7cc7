/* Seeded memory profiles of real training (and inference) jobs, for the
 * benchmark and the tests: each is a sim device spec plus the brute-force
 * truth it is judged against. */
#ifndef BATCHFIT_BENCH_PROFILES_H
#define BATCHFIT_BENCH_PROFILES_H

#include <batchfit.h>

#include <stddef.h>
#include <stdint.h>

typedef struct bench_profile {
    const char *family;
    int host;               /* a host-memory (CPU training) profile */
    uint64_t capacity;
    uint64_t fixed;
    uint64_t per_sample;
    uint64_t granule;
    uint64_t jump_batch[3];
    uint64_t jump_bytes[3];
    unsigned jumps;
    double noise;           /* uniform trial-to-trial spread of the peak */
    uint64_t seed;          /* the sim device's noise seed */
} bench_profile;

/* The families, with where their numbers come from. */
size_t bench_family_count(void);
const char *bench_family_name(size_t i);
const char *bench_family_source(size_t i);

/* Profile number index of the suite drawn from seed: deterministic. The
 * budget it is drawn for (capacity less a 5% margin) admits at least the
 * minimum batch of 1. */
void bench_profile_make(uint64_t seed, unsigned index, bench_profile *p);

/* "sim:capacity=...,fixed=...,..." with extra appended (e.g. ",used=N"). */
int bench_profile_spec(const bench_profile *p, const char *extra, char *buf, size_t len);

/* The peak the sim device sees at batch: every allocation rounded up to the
 * granule; noise_top adds that fraction of the whole peak (the top of the
 * noise band when it is the profile's noise). */
uint64_t bench_profile_peak(const bench_profile *p, uint64_t batch, double noise_top);

/* The largest batch in 1..bound whose peak (at noise_top) stays within
 * budget; 0 if none. Peaks only grow with the batch, so this bisects. */
uint64_t bench_profile_truth(const bench_profile *p, uint64_t budget, uint64_t bound,
                             double noise_top);


/* ------------------------------------------------------------------ */
/* Families that model what real processes do (issue 10): each case is */
/* run through batchfit_search with an oracle whose draw at a batch    */
/* depends only on the seed, the batch and how often that batch ran,   */
/* so every strategy meets the same noise at the same sizes.           */
/* ------------------------------------------------------------------ */


enum {
    BENCH_DETERMINISTIC, /* the host's default 5% spread, 0.02-0.3% true wander */
    BENCH_REPLAYED,      /* measured PyTorch CPU runs, interpolated between sizes */
    BENCH_STALE_CACHE,   /* a remembered answer and curve from a budget 5-30% off */
    BENCH_FAR_ESTIMATE,  /* a first guess x0.3 to x3 off */
    BENCH_SHAPED,        /* curves a line does not fit, under the default 5% spread */
    BENCH_FAR_ESTIMATE_HOST, /* a first guess x0.3 to x3 off, on the deterministic family */
    BENCH_CASE_FAMILIES
};

typedef struct bench_case {
    unsigned family;
    bench_profile profile; /* the curve, except where replayed */
    unsigned replay;       /* replayed: which measured table (0: default malloc, 1: mmap128k) */
    double wander;         /* the true relative trial-to-trial wander (uniform +-) */
    double declared;       /* the spread the search is told (host: the device default, unset) */
    int host;              /* searched as host memory (the families under the host's 5%) */
    uint64_t budget;       /* bytes a trial may use */
    uint64_t cached_batch; /* stale cache: the remembered size, with cached_fit */
    batchfit_fit cached_fit;
    uint64_t cached_budget; /* and the budget it was found under, as the cache keeps it */
    uint64_t first_guess;
    uint64_t seed;
    unsigned shape;        /* shaped: which curve (BENCH_SHAPE_*), else BENCH_SHAPE_LINE */
    double shape_a, shape_b; /* its parameters (see bench/profiles.c) */
} bench_case;

/* The shaped family's curves, a fifth of its cases each. */
enum {
    BENCH_SHAPE_LINE,      /* the profile as it is: a line with its jumps */
    BENCH_SHAPE_POOL,      /* flat up to a preallocated pool of shape_a samples, then linear */
    BENCH_SHAPE_CHUNKS,    /* per-sample memory allocated shape_a samples at a time */
    BENCH_SHAPE_DOUBLING,  /* an arena doubling from a block of shape_a bytes */
    BENCH_SHAPE_SQUARE,    /* a B x B term of shape_a bytes (a contrastive loss's matrix) */
    BENCH_SHAPE_SUBLINEAR, /* per_sample x shape_a x (B / shape_a)^shape_b */
    BENCH_SHAPES
};

typedef struct bench_case_outcome {
    uint64_t answer; /* 0: none */
    unsigned trials;
    unsigned ooms;
    batchfit_fit fit; /* the curve the search fitted, as the cache stores it */
    int not_monotone; /* the answer came with the warning that memory fell below it */
} bench_case_outcome;

const char *bench_case_family_name(unsigned family);
const char *bench_case_family_source(unsigned family);

/* Case number index of a family, drawn from seed: deterministic. */
void bench_case_make(uint64_t seed, unsigned family, unsigned index, bench_case *c);

/* Searches the case with a strategy over 1..bound. Returns 0, or -1 when
 * the library could not run the search at all. */
int bench_case_run(const bench_case *c, batchfit_strategy strategy, uint64_t bound,
                   bench_case_outcome *out);

/* How far past the budget the sample that stops a host trial may read, as a
 * fraction of the budget. */
#define WATCHDOG_PAST 0.02

/* The trial bench_case_run's oracle reports for the repeat-th run (from 0)
 * at batch: fits, with its peak; or out of memory, reading at least the
 * peak it reached where a framework's message says what it needed, and on
 * a host case (host set) where the watchdog stopped it: the budget and up
 * to WATCHDOG_PAST of it more, never more than the peak, with
 * process.watchdog_stopped set, as a child process's trial reads. */
void bench_case_read(const bench_case *c, uint64_t batch, unsigned repeat, batchfit_trial *t);

/* Sends the log of every later bench_case_run to fn (NULL: none); for
 * tracing a case's search. */
void bench_case_set_log(batchfit_log_fn fn, void *userdata);

/* The most the case's peak at batch can be on any draw: an answer above
 * the budget there is unsafe. */
uint64_t bench_case_peak_max(const bench_case *c, uint64_t batch);

/* The smallest size in 1..bound whose peak can exceed the budget on some
 * draw (0: none). Where memory is not monotone in the batch (the replayed
 * default-malloc runs), an answer above it is a trap: the epoch's last,
 * smaller batch, or a recovery's smaller micro-batch, can run out of
 * memory although the answer itself fits. */
uint64_t bench_case_first_over_budget(const bench_case *c, uint64_t bound);

/* The smallest size in 1..bound that is a trap for any answer above it
 * (0: none): its peak can exceed the budget on some draw, or exceeds the
 * acceptance threshold on every draw (a size no search may accept; a
 * larger one that passes does so only where memory falls again, as in the
 * default-malloc runs' dip from 56 to 64). */
uint64_t bench_case_first_refused(const bench_case *c, uint64_t bound);

/* How many sizes in 1..bound pass the acceptance threshold on some draws
 * and not on others: where the wander spans more than one size, the pair
 * a search ends on (accepted, then its neighbour not) is a coin toss among
 * them, and two searches that run different sizes end on different pairs. */
unsigned bench_case_draw_band(const bench_case *c, uint64_t bound);

/* The largest batch whose central (noise-free) peak passes the acceptance
 * threshold budget * (1 - declared) / (1 + declared): "exact". */
uint64_t bench_case_exact(const bench_case *c, uint64_t bound);

/* Reads a numeric field of the "result" object of batchfit's JSON export
 * (as `batchfit probe --export-json` writes it); 0 when absent. */
unsigned long long bench_json_result_number(const char *json, const char *key);

/* splitmix64 (Steele, Lea and Flood 2014): advances *s and returns the next
 * draw; the benchmarks' generator (a seed reproduces a run). */
uint64_t bench_splitmix64(uint64_t *s);

/* The q-quantile of n values (sorts them), interpolated between the two
 * nearest; NAN for none. */
double bench_quantile(double *v, unsigned n, double q);

#endif
