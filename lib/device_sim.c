/* The simulated device: a capacity, memory taken by others, ballast, and
 * allocations made by steps, each rounded up to the allocation granule as a
 * caching allocator does. Its synthetic step allocates a profile's memory:
 * fixed bytes at build, per-sample bytes plus workspace jumps (and seeded
 * noise) at each run. It fails allocations exactly as a full device would;
 * the search sees nothing but outcomes and measured peaks. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_MAX_JUMPS 16

typedef struct sim_jump {
    uint64_t batch;
    uint64_t bytes;
} sim_jump;

typedef struct sim_state {
    uint64_t capacity;
    uint64_t used_by_others;
    uint64_t ballast;
    uint64_t in_use;
    uint64_t peak;
    int allocated; /* a step allocated through the device since peak_begin */
    uint64_t fixed;
    uint64_t per_sample;
    uint64_t granule;
    sim_jump jumps[SIM_MAX_JUMPS];
    unsigned jump_count;
    double noise;
    uint64_t rng;
} sim_state;

static sim_state *sim_of(const batchfit_device *dev)
{
    return dev && dev->ops && strcmp(dev->ops->kind, "sim") == 0 ? dev->backend : NULL;
}

static uint64_t sim_free_bytes(const sim_state *s)
{
    uint64_t taken = s->used_by_others + s->ballast + s->in_use;
    return taken >= s->capacity ? 0 : s->capacity - taken;
}

static uint64_t round_up(uint64_t bytes, uint64_t granule)
{
    if (granule <= 1)
        return bytes;
    uint64_t r = bytes % granule;
    if (r == 0)
        return bytes;
    return bytes > UINT64_MAX - (granule - r) ? UINT64_MAX : bytes + (granule - r);
}

static void sim_destroy(batchfit_device *dev)
{
    batchfit__free(&dev->ctx->allocator, dev->backend);
    dev->backend = NULL;
}

static int sim_memory(batchfit_device *dev, uint64_t *total, uint64_t *free_bytes)
{
    sim_state *s = dev->backend;
    *total = s->capacity;
    *free_bytes = sim_free_bytes(s);
    return BATCHFIT_OK;
}

static int sim_hold(batchfit_device *dev, uint64_t bytes)
{
    sim_state *s = dev->backend;
    if (bytes > sim_free_bytes(s))
        return batchfit__fail(dev->ctx, BATCHFIT_E_DEVICE,
                              "sim: cannot hold %llu bytes of ballast: only %llu free",
                              (unsigned long long)bytes, (unsigned long long)sim_free_bytes(s));
    s->ballast += bytes;
    return BATCHFIT_OK;
}

static void sim_release_hold(batchfit_device *dev)
{
    sim_state *s = dev->backend;
    s->ballast = 0;
}

static int sim_usage(batchfit_device *dev, uint64_t *bytes)
{
    sim_state *s = dev->backend;
    *bytes = s->in_use;
    return BATCHFIT_OK;
}

static void sim_peak_begin(batchfit_device *dev)
{
    sim_state *s = dev->backend;
    s->peak = s->in_use;
    s->allocated = 0;
}

/* The device measures only what is allocated through it (its synthetic
 * step's memory, and what ran there before): a step that allocated
 * nothing there is not measured, and its peak is not 0. */
static int sim_peak_end(batchfit_device *dev, uint64_t *peak)
{
    sim_state *s = dev->backend;
    if (!s->allocated && s->peak == 0)
        return BATCHFIT_E_NOT_FOUND;
    *peak = s->peak;
    return BATCHFIT_OK;
}

static const batchfit_device_ops sim_ops = {
    .kind = "sim",
    .destroy = sim_destroy,
    .memory = sim_memory,
    .hold = sim_hold,
    .release_hold = sim_release_hold,
    .usage = sim_usage,
    .peak_begin = sim_peak_begin,
    .peak_end = sim_peak_end,
};

int batchfit__sim_alloc(batchfit_device *device, uint64_t bytes)
{
    sim_state *s = sim_of(device);
    if (!s)
        return -1;
    uint64_t rounded = round_up(bytes, s->granule);
    if (rounded > sim_free_bytes(s))
        return -1;
    s->in_use += rounded;
    s->allocated = 1;
    if (s->in_use > s->peak)
        s->peak = s->in_use;
    return 0;
}

void batchfit__sim_free(batchfit_device *device, uint64_t bytes)
{
    sim_state *s = sim_of(device);
    if (!s)
        return;
    uint64_t rounded = round_up(bytes, s->granule);
    s->in_use = rounded > s->in_use ? 0 : s->in_use - rounded;
}

int batchfit__sim_has_profile(const batchfit_device *device)
{
    const sim_state *s = sim_of(device);
    return s && (s->fixed || s->per_sample || s->jump_count || s->noise > 0.0);
}

uint64_t batchfit__sim_in_use(const batchfit_device *device)
{
    const sim_state *s = sim_of(device);
    return s ? s->in_use : 0;
}

