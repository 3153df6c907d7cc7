/* A fake libcuda.so.1 for the tests: the driver API symbols batchfit uses,
 * over the scripted devices of fake_gpu.c. It applies CUDA_VISIBLE_DEVICES
 * (indices or UUID prefixes) as the real driver does. Built without
 * cuMemGetInfo_v2 when FAKE_MISSING_SYMBOL is defined. */
#include "fake_gpu.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define EXPORT __attribute__((visibility("default")))

static int current = -1; /* the device of the current context */

/* Physical devices in visible order. */
static int visible(int *map)
{
    int total = fake_gpu_count();
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    if (!env) {
        for (int i = 0; i < total; i++)
            map[i] = i;
        return total;
    }
    int n = 0;
    char buf[512];
    strncpy(buf, env, sizeof buf - 1);
    buf[sizeof buf - 1] = '\0';
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int found = -1;
        if (strncmp(tok, "GPU-", 4) == 0) {
            for (int i = 0; i < total && found < 0; i++) {
                char uuid[64];
                fake_gpu_uuid_text(i, uuid, sizeof uuid);
                if (strncasecmp(uuid, tok, strlen(tok)) == 0)
                    found = i;
            }
        } else {
            char *end;
            long v = strtol(tok, &end, 10);
            if (end != tok && *end == '\0' && v >= 0 && v < total)
                found = (int)v;
        }
        if (found < 0)
            break; /* the driver stops at the first invalid entry */
        map[n++] = found;
    }
    return n;
}

static int physical(int ordinal)
{
    int map[FAKE_MAX_GPUS];
    int n = visible(map);
    return ordinal >= 0 && ordinal < n ? map[ordinal] : -1;
}

EXPORT int cuInit(unsigned flags)
{
    (void)flags;
    const char *e = getenv("FAKE_CUDA_INIT");
    return e ? atoi(e) : 0;
}

EXPORT int cuDriverGetVersion(int *v)
{
    *v = 13000;
    return 0;
}

EXPORT int cuDeviceGetCount(int *count)
{
    int map[FAKE_MAX_GPUS];
    *count = visible(map);
    return 0;
}

EXPORT int cuDeviceGet(int *dev, int ordinal)
{
    int p = physical(ordinal);
    if (p < 0)
        return 101; /* CUDA_ERROR_INVALID_DEVICE */
    *dev = p;
    return 0;
}

EXPORT int cuDeviceGetName(char *buf, int len, int dev)
{
    char name[64];
    unsigned long long gib = fake_gpu_capacity(dev) >> 30;
    snprintf(name, sizeof name, "Fake GPU %lluGB", gib);
    strncpy(buf, name, (size_t)len);
    buf[len - 1] = '\0';
    return 0;
}

EXPORT int cuDeviceGetUuid_v2(unsigned char *uuid, int dev)
{
    fake_gpu_uuid(dev, uuid);
    return 0;
}

EXPORT int cuDeviceGetPCIBusId(char *buf, int len, int dev)
{
    snprintf(buf, (size_t)len, "0000:%02X:00.0", 0x3B + dev);
    return 0;
}

EXPORT int cuDeviceTotalMem_v2(size_t *bytes, int dev)
{
    *bytes = (size_t)fake_gpu_capacity(dev);
    return 0;
}

EXPORT int cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
    *ctx = (void *)(intptr_t)(dev + 1);
    return 0;
}

EXPORT int cuDevicePrimaryCtxRelease_v2(int dev)
{
    (void)dev;
    return 0;
}

EXPORT int cuCtxSetCurrent(void *ctx)
{
    current = (int)(intptr_t)ctx - 1;
    return 0;
}

#ifndef FAKE_MISSING_SYMBOL
EXPORT int cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    if (current < 0)
        return 201; /* CUDA_ERROR_INVALID_CONTEXT */
    uint64_t cap = fake_gpu_capacity(current), used = fake_gpu_used(current, 0);
    *total = (size_t)cap;
    *free_bytes = (size_t)(used > cap ? 0 : cap - used);
    return 0;
}
#endif

EXPORT int cuMemAlloc_v2(unsigned long long *ptr, size_t bytes)
{
    if (current < 0)
        return 201;
    const char *fail_on = getenv("FAKE_CUDA_ALLOC_FAIL_ON");
    if (getenv("FAKE_CUDA_ALLOC_FAIL") || (fail_on && atoi(fail_on) == current))
        return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    uint64_t handle;
    if (fake_gpu_alloc(current, bytes, &handle) != 0)
        return 2;
    *ptr = handle;
    return 0;
}

EXPORT int cuMemFree_v2(unsigned long long ptr)
{
    fake_gpu_free(ptr);
    return 0;
}

EXPORT int cuGetErrorName(int rc, const char **name)
{
    switch (rc) {
    case 0:
        *name = "CUDA_SUCCESS";
        return 0;
    case 2:
        *name = "CUDA_ERROR_OUT_OF_MEMORY";
        return 0;
    case 34:
        *name = "CUDA_ERROR_STUB_LIBRARY";
        return 0;
    case 100:
        *name = "CUDA_ERROR_NO_DEVICE";
        return 0;
    }
    *name = "CUDA_ERROR_UNKNOWN";
    return 0;
}
