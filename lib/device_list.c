/* Listing what is here: every backend with whether it can be used (and
 * why not), the devices that can be opened, and what "auto" picks. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

#define BACKENDS 4

typedef struct list_impl {
    batchfit_device_list pub; /* first, so the public pointer converts back */
    batchfit_allocator allocator;
    batchfit_backend_status backends[BACKENDS];
    char cuda_why[256];
    char nvml_why[256];
    char host_why[256];
    char **specs;
    batchfit_nvml_gpu *nvml_only;
} list_impl;

void batchfit_device_list_free(batchfit_device_list *list)
{
    if (!list)
        return;
    list_impl *l = (list_impl *)list;
    batchfit_allocator a = l->allocator;
    for (size_t i = 0; l->specs && i < l->pub.device_count; i++)
        batchfit__free(&a, l->specs[i]);
    batchfit__free(&a, l->specs);
    batchfit__free(&a, l->nvml_only);
    batchfit__free(&a, l);
}

/* The GPUs NVML sees, for a host where the CUDA driver shows none. */
static int list_nvml_only(batchfit_ctx *ctx, list_impl *l)
{
    batchfit__nvml n;
    if (batchfit__nvml_load(&n) != 0)
        return BATCHFIT_OK;
    unsigned count = 0;
    int rc = BATCHFIT_OK;
    if (n.device_count(&count) == 0 && count > 0) {
        l->nvml_only = batchfit__calloc(&ctx->allocator, count, sizeof *l->nvml_only);
        if (!l->nvml_only)
            rc = BATCHFIT_E_NO_MEMORY;
        for (unsigned i = 0; l->nvml_only && i < count; i++) {
            batchfit_nvml_gpu *g = &l->nvml_only[l->pub.nvml_only_count];
            void *dev = NULL;
            if (n.by_index(i, &dev) != 0)
                continue;
            g->index = i;
            if (n.name(dev, g->name, sizeof g->name) != 0)
                batchfit__copy(g->name, sizeof g->name, "NVIDIA GPU");
            if (n.uuid(dev, g->uuid, sizeof g->uuid) != 0)
                g->uuid[0] = '\0';
            g->memory_known =
                batchfit__nvml_memory(&n, dev, &g->total_bytes, &g->free_bytes) == 0;
            l->pub.nvml_only_count++;
        }
        l->pub.nvml_only = l->nvml_only;
    }
    batchfit__nvml_unload(&n);
    return rc;
}

int batchfit_device_list_create(batchfit_ctx *ctx, batchfit_device_list **out)
{
    if (!ctx || !out)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "device list: no output given");
    *out = NULL;
    list_impl *l = batchfit__calloc(&ctx->allocator, 1, sizeof *l);
    if (!l)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory listing devices");
    l->allocator = ctx->allocator;
    unsigned gpus = 0;
    int cuda_ok = batchfit__cuda_count(&gpus, l->cuda_why, sizeof l->cuda_why) == BATCHFIT_OK &&
                  gpus > 0;
    int nvml_ok = batchfit__nvml_usable(l->nvml_why, sizeof l->nvml_why);
    uint64_t total, available;
    int host_ok = batchfit__meminfo(&total, &available) == 0;
    if (!host_ok)
        snprintf(l->host_why, sizeof l->host_why, "cannot read /proc/meminfo");
    const batchfit_backend_status rows[BACKENDS] = {
        {"cuda", cuda_ok, cuda_ok ? "" : l->cuda_why},
        {"nvml", nvml_ok, nvml_ok ? "" : l->nvml_why},
        {"host", host_ok, l->host_why},
        {"sim", 1, ""},
    };
    memcpy(l->backends, rows, sizeof rows);
    l->pub.backends = l->backends;
    l->pub.backend_count = BACKENDS;
    size_t count = (cuda_ok ? gpus : 0) + (host_ok ? 1 : 0);
    l->specs = batchfit__calloc(&ctx->allocator, count ? count : 1, sizeof *l->specs);
    if (!l->specs) {
        batchfit_device_list_free(&l->pub);
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory listing devices");
    }
    l->pub.specs = (const char *const *)l->specs;
    for (unsigned i = 0; i < count; i++) {
        char spec[32];
        snprintf(spec, sizeof spec, cuda_ok && i < gpus ? "cuda:%u" : "host", i);
        l->specs[i] = batchfit__strdup(&ctx->allocator, spec);
        if (!l->specs[i]) {
            batchfit_device_list_free(&l->pub);
            return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory listing devices");
        }
        l->pub.device_count = i + 1;
    }
    if (!cuda_ok && nvml_ok && list_nvml_only(ctx, l) != BATCHFIT_OK) {
        batchfit_device_list_free(&l->pub);
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory listing devices");
    }
    /* Whatever batchfit_device_open("auto") opens, so the rule lives there. */
    batchfit_device *picked = NULL;
    int auto_gpu = batchfit_device_open(ctx, "auto", &picked) == BATCHFIT_OK &&
                   strcmp(picked->spec, "cuda:0") == 0;
    batchfit_device_free(picked);
    l->pub.auto_spec = auto_gpu ? "cuda:0" : "host";
    *out = &l->pub;
    return BATCHFIT_OK;
}
