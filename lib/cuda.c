/* The CUDA driver API, loaded at run time. The _v2 entry points are looked
 * up first: the unversioned ones keep 32-bit size arguments. A toolkit stub
 * (CUDA_ERROR_STUB_LIBRARY) means there is no driver. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_SUCCESS 0
#define CUDA_ERROR_STUB_LIBRARY 34
#define CUDA_ERROR_NO_DEVICE 100

#define SLOT(field) offsetof(batchfit__cuda, field)

static const batchfit__dl_symbol cuda_symbols[] = {
    {{"cuInit", NULL, NULL}, SLOT(init), 1},
    {{"cuDeviceGetCount", NULL, NULL}, SLOT(device_count), 1},
    {{"cuDeviceGet", NULL, NULL}, SLOT(device_get), 1},
    {{"cuDeviceGetName", NULL, NULL}, SLOT(name), 1},
    {{"cuDeviceTotalMem_v2", NULL, NULL}, SLOT(total_mem), 1},
    {{"cuDevicePrimaryCtxRetain", NULL, NULL}, SLOT(ctx_retain), 1},
    {{"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease", NULL}, SLOT(ctx_release), 1},
    {{"cuCtxSetCurrent", NULL, NULL}, SLOT(ctx_set_current), 1},
    {{"cuMemGetInfo_v2", NULL, NULL}, SLOT(mem_get_info), 1},
    {{"cuMemAlloc_v2", NULL, NULL}, SLOT(mem_alloc), 1},
    {{"cuMemFree_v2", NULL, NULL}, SLOT(mem_free), 1},
    {{"cuDeviceGetUuid_v2", "cuDeviceGetUuid", NULL}, SLOT(uuid), 0},
    {{"cuDeviceGetPCIBusId", NULL, NULL}, SLOT(pci_bus_id), 0},
    {{"cuDriverGetVersion", NULL, NULL}, SLOT(driver_version), 0},
    {{"cuGetErrorName", NULL, NULL}, SLOT(error_name), 0},
};

static void reset(batchfit__cuda *c)
{
    batchfit__dl_unload(c->handle, c, sizeof *c, c->error, sizeof c->error);
}

const char *batchfit__cuda_strerror(const batchfit__cuda *c, int rc)
{
    const char *name = NULL;
    if (c->error_name && c->error_name(rc, &name) == CUDA_SUCCESS && name)
        return name;
    return "CUDA error";
}

int batchfit__cuda_load(batchfit__cuda *c)
{
    memset(c, 0, sizeof *c);
    const char *override = getenv("BATCHFIT_CUDA_LIBRARY");
    const char *path = override && *override ? override : "libcuda.so.1";
    const char *named_by = override && *override ? "BATCHFIT_CUDA_LIBRARY" : NULL;
    c->handle = batchfit__dl_load(&path, 1, path, named_by, cuda_symbols,
                                  sizeof cuda_symbols / sizeof cuda_symbols[0], c, c->error,
                                  sizeof c->error);
    if (!c->handle) {
        reset(c);
        return -1;
    }
    int rc = c->init(0);
    if (rc != CUDA_SUCCESS) {
        char shown[128];
        if (rc == CUDA_ERROR_STUB_LIBRARY)
            snprintf(c->error, sizeof c->error,
                     "no NVIDIA driver: %s is the CUDA toolkit's stub (CUDA_ERROR_STUB_LIBRARY)",
                     batchfit__dl_shown_path(shown, sizeof shown, path));
        else if (rc == CUDA_ERROR_NO_DEVICE)
            snprintf(c->error, sizeof c->error, "no CUDA device (CUDA_ERROR_NO_DEVICE)");
        else
            snprintf(c->error, sizeof c->error, "cuInit failed: %s (%d)",
                     batchfit__cuda_strerror(c, rc), rc);
        reset(c);
        return -1;
    }
    return 0;
}

void batchfit__cuda_unload(batchfit__cuda *c)
{
    if (!c->handle)
        return;
    c->error[0] = '\0';
    reset(c);
}

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" from the 16 raw bytes. */
void batchfit__cuda_format_uuid(const unsigned char raw[16], char *out, size_t len)
{
    snprintf(out, len,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", raw[0],
             raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10],
             raw[11], raw[12], raw[13], raw[14], raw[15]);
}
