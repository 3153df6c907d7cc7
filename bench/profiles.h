/* Seeded memory profiles of real training (and inference) jobs, for the
 * benchmark and the tests: each is a sim device spec plus the brute-force
 * truth it is judged against. */
#ifndef BATCHFIT_BENCH_PROFILES_H
#define BATCHFIT_BENCH_PROFILES_H

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

#endif
