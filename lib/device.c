/* The device interface: opening a device from a spec and dispatching to its
 * backend's table of function pointers. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

static int open_spec(batchfit_ctx *ctx, const char *spec, batchfit_device **out)
{
    *out = NULL;
    batchfit_device *dev = batchfit__calloc(&ctx->allocator, 1, sizeof *dev);
    if (!dev)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory opening device \"%s\"",
                              spec);
    dev->ctx = ctx;
    dev->available = 1;
    dev->spec = batchfit__strdup(&ctx->allocator, spec);
    int rc;
    if (!dev->spec) {
        rc = batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory opening device \"%s\"",
                            spec);
    } else if (strcmp(spec, "sim") == 0 || strncmp(spec, "sim:", 4) == 0) {
        rc = batchfit__sim_open(ctx, spec[3] ? spec + 4 : "", dev);
    } else if (strcmp(spec, "host") == 0) {
        rc = batchfit__host_open(ctx, dev);
    } else if (strncmp(spec, "cuda:", 5) == 0 &&
               (strchr(spec + 5, ',') || strcmp(spec + 5, "all") == 0)) {
        rc = batchfit__gpus_open(ctx, spec + 5, dev);
    } else if (strncmp(spec, "cuda:", 5) == 0) {
        rc = batchfit__cuda_open(ctx, spec + 5, dev);
    } else {
        rc = batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                            "unknown device \"%s\" (expected auto, host, cuda:N, cuda:N,M,..., "
                            "cuda:all or sim:KEY=VALUE,...)",
                            spec);
    }
    if (rc) {
        batchfit_device_free(dev);
        return rc;
    }
    *out = dev;
    return BATCHFIT_OK;
}

/* "auto": the first NVIDIA GPU when one is usable, else the host. The one
 * place that choice is made (the CLI's probe and info both ask here). */
static int open_auto(batchfit_ctx *ctx, batchfit_device **out)
{
    batchfit_device *gpu = NULL;
    int rc = open_spec(ctx, "cuda:0", &gpu);
    if (rc)
        return rc;
    if (gpu->available) {
        *out = gpu;
        return BATCHFIT_OK;
    }
    char why[BATCHFIT_ERRMSG_MAX + 64];
    snprintf(why, sizeof why, "no usable NVIDIA GPU (%s); device auto uses the host's memory",
             gpu->reason);
    batchfit__log(ctx, BATCHFIT_LOG_WARN, "%s", why);
    batchfit_device_free(gpu);
    rc = open_spec(ctx, "host", out);
    /* Said now (batchfit info), and kept for a probe's result. */
    if (rc == BATCHFIT_OK)
        batchfit__copy((*out)->chosen, sizeof (*out)->chosen, why);
    return rc;
}

int batchfit_device_open(batchfit_ctx *ctx, const char *spec, batchfit_device **out)
{
    if (!ctx || !spec || !out)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "device: no spec given");
    *out = NULL;
    if (strcmp(spec, "auto") == 0)
        return open_auto(ctx, out);
    return open_spec(ctx, spec, out);
}

void batchfit_device_free(batchfit_device *device)
{
    if (!device)
        return;
    if (device->ops && device->ops->destroy)
        device->ops->destroy(device);
    batchfit__free(&device->ctx->allocator, device->spec);
    batchfit__free(&device->ctx->allocator, device);
}

const char *batchfit_device_spec(const batchfit_device *device)
{
    return device && device->spec ? device->spec : "none";
}

const char *batchfit_device_kind(const batchfit_device *device)
{
    return device && device->ops ? device->ops->kind : "none";
}

int batchfit_device_available(const batchfit_device *device, const char **reason)
{
    if (!device) {
        if (reason)
            *reason = "no device";
        return 0;
    }
    if (reason)
        *reason = device->available ? "" : device->reason;
    return device->available;
}

