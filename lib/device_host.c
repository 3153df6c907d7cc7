/* The host device: system RAM for CPU training. Capacity is MemTotal, free
 * memory is MemAvailable. Nothing is held as ballast (the budget is kept by
 * the child runner's watchdog and, with --enforce, a hard cap); in-process
 * trials measure this process's peak RSS, reset before each trial through
 * /proc/self/clear_refs. */
#include "internal.h"

#include <stdio.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static void host_destroy(batchfit_device *dev)
{
    (void)dev;
}

/* A cgroup's directory as the note shows it: its name may hold any byte
 * but '/' and NUL, and the note reaches terminals and JSON: bytes outside
 * printable ASCII (and the backslash) are written \xNN; a path too long
 * for out ends in "...", never cut unsaid. */
static void shown_path(const char *path, char *out, size_t len)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        char piece[8];
        int plain = *p >= 0x20 && *p < 0x7f && *p != '\\';
        int k = plain ? snprintf(piece, sizeof piece, "%c", *p)
                      : snprintf(piece, sizeof piece, "\\x%02x", *p);
        if (n + (size_t)k + 4 > len) {
            snprintf(out + n, len - n, "...");
            return;
        }
        memcpy(out + n, piece, (size_t)k);
        n += (size_t)k;
    }
    out[n] = '\0';
}

/* The machine's memory, or less where a cgroup limits this process (a
 * container's memory limit, a job scheduler's, a systemd slice's): the
 * kernel kills past that limit with the machine's memory still free, and
 * /proc/meminfo knows nothing of it. The trials run in cgroups under this
 * process's own, so the same limit holds them. */
static int host_memory(batchfit_device *dev, uint64_t *total, uint64_t *free_bytes)
{
    if (batchfit__meminfo(total, free_bytes) != 0)
        return batchfit__fail(dev->ctx, BATCHFIT_E_DEVICE,
                              "host: cannot read MemTotal and MemAvailable from /proc/meminfo");
    dev->note[0] = '\0';
    batchfit__memory_limit cg;
    if (batchfit__cgroup_memory_limit(&cg) == 0 && (cg.limit < *total || cg.room < *free_bytes)) {
        char limit_text[32], room_text[32], machine[32], limit_at[600], room_at[600];
        batchfit_format_bytes((double)cg.limit, limit_text, sizeof limit_text);
        batchfit_format_bytes((double)cg.room, room_text, sizeof room_text);
        batchfit_format_bytes((double)*total, machine, sizeof machine);
        shown_path(cg.limit_where, limit_at, sizeof limit_at);
        shown_path(cg.room_where, room_at, sizeof room_at);
        /* The room may be under another cgroup than the limit: a looser
         * limit above, shared with processes outside this one. */
        int same = strcmp(cg.limit_where, cg.room_where) == 0;
        snprintf(dev->note, sizeof dev->note,
                 "a cgroup limits this process's memory to %s (%s), %s%s%s%s (the machine has %s)",
                 limit_text, limit_at, same ? "" : "and ", room_text,
                 same ? " of it free" : " is free under the limit of ", same ? "" : room_at,
                 machine);
        *total = cg.limit < *total ? cg.limit : *total;
        *free_bytes = cg.room < *free_bytes ? cg.room : *free_bytes;
    }
    return BATCHFIT_OK;
}

static int host_usage(batchfit_device *dev, uint64_t *bytes)
{
    (void)dev;
    return batchfit__self_rss(bytes) == 0 ? BATCHFIT_OK : BATCHFIT_E_DEVICE;
}

/* The pages of this process that its peak (VmHWM) counts and MemAvailable
 * does not: its anonymous and shared memory. (Its file pages are in the
 * page cache, which MemAvailable counts as available already.) */
static int host_self_held(batchfit_device *dev, uint64_t *bytes)
{
    (void)dev;
    return batchfit__self_anon(bytes) == 0 ? BATCHFIT_OK : BATCHFIT_E_DEVICE;
}

/* Before the peak is reset, glibc gives back the heap the trials before
 * freed: it keeps freed memory (its adaptive mmap threshold moves large
 * blocks onto the heap after the first are freed), the reset lowers the
 * mark only to what is resident, and every later trial read what the
 * earlier ones left as its own (a reviewer's repeated probes answered 205,
 * then 80, then "the minimum does not fit"). */
static void host_peak_begin(batchfit_device *dev)
{
    (void)dev;
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    batchfit__self_hwm_reset();
}

static int host_peak_end(batchfit_device *dev, uint64_t *peak)
{
    (void)dev;
    return batchfit__self_hwm(peak) == 0 ? BATCHFIT_OK : BATCHFIT_E_DEVICE;
}

static const batchfit_device_ops host_ops = {
    .kind = "host",
    .destroy = host_destroy,
    .memory = host_memory,
    .usage = host_usage,
    .self_held = host_self_held,
    .peak_begin = host_peak_begin,
    .peak_end = host_peak_end,
};

int batchfit__host_open(batchfit_ctx *ctx, batchfit_device *dev)
{
    (void)ctx;
    dev->ops = &host_ops;
    uint64_t total, available;
    if (batchfit__meminfo(&total, &available) != 0) {
        dev->available = 0;
        snprintf(dev->reason, sizeof dev->reason, "/proc/meminfo has no MemTotal/MemAvailable");
    }
    /* Peak RSS of real CPU training varies between identical runs (glibc's
     * adaptive mmap threshold moves): 5-10% measured on a PyTorch job. */
    dev->peak_spread = 0.05;
    return BATCHFIT_OK;
}
