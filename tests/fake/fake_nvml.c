/* A fake libnvidia-ml.so.1 for the tests: the NVML symbols batchfit uses,
 * over the scripted devices of fake_gpu.c, enumerated in reverse of CUDA's
 * order (as NVML's PCI order can differ from CUDA's), ignoring
 * CUDA_VISIBLE_DEVICES as NVML does. FAKE_NO_PROCESS_V2 leaves out the
 * newer process and memory calls; FAKE_MISSING_SYMBOL leaves out
 * nvmlDeviceGetMemoryInfo, which batchfit requires. */
#include "fake_gpu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define SUCCESS 0
#define INSUFFICIENT_SIZE 7

typedef struct handle {
    int device;
} handle;

static handle handles[FAKE_MAX_GPUS];

static int nvml_to_cuda(unsigned index)
{
    return fake_gpu_count() - 1 - (int)index;
}

EXPORT int nvmlInit_v2(void)
{
    const char *e = getenv("FAKE_NVML_INIT");
    return e ? atoi(e) : 0;
}

EXPORT int nvmlShutdown(void)
{
    return 0;
}

EXPORT int nvmlDeviceGetCount_v2(unsigned *count)
{
    *count = (unsigned)fake_gpu_count();
    return 0;
}

EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned index, handle **h)
{
    if ((int)index >= fake_gpu_count())
        return 2;
    handles[index].device = nvml_to_cuda(index);
    *h = &handles[index];
    return 0;
}

EXPORT int nvmlDeviceGetHandleByUUID(const char *uuid, handle **h)
{
    for (unsigned i = 0; (int)i < fake_gpu_count(); i++) {
        char text[64];
        fake_gpu_uuid_text(nvml_to_cuda(i), text, sizeof text);
        if (strcmp(text, uuid) == 0)
            return nvmlDeviceGetHandleByIndex_v2(i, h);
    }
    return 6; /* NOT_FOUND */
}

EXPORT int nvmlDeviceGetName(handle *h, char *buf, unsigned len)
{
    snprintf(buf, len, "Fake GPU %lluGB", (unsigned long long)(fake_gpu_capacity(h->device) >> 30));
    return 0;
}

EXPORT int nvmlDeviceGetUUID(handle *h, char *buf, unsigned len)
{
    fake_gpu_uuid_text(h->device, buf, len);
    return 0;
}

#ifndef FAKE_MISSING_SYMBOL
EXPORT int nvmlDeviceGetMemoryInfo(handle *h, unsigned long long *m)
{
    uint64_t cap = fake_gpu_capacity(h->device), used = fake_gpu_used(h->device, 0);
    m[0] = cap;
    m[1] = cap - used;
    m[2] = used;
    return 0;
}
#endif

/* Writes the process list at the stride FAKE_NVML_STRIDE (default: the
 * struct's), growing by FAKE_NVML_GROW entries after a count query. */
static int processes(handle *h, unsigned *count, unsigned char *infos, size_t struct_size)
{
    static int asked;
    long pids[256];
    uint64_t bytes[256];
    int n = fake_gpu_processes(h->device, pids, bytes, 200);
    const char *grow = getenv("FAKE_NVML_GROW");
    if (grow && asked) {
        for (int k = 0; k < atoi(grow) && n < 256; k++, n++) {
            pids[n] = 900000 + k; /* processes of others */
            bytes[n] = UINT64_C(1) << 20;
        }
    }
    if (*count < (unsigned)n || !infos) {
        asked = 1;
        *count = (unsigned)n;
        return n == 0 ? SUCCESS : INSUFFICIENT_SIZE;
    }
    asked = 0;
    const char *s = getenv("FAKE_NVML_STRIDE");
    size_t stride = s ? (size_t)atoi(s) : struct_size;
    for (int i = 0; i < n; i++) {
        unsigned char *e = infos + (size_t)i * stride;
        memset(e, 0, stride);
        unsigned pid = (unsigned)pids[i];
        unsigned long long used = bytes[i];
        memcpy(e, &pid, sizeof pid);
        memcpy(e + 8, &used, sizeof used);
        if (stride >= 24)
            memset(e + 16, 0xFF, 8); /* gpuInstanceId, computeInstanceId: not MIG */
    }
    *count = (unsigned)n;
    return SUCCESS;
}

EXPORT int nvmlDeviceGetComputeRunningProcesses(handle *h, unsigned *count, void *infos)
{
    return processes(h, count, infos, 16);
}

#ifndef FAKE_NO_PROCESS_V2
EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(handle *h, unsigned *count, void *infos)
{
    return processes(h, count, infos, 24);
}

EXPORT int nvmlDeviceGetMemoryInfo_v2(handle *h, unsigned *m)
{
    if (m[0] != (40u | (2u << 24)))
        return 2; /* a wrong version is an invalid argument, as NVML says */
    uint64_t cap = fake_gpu_capacity(h->device), used = fake_gpu_used(h->device, 0);
    unsigned long long v[4] = {cap, 0, cap - used, used};
    memcpy((unsigned char *)m + 8, v, sizeof v);
    return 0;
}
#endif

EXPORT const char *nvmlErrorString(int rc)
{
    return rc == 0 ? "Success" : rc == 9 ? "Driver Not Loaded" : "Unknown Error";
}