/* Parses one KEY=VALUE of a sim spec into s. */
static int sim_set(batchfit_ctx *ctx, batchfit_device *dev, sim_state *s, const char *key,
                   const char *value, int *have_capacity)
{
    char err[BATCHFIT_ERRMSG_MAX];
    char what[300];
    snprintf(what, sizeof what, "sim device key \"%s\"", key);
    int rc = BATCHFIT_OK;
    if (strcmp(key, "capacity") == 0) {
        rc = batchfit__parse_size(value, what, &s->capacity, err, sizeof err);
        *have_capacity = 1;
    } else if (strcmp(key, "used") == 0) {
        rc = batchfit__parse_size(value, what, &s->used_by_others, err, sizeof err);
    } else if (strcmp(key, "fixed") == 0) {
        rc = batchfit__parse_size(value, what, &s->fixed, err, sizeof err);
    } else if (strcmp(key, "per_sample") == 0) {
        rc = batchfit__parse_size(value, what, &s->per_sample, err, sizeof err);
    } else if (strcmp(key, "granule") == 0) {
        rc = batchfit__parse_size(value, what, &s->granule, err, sizeof err);
    } else if (strcmp(key, "noise") == 0) {
        rc = batchfit__parse_percent(value, what, &s->noise, err, sizeof err);
        if (rc == BATCHFIT_OK && s->noise >= 0.5)
            return batchfit__fail(ctx, BATCHFIT_E_PARSE, "%s: noise \"%s\" must be below 50%%",
                                  what, value);
    } else if (strcmp(key, "seed") == 0) {
        uint64_t seed = 0;
        if (strcmp(value, "0") != 0)
            rc = batchfit__parse_count(value, what, UINT64_MAX, &seed, err, sizeof err);
        s->rng = seed;
    } else if (strcmp(key, "jump") == 0) {
        const char *colon = strchr(value, ':');
        if (!colon || colon == value)
            return batchfit__fail(ctx, BATCHFIT_E_PARSE,
                                  "%s: invalid value \"%s\": expected BATCH:SIZE (e.g. 512:1GiB)",
                                  what, value);
        if (s->jump_count == SIM_MAX_JUMPS)
            return batchfit__fail(ctx, BATCHFIT_E_PARSE, "%s: at most %d jumps", what,
                                  SIM_MAX_JUMPS);
        char batch_text[32];
        size_t len = (size_t)(colon - value);
        if (len >= sizeof batch_text)
            return batchfit__fail(ctx, BATCHFIT_E_PARSE,
                                  "%s: invalid value \"%s\": the batch size is too large", what,
                                  value);
        memcpy(batch_text, value, len);
        batch_text[len] = '\0';
        sim_jump *j = &s->jumps[s->jump_count];
        rc = batchfit__parse_count(batch_text, what, INT64_MAX, &j->batch, err, sizeof err);
        if (rc == BATCHFIT_OK)
            rc = batchfit__parse_size(colon + 1, what, &j->bytes, err, sizeof err);
        if (rc == BATCHFIT_OK)
            s->jump_count++;
    } else if (strcmp(key, "unavailable") == 0) {
        dev->available = 0;
        snprintf(dev->reason, sizeof dev->reason, "%s", value[0] ? value : "marked unavailable");
    } else {
        return batchfit__fail(ctx, BATCHFIT_E_PARSE,
                              "sim device: unknown key \"%s\" (expected capacity, used, fixed, "
                              "per_sample, granule, jump, noise, seed or unavailable)",
                              key);
    }
    if (rc)
        return batchfit__fail(ctx, rc, "%s", err);
    return BATCHFIT_OK;
}

