/* Seeded memory profiles derived from real architectures. Model state uses
 * the ZeRO paper's accounting (Rajbhandari et al. 2020: 16 bytes per
 * parameter for mixed-precision Adam); transformer activations use
 * Korthikanti et al. 2022 (s*b*h*(34 + 5*a*s/h) bytes per layer in 16-bit
 * precision without recomputation). On top of the step's own memory every
 * GPU profile carries 5-10% of the device as fixed framework reservations
 * (CUDA context, cuDNN/cuBLAS workspaces, the caching allocator's reserve),
 * so fixed memory spans 5-90% of capacity as real jobs do. */
#include "profiles.h"

#include <stdio.h>

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)

typedef struct family {
    const char *name;
    const char *source;
    double fixed;      /* bytes the step holds before any batch */
    double per_sample; /* bytes per sample */
    int host;
} family;

static const family families[] = {
    {"ResNet-18, CIFAR-10 32px, fp32, SGD",
     "11.2M parameters x 12 B (weights, gradients, momentum); ~2.5 MiB of activations a 32x32 image",
     11.2e6 * 12, 2.5 * MIB, 0},
    {"ResNet-50, ImageNet 224px, mixed precision, SGD",
     "25.6M parameters x 14 B (fp32 master, fp16 copy, gradients, momentum); ~55 MiB of "
     "activations a 224x224 image",
     25.6e6 * 14, 55.0 * MIB, 0},
    {"ViT-B/16, 224px, mixed precision, AdamW",
     "86M parameters x 16 B; 12 layers x s*h*(34 + 5*a*s/h) with s=197, h=768, a=12", 86e6 * 16,
     12.0 * 197 * 768 * (34.0 + 5.0 * 12 * 197 / 768), 0},
    {"BERT-base, seq 512, mixed precision, AdamW",
     "110M parameters x 16 B; 12 layers x s*h*(34 + 5*a*s/h) with s=512, h=768, a=12", 110e6 * 16,
     12.0 * 512 * 768 * (34.0 + 5.0 * 12 * 512 / 768), 0},
    {"GPT-2 XL 1.5B, seq 1024, mixed precision, AdamW",
     "1.5B parameters x 16 B = 24 GB (the ZeRO paper's figure); 48 layers x s*h*(34 + 5*a*s/h) "
     "with s=1024, h=1600, a=25",
     1.5e9 * 16, 48.0 * 1024 * 1600 * (34.0 + 5.0 * 25 * 1024 / 1600), 0},
    {"LLaMA-7B LoRA, seq 2048, bf16, activation checkpointing",
     "6.74B parameters x 2 B; 32 checkpointed layer inputs of 2*s*h B plus one recomputed layer "
     "of s*h*(34 + 5*a*s/h), s=2048, h=4096, a=32",
     6.74e9 * 2, 32.0 * 2 * 2048 * 4096 + 2048.0 * 4096 * (34.0 + 5.0 * 32 * 2048 / 4096), 0},
    {"LLaMA-13B inference, seq 4096, fp16 KV cache",
     "13B parameters x 2 B; KV cache 2 x 40 layers x s x h x 2 B with s=4096, h=5120, plus "
     "activations",
     13e9 * 2, 2.0 * 40 * 4096 * 5120 * 2 + 90.0 * MIB, 0},
    {"PyTorch CPU CNN on host RAM (measured here)",
     "shared/data/pytorch-cpu-cnn-peaks-mmap128k.csv: 245.8 MiB + 5.79 MiB a sample; peak RSS "
     "spread 5-10% between identical runs (pytorch-cpu-cnn-peaks.csv)",
     245.8 * MIB, 5.79 * MIB, 1},
};

#define FAMILY_COUNT (sizeof families / sizeof families[0])

static const double gpu_capacities[] = {16, 24, 32, 40, 48, 80, 94, 141};
static const double host_capacities[] = {16, 24, 32, 64};

size_t bench_family_count(void)
{
    return FAMILY_COUNT;
}

const char *bench_family_name(size_t i)
{
    return i < FAMILY_COUNT ? families[i].name : NULL;
}

const char *bench_family_source(size_t i)
{
    return i < FAMILY_COUNT ? families[i].source : NULL;
}

static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double unit(uint64_t *s)
{
    return (double)(next(s) >> 11) * 0x1.0p-53;
}

