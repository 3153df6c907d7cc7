/* A device of several NVIDIA GPUs ("cuda:0,2,3", "cuda:all"), for a command
 * that uses them all at once (torchrun --nproc_per_node N). Each GPU is a
 * "cuda:N" device of its own (device_cuda.c), so each has its own memory,
 * ballast and NVML handle; this file only holds them together. The probe
 * settles a budget and holds ballast on each (probe.c), and the runner
 * samples each (child.c). */
#include "internal.h"

#include <stdio.h>
#include <string.h>

typedef struct gpus_state {
    unsigned count;
    batchfit_device *gpu[BATCHFIT_MAX_GPUS];
} gpus_state;

static void gpus_destroy(batchfit_device *dev)
{
    gpus_state *st = dev->backend;
    if (!st)
        return;
    for (unsigned i = 0; i < st->count; i++)
        batchfit_device_free(st->gpu[i]);
    batchfit__free(&dev->ctx->allocator, st);
    dev->backend = NULL;
}

/* The GPU with the least free memory: with the same limits on each, its
 * budget is the smallest. */
static int gpus_memory(batchfit_device *dev, uint64_t *total, uint64_t *free_bytes)
{
    gpus_state *st = dev->backend;
    for (unsigned i = 0; i < st->count; i++) {
        uint64_t t = 0, f = 0;
        int rc = batchfit_device_memory(st->gpu[i], &t, &f);
        if (rc)
            return rc;
        if (i == 0 || f < *free_bytes) {
            *total = t;
            *free_bytes = f;
        }
    }
    return BATCHFIT_OK;
}

static void gpus_release_hold(batchfit_device *dev)
{
    gpus_state *st = dev->backend;
    for (unsigned i = 0; i < st->count; i++)
        batchfit__device_release(st->gpu[i]);
}

static void gpus_describe(const batchfit_device *dev, batchfit_device_info *info)
{
    const gpus_state *st = dev->backend;
    batchfit_device_info one;
    int same = 1, per_process = 1;
    char first[96] = "";
    size_t used = 0;
    info->name[0] = '\0';
    for (unsigned i = 0; i < st->count; i++) {
        memset(&one, 0, sizeof one);
        one.struct_size = sizeof one;
        batchfit_device_describe(st->gpu[i], &one);
        if (i == 0) {
            info->index = one.index;
            batchfit__copy(info->pci_bus_id, sizeof info->pci_bus_id, one.pci_bus_id);
            batchfit__copy(first, sizeof first, one.name);
        }
        same = same && strcmp(one.name, first) == 0;
        per_process = per_process && one.per_process_memory;
        if (!one.per_process_memory && !info->per_process_note[0])
            batchfit__copy(info->per_process_note, sizeof info->per_process_note,
                           one.per_process_note);
        int w = snprintf(info->name + used, sizeof info->name - used, "%s%s", i ? " + " : "",
                         one.name);
        if (w > 0)
            used = used + (size_t)w < sizeof info->name ? used + (size_t)w : sizeof info->name - 1;
    }
    if (same)
        snprintf(info->name, sizeof info->name, "%u x %s", st->count, first);
    info->uuid[0] = '\0';
    info->per_process_memory = per_process;
}

static unsigned gpus_count(const batchfit_device *dev)
{
    const gpus_state *st = dev->backend;
    return st->count;
}

static batchfit_device *gpus_gpu(const batchfit_device *dev, unsigned i)
{
    const gpus_state *st = dev->backend;
    return st->gpu[i];
}

static const batchfit_device_ops gpus_ops = {
    .kind = "cuda",
    .destroy = gpus_destroy,
    .memory = gpus_memory,
    .release_hold = gpus_release_hold,
    .describe = gpus_describe,
    .gpu_count = gpus_count,
    .gpu = gpus_gpu,
};