int batchfit_device_memory(batchfit_device *device, uint64_t *total_out, uint64_t *free_out)
{
    if (!device || !total_out || !free_out)
        return BATCHFIT_E_INVALID_ARGUMENT;
    if (!device->available)
        return batchfit__fail(device->ctx, BATCHFIT_E_NO_DEVICE, "device unavailable: %s",
                              device->reason);
    return device->ops->memory(device, total_out, free_out);
}

int batchfit__device_hold(batchfit_device *device, uint64_t bytes, uint64_t *held)
{
    *held = 0;
    if (!device->available)
        return batchfit__fail(device->ctx, BATCHFIT_E_NO_DEVICE, "device unavailable: %s",
                              device->reason);
    if (!device->ops->hold || bytes == 0)
        return BATCHFIT_OK;
    int rc = device->ops->hold(device, bytes);
    if (rc == BATCHFIT_OK)
        *held = bytes;
    return rc;
}

void batchfit__device_release(batchfit_device *device)
{
    if (device && device->available && device->ops->release_hold)
        device->ops->release_hold(device);
}

int batchfit_device_peak_reset(batchfit_device *device)
{
    if (!device)
        return BATCHFIT_E_INVALID_ARGUMENT;
    if (!device->available || !device->ops->peak_begin)
        return batchfit__fail(device->ctx, BATCHFIT_E_DEVICE, "device %s cannot measure peaks",
                              batchfit_device_kind(device));
    device->ops->peak_begin(device);
    return BATCHFIT_OK;
}

int batchfit_device_peak(batchfit_device *device, uint64_t *peak_out)
{
    if (!device || !peak_out)
        return BATCHFIT_E_INVALID_ARGUMENT;
    if (!device->available || !device->ops->peak_end)
        return batchfit__fail(device->ctx, BATCHFIT_E_DEVICE, "device %s cannot measure peaks",
                              batchfit_device_kind(device));
    return device->ops->peak_end(device, peak_out);
}

int batchfit_device_describe(const batchfit_device *device, batchfit_device_info *info)
{
    if (!device || !info || info->struct_size < sizeof *info)
        return BATCHFIT_E_INVALID_ARGUMENT;
    size_t size = info->struct_size;
    memset(info, 0, sizeof *info);
    info->struct_size = size;
    batchfit__copy(info->kind, sizeof info->kind, batchfit_device_kind(device));
    batchfit__copy(info->name, sizeof info->name, batchfit_device_kind(device));
    info->available = device->available;
    batchfit__copy(info->reason, sizeof info->reason, device->available ? "" : device->reason);
    if (device->ops && device->ops->describe && device->backend)
        device->ops->describe(device, info);
    return BATCHFIT_OK;
}

const char *batchfit_device_memory_note(const batchfit_device *device)
{
    if (!device || !device->available || !device->ops || strcmp(device->ops->kind, "host") != 0)
        return "";
    return device->note;
}

double batchfit_device_peak_spread(const batchfit_device *device)
{
    return device ? device->peak_spread : 0.0;
}

unsigned batchfit__device_gpus(const batchfit_device *device)
{
    if (!device || !device->available || !device->ops)
        return 0;
    if (device->ops->gpu_count)
        return device->ops->gpu_count(device);
    return strcmp(device->ops->kind, "cuda") == 0 ? 1 : 0;
}

batchfit_device *batchfit__device_gpu(const batchfit_device *device, unsigned i)
{
    if (i >= batchfit__device_gpus(device))
        return NULL;
    return device->ops->gpu ? device->ops->gpu(device, i) : (batchfit_device *)(uintptr_t)device;
}

int batchfit__device_is_list(const batchfit_device *device)
{
    return device && device->ops && device->ops->gpu_count;
}

size_t batchfit_device_gpu_count(const batchfit_device *device)
{
    return batchfit__device_gpus(device);
}

int batchfit_device_describe_gpu(const batchfit_device *device, size_t i,
                                 batchfit_device_info *info)
{
    if (i >= batchfit__device_gpus(device))
        return BATCHFIT_E_INVALID_ARGUMENT;
    return batchfit_device_describe(batchfit__device_gpu(device, (unsigned)i), info);
}
