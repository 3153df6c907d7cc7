/* NVML, loaded at run time: no NVIDIA header or library is needed to build.
 * Only the few types and entry points used are declared here; versioned
 * names are looked up first; required and optional symbols are kept apart;
 * every failure unwinds through one exit path that closes the library. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVML_SUCCESS 0
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_VALUE_NOT_AVAILABLE UINT64_C(0xFFFFFFFFFFFFFFFF)

/* The symbol names, newest first, and where each pointer goes. */
#define SLOT(field) offsetof(batchfit__nvml, field)

static const batchfit__dl_symbol nvml_symbols[] = {
    {{"nvmlInit_v2", "nvmlInit", NULL}, SLOT(init), 1},
    {{"nvmlShutdown", NULL, NULL}, SLOT(shutdown), 1},
    {{"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount", NULL}, SLOT(device_count), 1},
    {{"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex", NULL}, SLOT(by_index), 1},
    {{"nvmlDeviceGetName", NULL, NULL}, SLOT(name), 1},
    {{"nvmlDeviceGetUUID", NULL, NULL}, SLOT(uuid), 1},
    {{"nvmlDeviceGetMemoryInfo", NULL, NULL}, SLOT(memory_v1), 1},
    {{"nvmlDeviceGetMemoryInfo_v2", NULL, NULL}, SLOT(memory_v2), 0},
    {{"nvmlDeviceGetHandleByUUID", NULL, NULL}, SLOT(by_uuid), 0},
    {{"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", NULL}, SLOT(pci), 0},
    {{"nvmlDeviceGetComputeRunningProcesses_v3", NULL, NULL}, SLOT(processes_v3), 0},
    {{"nvmlDeviceGetComputeRunningProcesses_v2", NULL, NULL}, SLOT(processes_v2), 0},
    {{"nvmlDeviceGetComputeRunningProcesses", NULL, NULL}, SLOT(processes_v1), 0},
    {{"nvmlErrorString", NULL, NULL}, SLOT(error_string), 0},
};

static void reset(batchfit__nvml *n)
{
    batchfit__dl_unload(n->handle, n, sizeof *n, n->error, sizeof n->error);
}

const char *batchfit__nvml_strerror(const batchfit__nvml *n, int rc)
{
    const char *s = n->error_string ? n->error_string(rc) : NULL;
    return s ? s : "NVML error";
}

int batchfit__nvml_load(batchfit__nvml *n)
{
    memset(n, 0, sizeof *n);
    const char *override = getenv("BATCHFIT_NVML_LIBRARY");
    const char *paths[] = {override && *override ? override : "libnvidia-ml.so.1",
                           override && *override ? NULL : "libnvidia-ml.so"};
    const char *named_by = override && *override ? "BATCHFIT_NVML_LIBRARY" : NULL;
    n->handle = batchfit__dl_load(paths, 2, "NVML library", named_by, nvml_symbols,
                                  sizeof nvml_symbols / sizeof nvml_symbols[0], n, n->error,
                                  sizeof n->error);
    if (!n->handle) {
        reset(n);
        return -1;
    }
    int rc = n->init();
    if (rc != NVML_SUCCESS) {
        snprintf(n->error, sizeof n->error, "nvmlInit failed: %s (%d)",
                 batchfit__nvml_strerror(n, rc), rc);
        reset(n);
        return -1;
    }
    n->initialized = 1;
    return 0;
}

void batchfit__nvml_unload(batchfit__nvml *n)
{
    if (!n->handle)
        return;
    if (n->initialized)
        n->shutdown();
    n->error[0] = '\0';
    reset(n);
}

int batchfit__nvml_memory(const batchfit__nvml *n, void *dev, uint64_t *total, uint64_t *free_bytes)
{
    if (n->memory_v2) {
        /* nvmlMemory_v2_t: version, total, reserved, free, used (40 bytes). */
        struct {
            unsigned version;
            unsigned long long total, reserved, free, used;
        } m;
        memset(&m, 0, sizeof m);
        m.version = (unsigned)(sizeof m) | (2u << 24);
        if (n->memory_v2(dev, &m) == NVML_SUCCESS) {
            *total = m.total;
            *free_bytes = m.free;
            return 0;
        }
    }
    struct {
        unsigned long long total, free, used;
    } m1;
    if (n->memory_v1(dev, &m1) != NVML_SUCCESS)
        return -1;
    *total = m1.total;
    *free_bytes = m1.free;
    return 0;
}

/* The per-process list: ask the count first, then fill a buffer sized
 * generously and pre-filled with a pattern, and derive the entry stride
 * from what the driver wrote (some write a larger stride than the header's
 * struct); the process list may also grow between the two calls. */
int batchfit__nvml_process_usage(const batchfit__nvml *n, const batchfit_allocator *a, void *dev,
                                 const long *pids, unsigned npids, uint64_t *bytes)
{
    int (*fn)(void *, unsigned *, void *) = n->processes_v3;
    size_t header_stride = 24;
    if (!fn)
        fn = n->processes_v2;
    if (!fn) {
        fn = n->processes_v1;
        header_stride = 16;
    }
    if (!fn)
        return -1;
    unsigned count = 0;
    int rc = fn(dev, &count, NULL);
    if (rc == NVML_SUCCESS && count == 0) {
        *bytes = 0;
        return 0;
    }
    if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE)
        return -1;
    for (int attempt = 0; attempt < 4; attempt++) {
        unsigned room = count + 8;
        size_t size = (size_t)room * 64;
        unsigned char *buf = batchfit__alloc(a, size);
        if (!buf)
            return -1;
        memset(buf, 0xA5, size);
        unsigned got = room;
        rc = fn(dev, &got, buf);
        if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
            batchfit__free(a, buf);
            count = got > count ? got : count * 2 + 8;
            continue;
        }
        if (rc != NVML_SUCCESS) {
            batchfit__free(a, buf);
            return -1;
        }
        size_t written = size;
        while (written > 0 && buf[written - 1] == 0xA5)
            written--;
        size_t stride = header_stride;
        if (got > 0) {
            size_t guess = (written + got - 1) / got;
            guess = (guess + 7) / 8 * 8;
            if (guess > stride && guess <= 64)
                stride = guess;
        }
        uint64_t total = 0;
        for (unsigned i = 0; i < got; i++) {
            unsigned pid;
            unsigned long long used;
            memcpy(&pid, buf + i * stride, sizeof pid);
            memcpy(&used, buf + i * stride + 8, sizeof used);
            if (used == NVML_VALUE_NOT_AVAILABLE)
                continue;
            for (unsigned k = 0; k < npids; k++)
                if ((long)pid == pids[k]) {
                    total += used;
                    break;
                }
        }
        batchfit__free(a, buf);
        *bytes = total;
        return 0;
    }
    return -1;
}