int batchfit__sim_open(batchfit_ctx *ctx, const char *params, batchfit_device *dev)
{
    sim_state *s = batchfit__calloc(&ctx->allocator, 1, sizeof *s);
    if (!s)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory opening a sim device");
    dev->ops = &sim_ops;
    dev->backend = s;
    s->granule = UINT64_C(2) << 20;
    int have_capacity = 0;
    char seen[8][256] = {{0}};
    const char *p = params;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[256];
        if (len >= sizeof item)
            return batchfit__fail(ctx, BATCHFIT_E_PARSE, "sim device: item \"%.40s...\" is too long",
                                  p);
        memcpy(item, p, len);
        item[len] = '\0';
        char *eq = strchr(item, '=');
        if (!eq)
            return batchfit__fail(ctx, BATCHFIT_E_PARSE,
                                  "sim device: \"%s\" is not KEY=VALUE", item);
        *eq = '\0';
        /* Every key but jump has one value: "capacity=16GiB,capacity=8GiB"
         * is a mistake in the spec, not a choice of the last (the same
         * value again says nothing new). */
        static const char *const once[] = {"capacity", "used",  "fixed", "per_sample",
                                           "granule",  "noise", "seed",  "unavailable"};
        enum { ONCE = sizeof once / sizeof once[0] };
        int again = 0;
        for (unsigned k = 0; k < ONCE; k++)
            if (strcmp(item, once[k]) == 0) {
                /* seen[k] holds "=VALUE" once the key was given. */
                if (seen[k][0] && strcmp(seen[k] + 1, eq + 1) != 0)
                    return batchfit__fail(ctx, BATCHFIT_E_PARSE,
                                          "sim device: key \"%s\" given twice, as \"%s\" and "
                                          "as \"%s\"",
                                          item, seen[k] + 1, eq + 1);
                again = seen[k][0] != '\0';
                snprintf(seen[k], sizeof seen[k], "=%s", eq + 1);
            }
        int rc = again ? BATCHFIT_OK : sim_set(ctx, dev, s, item, eq + 1, &have_capacity);
        if (rc)
            return rc;
        p += len;
        if (*p == ',')
            p++;
    }
    if (!have_capacity || s->capacity == 0)
        return batchfit__fail(ctx, BATCHFIT_E_PARSE,
                              "sim device: capacity=SIZE is required and must be positive");
    if (s->used_by_others > s->capacity)
        return batchfit__fail(ctx, BATCHFIT_E_PARSE,
                              "sim device: used (%llu bytes) exceeds capacity (%llu bytes)",
                              (unsigned long long)s->used_by_others,
                              (unsigned long long)s->capacity);
    if (s->granule == 0)
        s->granule = 1;
    dev->peak_spread = s->noise;
    return BATCHFIT_OK;
}

/* The synthetic step. */
typedef struct sim_step {
    batchfit_device *device;
    sim_state *sim;
    uint64_t fixed;
} sim_step;

static batchfit_outcome sim_step_build(void *userdata, batchfit_device *device, void **state,
                                       char *msg, size_t msg_len)
{
    (void)userdata;
    sim_state *s = sim_of(device);
    if (!s) {
        batchfit__errf(msg, msg_len, "the synthetic step needs a sim device");
        return BATCHFIT_ERROR;
    }
    sim_step *st = batchfit__calloc(&device->ctx->allocator, 1, sizeof *st);
    if (!st) {
        batchfit__errf(msg, msg_len, "out of host memory building the synthetic step");
        return BATCHFIT_ERROR;
    }
    st->device = device;
    st->sim = s;
    if (batchfit__sim_alloc(device, s->fixed) != 0) {
        batchfit__errf(msg, msg_len,
                       "out of memory: the model's fixed %llu bytes do not fit (%llu free)",
                       (unsigned long long)s->fixed, (unsigned long long)sim_free_bytes(s));
        batchfit__free(&device->ctx->allocator, st);
        return BATCHFIT_OOM;
    }
    st->fixed = s->fixed;
    *state = st;
    return BATCHFIT_FITS;
}

static uint64_t clamp_bytes(double bytes)
{
    if (!(bytes > 0.0))
        return 0;
    if (bytes >= 18446744073709549568.0)
        return UINT64_MAX;
    return (uint64_t)bytes;
}

static batchfit_outcome sim_step_run(void *state, uint64_t batch, batchfit_step_report *report)
{
    sim_step *st = state;
    sim_state *s = st->sim;
    double workspace = 0.0;
    for (unsigned i = 0; i < s->jump_count; i++)
        if (batch >= s->jumps[i].batch)
            workspace += (double)s->jumps[i].bytes;
    double activations = (double)s->per_sample * (double)batch + workspace;
    if (s->noise > 0.0) {
        /* Uniform in [-noise, +noise] of the whole peak, as a real job's
         * resident memory wanders between identical runs. */
        double u = (double)(batchfit__splitmix64(&s->rng) >> 11) * 0x1.0p-53 * 2.0 - 1.0;
        activations += u * s->noise * ((double)st->fixed + activations);
    }
    uint64_t bytes = clamp_bytes(activations);
    if (batchfit__sim_alloc(st->device, bytes) != 0) {
        uint64_t tried = round_up(bytes, s->granule);
        snprintf(report->message, sizeof report->message,
                 "out of memory: tried to allocate %llu bytes (%llu free)",
                 (unsigned long long)tried, (unsigned long long)sim_free_bytes(s));
        /* What a framework's OOM message tells: in use plus the failed request. */
        report->peak_known = 1;
        report->peak_bytes = s->in_use + tried;
        return BATCHFIT_OOM;
    }
    batchfit__sim_free(st->device, bytes);
    return BATCHFIT_FITS;
}

static void sim_step_release(void *state)
{
    sim_step *st = state;
    batchfit__sim_free(st->device, st->fixed);
    batchfit__free(&st->device->ctx->allocator, st);
}

static const batchfit_step sim_step_def = {
    sizeof(batchfit_step), "synthetic sim step", 1, sim_step_build, sim_step_run, NULL,
    sim_step_release,
};

const batchfit_step *batchfit_sim_step(void)
{
    return &sim_step_def;
}