/* "0,2,3": indices from 0 to 1023, each once, at most BATCHFIT_MAX_GPUS. */
static int parse_list(batchfit_ctx *ctx, const char *list, unsigned *index, unsigned *count)
{
    *count = 0;
    const char *p = list;
    for (;;) {
        size_t digits = strspn(p, "0123456789");
        unsigned n = 0;
        for (size_t i = 0; i < digits && n < 1024; i++)
            n = n * 10 + (unsigned)(p[i] - '0');
        if (digits == 0 || (p[digits] != ',' && p[digits] != '\0') || n >= 1024)
            return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                                  "device \"cuda:%s\": expected GPU indices from 0 to 1023 "
                                  "separated by commas (cuda:0,2,3) or cuda:all",
                                  list);
        for (unsigned k = 0; k < *count; k++)
            if (index[k] == n)
                return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                                      "device \"cuda:%s\": GPU %u is listed twice", list, n);
        if (*count == BATCHFIT_MAX_GPUS)
            return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                                  "device \"cuda:%s\": at most %d GPUs", list, BATCHFIT_MAX_GPUS);
        index[(*count)++] = n;
        if (p[digits] == '\0')
            return BATCHFIT_OK;
        p += digits + 1;
    }
}

/* The device's spec with the list written out ("cuda:all" -> "cuda:0,1"). */
static int resolve_spec(batchfit_ctx *ctx, batchfit_device *dev, const unsigned *index,
                        unsigned count)
{
    char spec[8 + 5 * BATCHFIT_MAX_GPUS];
    size_t used = (size_t)snprintf(spec, sizeof spec, "cuda:");
    for (unsigned i = 0; i < count; i++)
        used += (size_t)snprintf(spec + used, sizeof spec - used, "%s%u", i ? "," : "", index[i]);
    char *copy = batchfit__strdup(&ctx->allocator, spec);
    if (!copy)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory opening %s", spec);
    batchfit__free(&ctx->allocator, dev->spec);
    dev->spec = copy;
    return BATCHFIT_OK;
}

int batchfit__gpus_open(batchfit_ctx *ctx, const char *list, batchfit_device *dev)
{
    unsigned index[BATCHFIT_MAX_GPUS], count = 0;
    if (strcmp(list, "all") == 0) {
        unsigned visible = 0;
        char why[256] = "";
        if (batchfit__cuda_count(&visible, why, sizeof why) != BATCHFIT_OK || visible == 0) {
            dev->ops = &gpus_ops;
            dev->available = 0;
            snprintf(dev->reason, sizeof dev->reason, "cuda:all: %s", why);
            return BATCHFIT_OK;
        }
        if (visible > BATCHFIT_MAX_GPUS) {
            batchfit__log(ctx, BATCHFIT_LOG_WARN,
                          "cuda:all: %u GPUs are visible; using the first %d", visible,
                          BATCHFIT_MAX_GPUS);
            visible = BATCHFIT_MAX_GPUS;
        }
        for (count = 0; count < visible; count++)
            index[count] = count;
    } else {
        int rc = parse_list(ctx, list, index, &count);
        if (rc)
            return rc;
    }
    gpus_state *st = batchfit__calloc(&ctx->allocator, 1, sizeof *st);
    if (!st)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory opening cuda:%s", list);
    dev->ops = &gpus_ops;
    dev->backend = st;
    int rc = resolve_spec(ctx, dev, index, count);
    for (unsigned i = 0; rc == BATCHFIT_OK && i < count; i++) {
        char spec[16];
        snprintf(spec, sizeof spec, "cuda:%u", index[i]);
        rc = batchfit_device_open(ctx, spec, &st->gpu[i]);
        if (rc)
            break;
        st->count = i + 1;
        const batchfit_device *gpu = st->gpu[i];
        if (!gpu->available && dev->available) {
            dev->available = 0;
            batchfit__copy(dev->reason, sizeof dev->reason, gpu->reason);
        }
        if (gpu->peak_spread > dev->peak_spread)
            dev->peak_spread = gpu->peak_spread;
        if (gpu->note[0] && !dev->note[0])
            batchfit__copy(dev->note, sizeof dev->note, gpu->note);
    }
    return rc;
}
