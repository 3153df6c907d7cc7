/* The fake driver's state: devices from FAKE_GPUS, allocations in the file
 * FAKE_STATE, locked with flock so processes see each other's memory. An
 * allocation of a process that died is gone, as with a real driver. */
#include "fake_gpu.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int fake_gpu_count(void)
{
    const char *spec = getenv("FAKE_GPUS");
    if (!spec || !*spec)
        return 0;
    int n = 1;
    for (const char *p = spec; *p; p++)
        n += *p == ',';
    return n > FAKE_MAX_GPUS ? FAKE_MAX_GPUS : n;
}

uint64_t fake_gpu_capacity(int device)
{
    const char *p = getenv("FAKE_GPUS");
    for (int i = 0; p && i < device; i++) {
        p = strchr(p, ',');
        if (p)
            p++;
    }
    if (!p)
        return 0;
    char *end;
    double v = strtod(p, &end);
    if (strncmp(end, "GiB", 3) == 0)
        v *= 1073741824.0;
    else if (strncmp(end, "MiB", 3) == 0)
        v *= 1048576.0;
    return (uint64_t)v;
}

void fake_gpu_uuid(int device, unsigned char out[16])
{
    for (int i = 0; i < 16; i++)
        out[i] = (unsigned char)(0x10 * (device + 1) + i);
}

void fake_gpu_uuid_text(int device, char *out, unsigned len)
{
    unsigned char r[16];
    fake_gpu_uuid(device, r);
    snprintf(out, len,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0], r[1],
             r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14],
             r[15]);
}

static FILE *open_state(const char *mode, int lock)
{
    const char *path = getenv("FAKE_STATE");
    if (!path)
        return NULL;
    int fd = open(path, O_RDWR | O_CREAT, 0600);
    if (fd < 0)
        return NULL;
    flock(fd, lock);
    FILE *f = fdopen(fd, mode);
    if (!f)
        close(fd);
    return f;
}

static int alive(long pid)
{
    return kill((pid_t)pid, 0) == 0 || pid == (long)getpid();
}

typedef struct entry {
    long pid;
    int device;
    uint64_t bytes;
    uint64_t handle;
} entry;

static int read_entries(FILE *f, entry *e, int max)
{
    int n = 0;
    rewind(f);
    while (n < max && fscanf(f, "%ld %d %llu %llu", &e[n].pid, &e[n].device,
                             (unsigned long long *)&e[n].bytes,
                             (unsigned long long *)&e[n].handle) == 4)
        if (alive(e[n].pid))
            n++;
    return n;
}

static void write_entries(FILE *f, const entry *e, int n)
{
    rewind(f);
    if (ftruncate(fileno(f), 0) != 0)
        return;
    for (int i = 0; i < n; i++)
        fprintf(f, "%ld %d %llu %llu\n", e[i].pid, e[i].device, (unsigned long long)e[i].bytes,
                (unsigned long long)e[i].handle);
    fflush(f);
}

#define MAX_ENTRIES 4096

uint64_t fake_gpu_used(int device, long pid)
{
    static entry e[MAX_ENTRIES];
    FILE *f = open_state("r+", LOCK_SH);
    if (!f)
        return 0;
    int n = read_entries(f, e, MAX_ENTRIES);
    fclose(f);
    uint64_t used = 0;
    for (int i = 0; i < n; i++)
        if (e[i].device == device && (pid == 0 || e[i].pid == pid))
            used += e[i].bytes;
    return used;
}

int fake_gpu_processes(int device, long *pids, uint64_t *bytes, int max)
{
    static entry e[MAX_ENTRIES];
    FILE *f = open_state("r+", LOCK_SH);
    if (!f)
        return 0;
    int n = read_entries(f, e, MAX_ENTRIES), count = 0;
    fclose(f);
    for (int i = 0; i < n; i++) {
        if (e[i].device != device)
            continue;
        int k = 0;
        while (k < count && pids[k] != e[i].pid)
            k++;
        if (k == count) {
            if (count == max)
                continue;
            pids[count] = e[i].pid;
            bytes[count++] = 0;
        }
        bytes[k] += e[i].bytes;
    }
    return count;
}

int fake_gpu_alloc(int device, uint64_t bytes, uint64_t *handle)
{
    static entry e[MAX_ENTRIES];
    FILE *f = open_state("r+", LOCK_EX);
    if (!f)
        return -1;
    int n = read_entries(f, e, MAX_ENTRIES - 1);
    uint64_t used = 0, next = 1;
    for (int i = 0; i < n; i++) {
        if (e[i].device == device)
            used += e[i].bytes;
        if (e[i].handle >= next)
            next = e[i].handle + 1;
    }
    if (used + bytes > fake_gpu_capacity(device)) {
        write_entries(f, e, n);
        fclose(f);
        return -1;
    }
    e[n] = (entry){(long)getpid(), device, bytes, (next << 4) | (uint64_t)device};
    *handle = e[n].handle;
    write_entries(f, e, n + 1);
    fclose(f);
    return 0;
}

void fake_gpu_free(uint64_t handle)
{
    static entry e[MAX_ENTRIES];
    FILE *f = open_state("r+", LOCK_EX);
    if (!f)
        return;
    int n = read_entries(f, e, MAX_ENTRIES), k = 0;
    for (int i = 0; i < n; i++)
        if (e[i].handle != handle)
            e[k++] = e[i];
    write_entries(f, e, k);
    fclose(f);
}
