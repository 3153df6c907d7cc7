/* An NVIDIA GPU: the CUDA driver for the device itself (visible devices,
 * memory, the ballast that makes the margin and the VRAM limit real), NVML
 * for what each process uses. Device N is the N-th device the driver shows,
 * so CUDA_VISIBLE_DEVICES (indices or UUIDs) applies as it does for the
 * training program; NVML ignores that variable, so the two are matched by
 * UUID. A missing driver, library or permission is a reason, never a crash. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CUDA_SUCCESS 0
#define BALLAST_CHUNKS 4096
/* The ballast is taken in chunks as large as the driver grants, halving
 * down to this, so fragmentation does not stop a hold that fits. */
#define BALLAST_MIN_CHUNK (UINT64_C(64) << 20)

typedef struct cuda_state {
    batchfit__cuda cuda;
    batchfit__nvml nvml;
    int have_nvml;
    int ordinal;
    int device;
    void *context;
    void *nvml_device;
    char name[96];
    char uuid[96];
    char pci[32];
    unsigned long long ballast[BALLAST_CHUNKS];
    unsigned ballast_count;
} cuda_state;

/* The current context is per thread and other devices may have made
 * theirs current since: make ours current before every call that needs it. */
static int make_current(cuda_state *st)
{
    return st->context ? st->cuda.ctx_set_current(st->context) : 0;
}

static void release_ballast(cuda_state *st)
{
    if (st->ballast_count)
        make_current(st);
    for (unsigned i = 0; i < st->ballast_count; i++)
        st->cuda.mem_free(st->ballast[i]);
    st->ballast_count = 0;
}

static void cuda_destroy(batchfit_device *dev)
{
    cuda_state *st = dev->backend;
    if (!st)
        return;
    if (st->cuda.handle) {
        release_ballast(st);
        if (st->context)
            st->cuda.ctx_release(st->device);
        batchfit__cuda_unload(&st->cuda);
    }
    batchfit__nvml_unload(&st->nvml);
    batchfit__free(&dev->ctx->allocator, st);
    dev->backend = NULL;
}

static int cuda_memory(batchfit_device *dev, uint64_t *total, uint64_t *free_bytes)
{
    cuda_state *st = dev->backend;
    size_t f = 0, t = 0;
    int rc = make_current(st);
    if (rc == CUDA_SUCCESS)
        rc = st->cuda.mem_get_info(&f, &t);
    if (rc != CUDA_SUCCESS)
        return batchfit__fail(dev->ctx, BATCHFIT_E_DEVICE, "cuda:%d: cuMemGetInfo failed: %s (%d)",
                              st->ordinal, batchfit__cuda_strerror(&st->cuda, rc), rc);
    *total = t;
    *free_bytes = f;
    return BATCHFIT_OK;
}

static int cuda_hold(batchfit_device *dev, uint64_t bytes)
{
    cuda_state *st = dev->backend;
    uint64_t held = 0, chunk = bytes;
    int current = make_current(st);
    if (current != CUDA_SUCCESS)
        return batchfit__fail(dev->ctx, BATCHFIT_E_DEVICE, "cuda:%d: cannot make its context "
                              "current: %s", st->ordinal, batchfit__cuda_strerror(&st->cuda, current));
    while (held < bytes) {
        uint64_t want = bytes - held < chunk ? bytes - held : chunk;
        unsigned long long ptr = 0;
        int rc = st->ballast_count < BALLAST_CHUNKS ? st->cuda.mem_alloc(&ptr, (size_t)want) : 2;
        if (rc == CUDA_SUCCESS) {
            st->ballast[st->ballast_count++] = ptr;
            held += want;
            continue;
        }
        if (chunk / 2 >= BALLAST_MIN_CHUNK && st->ballast_count < BALLAST_CHUNKS) {
            chunk /= 2;
            continue;
        }
        release_ballast(st);
        return batchfit__fail(dev->ctx, BATCHFIT_E_DEVICE,
                              "cuda:%d: could not hold %llu bytes of ballast (held %llu): %s",
                              st->ordinal, (unsigned long long)bytes, (unsigned long long)held,
                              batchfit__cuda_strerror(&st->cuda, rc));
    }
    return BATCHFIT_OK;
}

static void cuda_release_hold(batchfit_device *dev)
{
    release_ballast(dev->backend);
}

static int cuda_process_usage(batchfit_device *dev, const long *pids, unsigned npids,
                              uint64_t *bytes)
{
    cuda_state *st = dev->backend;
    if (!st->have_nvml)
        return BATCHFIT_E_DEVICE;
    return batchfit__nvml_process_usage(&st->nvml, &dev->ctx->allocator, st->nvml_device, pids,
                                        npids, bytes) == 0
               ? BATCHFIT_OK
               : BATCHFIT_E_DEVICE;
}

static int cuda_usage(batchfit_device *dev, uint64_t *bytes)
{
    long self = (long)getpid();
    return cuda_process_usage(dev, &self, 1, bytes);
}

static void cuda_describe(const batchfit_device *dev, batchfit_device_info *info)
{
    const cuda_state *st = dev->backend;
    info->index = st->ordinal;
    batchfit__copy(info->name, sizeof info->name, st->name);
    batchfit__copy(info->uuid, sizeof info->uuid, st->uuid);
    batchfit__copy(info->pci_bus_id, sizeof info->pci_bus_id, st->pci);
    info->per_process_memory = st->have_nvml;
    batchfit__copy(info->per_process_note, sizeof info->per_process_note, dev->note);
}