static double between(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * unit(s);
}

static uint64_t round_up(double bytes, uint64_t granule)
{
    uint64_t b = bytes > 0.0 ? (uint64_t)bytes : 0;
    return granule > 1 ? (b + granule - 1) / granule * granule : b;
}

uint64_t bench_profile_peak(const bench_profile *p, uint64_t batch, double noise_top)
{
    double act = (double)p->per_sample * (double)batch;
    for (unsigned j = 0; j < p->jumps; j++)
        if (batch >= p->jump_batch[j])
            act += (double)p->jump_bytes[j];
    act += noise_top * ((double)p->fixed + act);
    return round_up((double)p->fixed, p->granule) + round_up(act, p->granule);
}

uint64_t bench_profile_truth(const bench_profile *p, uint64_t budget, uint64_t bound,
                             double noise_top)
{
    uint64_t lo = 0, hi = bound + 1; /* lo fits (or is 0), hi does not */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (bench_profile_peak(p, mid, noise_top) <= budget)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

void bench_profile_make(uint64_t seed, unsigned index, bench_profile *p)
{
    uint64_t s = seed * UINT64_C(0x100000001B3) + index;
    next(&s);
    const family *f = &families[index % FAMILY_COUNT];
    for (int attempt = 0;; attempt++) {
        *p = (bench_profile){0};
        p->family = f->name;
        p->host = f->host;
        double capacity = f->host ? host_capacities[next(&s) % 4] : gpu_capacities[next(&s) % 8];
        if (attempt >= 60)
            capacity = f->host ? 64 : 141; /* the largest device always takes it */
        p->capacity = (uint64_t)(capacity * GIB);
        double overhead = between(&s, 0.05, 0.10) * (double)p->capacity;
        p->fixed = (uint64_t)(f->fixed * between(&s, 0.8, 1.25) + overhead);
        p->per_sample = (uint64_t)(f->per_sample * between(&s, 0.8, 1.25));
        p->granule = f->host ? 4096 : UINT64_C(2) << 20;
        if (f->host)
            p->noise = between(&s, 0.05, 0.10);
        else if (unit(&s) < 0.4)
            p->noise = 0.0;
        else
            p->noise = between(&s, 0.001, 0.01);
        /* As the spec string writes it, so the sim and the truth agree exactly. */
        p->noise = (double)(uint64_t)(p->noise * 1e8 + 0.5) / 1e8;
        p->seed = next(&s) % 1000000 + 1;
        uint64_t budget = p->capacity - (uint64_t)((double)p->capacity * 0.05);
        if ((double)p->fixed > 0.9 * (double)p->capacity)
            continue;
        uint64_t estimate = bench_profile_truth(p, budget, 65536, 0.0);
        if (!f->host) {
            p->jumps = (unsigned)(next(&s) % 4);
            for (unsigned j = 0; j < p->jumps; j++) {
                /* cuDNN/cuBLAS pick other algorithms, with other workspaces,
                 * as the batch grows. */
                p->jump_batch[j] = 1 + (uint64_t)(unit(&s) * 1.3 * (double)(estimate + 1));
                p->jump_bytes[j] = (uint64_t)(between(&s, 0.005, 0.04) * (double)p->capacity);
            }
        }
        /* The minimum must fit even at the top of the noise. */
        if (bench_profile_truth(p, budget, 1, p->noise) >= 1)
            return;
    }
}

int bench_profile_spec(const bench_profile *p, const char *extra, char *buf, size_t len)
{
    int n = snprintf(buf, len, "sim:capacity=%llu,fixed=%llu,per_sample=%llu,granule=%llu",
                     (unsigned long long)p->capacity, (unsigned long long)p->fixed,
                     (unsigned long long)p->per_sample, (unsigned long long)p->granule);
    if (p->noise > 0.0 && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, ",noise=%.6f%%,seed=%llu", p->noise * 100.0,
                      (unsigned long long)p->seed);
    for (unsigned j = 0; j < p->jumps && n > 0 && (size_t)n < len; j++)
        n += snprintf(buf + n, len - (size_t)n, ",jump=%llu:%llu",
                      (unsigned long long)p->jump_batch[j], (unsigned long long)p->jump_bytes[j]);
    if (extra && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, "%s", extra);
    return n;
}
