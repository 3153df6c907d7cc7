/* The host device: system RAM for CPU training. Capacity is MemTotal, free
 * memory is MemAvailable. Nothing is held as ballast (the budget is kept by
 * the child runner's watchdog and, with --enforce, a hard cap); in-process
 * trials measure this process's peak RSS, reset before each trial through
 * /proc/self/clear_refs, and what its child processes took on top. */
#include "internal.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#define HOST_CHILDREN 256 /* descendants followed through a trial */

/* A descendant of this process as a trial began, its peak reset: what it
 * held then of its own (its private memory). */
typedef struct host_child {
    long pid;
    unsigned long long start;
    uint64_t private_bytes;
    int reset; /* its peak was reset (else it is an old one, not read) */
} host_child;

typedef struct host_state {
    batchfit__proc_tree tree;
    host_child child[HOST_CHILDREN];
    unsigned children;
} host_state;

static void host_destroy(batchfit_device *dev)
{
    host_state *st = dev->backend;
    if (!st)
        return;
    batchfit__proc_tree_free(&st->tree);
    batchfit__free(&dev->ctx->allocator, st);
    dev->backend = NULL;
}

/* This process's descendants, in st->tree's members (this process among
 * them); 0, or -1 where they cannot be listed. */
static int descendants(host_state *st)
{
    uint64_t rss = 0;
    batchfit__proc_tree_clear(&st->tree);
    return batchfit__proc_tree_rss(&st->tree, (long)getpid(), &rss) == 0 ? 0 : -1;
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
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    batchfit__self_hwm_reset();
    /* The step's child processes (a multiprocessing pool's workers, a
     * DataLoader's) allocate outside this process's peak: a step whose
     * worker took 1 MiB a sample read 34.5 MiB at every size and was
     * answered 2000 where 265 fit. Each descendant's peak is reset too, and
     * what it holds of its own now is the base its growth is read from. */
    host_state *st = dev->backend;
    if (!st)
        return;
    st->children = 0;
    if (descendants(st) != 0)
        return;
    long self = (long)getpid();
    for (unsigned i = 0; i < st->tree.count && st->children < HOST_CHILDREN; i++) {
        host_child c = {st->tree.member[i].pid, st->tree.member[i].start, 0, 0};
        if (c.pid == self)
            continue;
        c.reset = batchfit__proc_hwm_reset(c.pid) == 0 &&
                  batchfit__proc_private(c.pid, &c.private_bytes) == 0;
        st->child[st->children++] = c;
    }
}

/* What the descendants took during the trial beyond what they held of
 * their own as it began: each one's peak less the pages it shares (with
 * this process: a forked worker maps its parent's heap and libraries,
 * counted in this process's peak already) less that base. A descendant
 * that began during the trial has no base; one whose peak could not be
 * reset, or that ended before the trial did, is not counted. */
static uint64_t children_growth(host_state *st)
{
    uint64_t sum = 0;
    long self = (long)getpid();
    if (descendants(st) != 0)
        return 0;
    for (unsigned i = 0; i < st->tree.count; i++) {
        const batchfit__proc_member *m = &st->tree.member[i];
        const host_child *before = NULL;
        for (unsigned k = 0; k < st->children && !before; k++)
            if (st->child[k].pid == m->pid && st->child[k].start == m->start)
                before = &st->child[k];
        uint64_t hwm, shared;
        if (m->pid == self || (before && !before->reset) ||
            batchfit__proc_hwm(m->pid, &hwm) != 0 || batchfit__proc_shared(m->pid, &shared) != 0)
            continue;
        uint64_t base = before ? before->private_bytes : 0;
        sum += hwm > shared + base ? hwm - shared - base : 0;
    }
    return sum;
}

static int host_peak_end(batchfit_device *dev, uint64_t *peak)
{
    if (batchfit__self_hwm(peak) != 0)
        return BATCHFIT_E_DEVICE;
    if (dev->backend)
        *peak += children_growth(dev->backend);
    return BATCHFIT_OK;
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
    dev->ops = &host_ops;
    /* Without it (no memory for it) a trial's peak is this process's only. */
    host_state *st = batchfit__calloc(&ctx->allocator, 1, sizeof *st);
    if (st) {
        batchfit__proc_tree_init(&st->tree, &ctx->allocator);
        st->tree.proportional = 0;
        dev->backend = st;
    }
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