static const batchfit_device_ops cuda_ops = {
    .kind = "cuda",
    .destroy = cuda_destroy,
    .memory = cuda_memory,
    .hold = cuda_hold,
    .release_hold = cuda_release_hold,
    .usage = cuda_usage,
    .process_usage = cuda_process_usage,
    .describe = cuda_describe,
};

/* Finds this device in NVML by UUID (NVML's order is not CUDA's). */
static void attach_nvml(cuda_state *st, char *why, size_t len)
{
    if (batchfit__nvml_load(&st->nvml) != 0) {
        snprintf(why, len, "%s", st->nvml.error);
        return;
    }
    if (st->uuid[0] && st->nvml.by_uuid && st->nvml.by_uuid(st->uuid, &st->nvml_device) == 0) {
        st->have_nvml = 1;
        return;
    }
    unsigned count = 0;
    if (st->nvml.device_count(&count) == 0) {
        for (unsigned i = 0; i < count && !st->have_nvml; i++) {
            void *h = NULL;
            char uuid[96] = "";
            if (st->nvml.by_index(i, &h) == 0 && st->nvml.uuid(h, uuid, sizeof uuid) == 0 &&
                strcmp(uuid, st->uuid) == 0) {
                st->nvml_device = h;
                st->have_nvml = 1;
            }
        }
    }
    if (!st->have_nvml) {
        snprintf(why, len, "NVML has no device with UUID %s", st->uuid[0] ? st->uuid : "(unknown)");
        batchfit__nvml_unload(&st->nvml);
    }
}

int batchfit__cuda_open(batchfit_ctx *ctx, const char *index, batchfit_device *dev)
{
    /* A device index is digits only (0 included), below 1024. */
    uint64_t n = 0;
    size_t digits = strspn(index, "0123456789");
    for (size_t i = 0; i < digits && n < 1024; i++)
        n = n * 10 + (uint64_t)(index[i] - '0');
    if (digits == 0 || index[digits] != '\0' || n >= 1024)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "device \"cuda:%s\": the index must be a whole number from 0 to 1023",
                              index);
    cuda_state *st = batchfit__calloc(&ctx->allocator, 1, sizeof *st);
    if (!st)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory opening cuda:%s", index);
    dev->ops = &cuda_ops;
    dev->backend = st;
    st->ordinal = (int)n;
    if (batchfit__cuda_load(&st->cuda) != 0) {
        dev->available = 0;
        snprintf(dev->reason, sizeof dev->reason, "%s", st->cuda.error);
        return BATCHFIT_OK;
    }
    int count = 0, rc = st->cuda.device_count(&count);
    if (rc != CUDA_SUCCESS || st->ordinal >= count) {
        dev->available = 0;
        snprintf(dev->reason, sizeof dev->reason, "cuda:%d: %d visible CUDA device%s%s",
                 st->ordinal, rc == CUDA_SUCCESS ? count : 0, count == 1 ? "" : "s",
                 getenv("CUDA_VISIBLE_DEVICES") ? " (CUDA_VISIBLE_DEVICES is set)" : "");
        return BATCHFIT_OK;
    }
    if ((rc = st->cuda.device_get(&st->device, st->ordinal)) != CUDA_SUCCESS ||
        (rc = st->cuda.ctx_retain(&st->context, st->device)) != CUDA_SUCCESS ||
        (rc = st->cuda.ctx_set_current(st->context)) != CUDA_SUCCESS) {
        dev->available = 0;
        snprintf(dev->reason, sizeof dev->reason, "cuda:%d: cannot open the device: %s (%d)",
                 st->ordinal, batchfit__cuda_strerror(&st->cuda, rc), rc);
        return BATCHFIT_OK;
    }
    if (st->cuda.name(st->name, (int)sizeof st->name, st->device) != CUDA_SUCCESS)
        snprintf(st->name, sizeof st->name, "CUDA device %d", st->ordinal);
    unsigned char raw[16];
    if (st->cuda.uuid && st->cuda.uuid(raw, st->device) == CUDA_SUCCESS)
        batchfit__cuda_format_uuid(raw, st->uuid, sizeof st->uuid);
    if (st->cuda.pci_bus_id)
        st->cuda.pci_bus_id(st->pci, (int)sizeof st->pci, st->device);
    char why[256] = "";
    attach_nvml(st, why, sizeof why);
    if (!st->have_nvml)
        batchfit__log(ctx, BATCHFIT_LOG_INFO,
                      "cuda:%d: no per-process memory (%s); trial peaks come from the device's "
                      "free memory",
                      st->ordinal, why);
    batchfit__copy(dev->note, sizeof dev->note, why);
    return BATCHFIT_OK;
}

int batchfit__cuda_count(unsigned *count, char *why, size_t why_len)
{
    *count = 0;
    batchfit__cuda c;
    if (batchfit__cuda_load(&c) != 0) {
        batchfit__errf(why, why_len, "%s", c.error);
        return BATCHFIT_E_NO_DEVICE;
    }
    int n = 0;
    int rc = c.device_count(&n);
    batchfit__cuda_unload(&c);
    if (rc != CUDA_SUCCESS) {
        batchfit__errf(why, why_len, "cuDeviceGetCount failed (%d)", rc);
        return BATCHFIT_E_NO_DEVICE;
    }
    *count = n > 0 ? (unsigned)n : 0;
    if (*count == 0)
        batchfit__errf(why, why_len, "0 visible CUDA devices");
    return BATCHFIT_OK;
}

int batchfit__nvml_usable(char *why, size_t why_len)
{
    batchfit__nvml n;
    if (batchfit__nvml_load(&n) != 0) {
        batchfit__errf(why, why_len, "%s", n.error);
        return 0;
    }
    batchfit__nvml_unload(&n);
    return 1;
}
