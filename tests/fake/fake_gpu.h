/* Shared by the fake NVIDIA libraries the tests load instead of the real
 * ones: scripted devices and one state file through which every process's
 * allocations are seen by all, as a driver sees them.
 *
 *   FAKE_GPUS=80GiB,16GiB     devices in CUDA order (capacities)
 *   FAKE_STATE=PATH           allocations: "pid device bytes handle" lines
 *   FAKE_CUDA_INIT=N          cuInit returns N (34: the toolkit stub)
 *   FAKE_CUDA_ALLOC_FAIL=1    every cuMemAlloc_v2 fails with out of memory
 *   FAKE_CUDA_ALLOC_FAIL_ON=N every cuMemAlloc_v2 on device N (CUDA order, all
 *                             visible) fails with out of memory
 *   FAKE_NVML_INIT=N          nvmlInit returns N
 *   FAKE_NVML_STRIDE=N        process entries written N bytes apart
 *   FAKE_NVML_GROW=N          N more processes appear between the count and the fill call */
#ifndef FAKE_GPU_H
#define FAKE_GPU_H

#include <stdint.h>

#define FAKE_MAX_GPUS 8

int fake_gpu_count(void);
uint64_t fake_gpu_capacity(int device);
void fake_gpu_uuid(int device, unsigned char out[16]);
void fake_gpu_uuid_text(int device, char *out, unsigned len);
/* Bytes allocated on the device by live processes (pid 0: all). */
uint64_t fake_gpu_used(int device, long pid);
/* Live pids with allocations on the device, with their bytes. */
int fake_gpu_processes(int device, long *pids, uint64_t *bytes, int max);
int fake_gpu_alloc(int device, uint64_t bytes, uint64_t *handle);
void fake_gpu_free(uint64_t handle);

#endif
