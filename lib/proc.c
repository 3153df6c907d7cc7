/* Readers of the kernel's process and memory accounting under /proc:
 * MemTotal/MemAvailable, a process's own RSS and high-water mark (with
 * its reset through clear_refs), and the resident memory of a process tree
 * (of several processes: their proportional set sizes, shared pages once). */
#include "internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int batchfit__meminfo(uint64_t *total, uint64_t *available)
{
    FILE *f = fopen("/proc/meminfo", "re");
    if (!f)
        return -1;
    char key[64];
    unsigned long long kib;
    int have = 0;
    while (fscanf(f, "%63s %llu kB\n", key, &kib) == 2) {
        if (strcmp(key, "MemTotal:") == 0) {
            *total = kib * 1024;
            have |= 1;
        } else if (strcmp(key, "MemAvailable:") == 0) {
            *available = kib * 1024;
            have |= 2;
        }
    }
    fclose(f);
    return have == 3 ? 0 : -1;
}

/* The number after key on its line of a "key value" file (/proc/vmstat,
 * and /proc/meminfo, whose keys end in ':' and values in " kB"). */
static int keyed_value(const char *path, const char *key, unsigned long long *value)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[256], name[64];
    unsigned long long v;
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        if (sscanf(line, "%63s %llu", name, &v) == 2 && strcmp(name, key) == 0) {
            *value = v;
            found = 1;
        }
    fclose(f);
    return found ? 0 : -1;
}

int batchfit__meminfo_shmem(uint64_t *bytes)
{
    unsigned long long kib;
    if (keyed_value("/proc/meminfo", "Shmem:", &kib) != 0)
        return -1;
    *bytes = (uint64_t)kib * 1024;
    return 0;
}

int batchfit__vmstat_oom_kills(uint64_t *count)
{
    unsigned long long v;
    if (keyed_value("/proc/vmstat", "oom_kill", &v) != 0)
        return -1;
    *count = v;
    return 0;
}

/* A "Key:   N kB" line of /proc/PID/FILE (status, smaps_rollup), and a
 * second key's where key2 is given (0 where the file has no such line). -1
 * with errno EACCES or EPERM where the file may not be read; -1 otherwise
 * where the process is gone (or its memory map is: it is exiting) or the
 * first key is not there. */
static int proc_kib2(const char *pid, const char *file, const char *key, uint64_t *bytes,
                     const char *key2, uint64_t *bytes2, int *found2)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%s/%s", pid, file);
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == EACCES || errno == EPERM ? -1 : (errno = ENOENT, -1);
    const char *keys[2] = {key, key2};
    uint64_t *out[2] = {bytes, bytes2};
    int wanted = key2 ? 2 : 1, seen = 0, found = -1;
    if (key2)
        *bytes2 = 0;
    if (found2)
        *found2 = 0;
    while (seen < wanted && fgets(line, sizeof line, f)) {
        for (int k = 0; k < wanted; k++) {
            size_t klen = strlen(keys[k]);
            if (strncmp(line, keys[k], klen) == 0 && line[klen] == ':') {
                *out[k] = strtoull(line + klen + 1, NULL, 10) * 1024;
                seen++;
                if (k == 0)
                    found = 0;
                else if (found2)
                    *found2 = 1;
            }
        }
    }
    fclose(f);
    if (found)
        errno = ENOENT;
    return found;
}

/* Where the caller reads one key. */
static int proc_kib(const char *pid, const char *file, const char *key, uint64_t *bytes)
{
    return proc_kib2(pid, file, key, bytes, NULL, NULL, NULL);
}

int batchfit__self_rss(uint64_t *bytes)
{
    return proc_kib("self", "status", "VmRSS", bytes);
}

int batchfit__self_anon(uint64_t *bytes)
{
    uint64_t anon, shmem;
    int both = 0;
    if (proc_kib2("self", "status", "RssAnon", &anon, "RssShmem", &shmem, &both) != 0 || !both)
        return -1;
    *bytes = anon + shmem;
    return 0;
}

int batchfit__self_hwm(uint64_t *bytes)
{
    return proc_kib("self", "status", "VmHWM", bytes);
}

int batchfit__proc_hwm(long pid, uint64_t *bytes)
{
    char text[32];
    snprintf(text, sizeof text, "%ld", pid);
    return proc_kib(text, "status", "VmHWM", bytes);
}

/* "5" to PID's clear_refs resets its peak RSS (VmHWM) to its current RSS
 * (Linux 4.0+). */
static int hwm_reset(const char *pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%s/clear_refs", pid);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, "5", 1);
    close(fd);
    return n == 1 ? 0 : -1;
}

int batchfit__self_hwm_reset(void)
{
    return hwm_reset("self");
}

int batchfit__proc_hwm_reset(long pid)
{
    char text[32];
    snprintf(text, sizeof text, "%ld", pid);
    return hwm_reset(text);
}

/* The sum of two keys of PID's smaps_rollup, read in one walk of its page
 * tables. */
static int rollup_pair(long pid, const char *clean_key, const char *dirty_key, uint64_t *bytes)
{
    char text[32];
    uint64_t clean = 0, dirty = 0;
    int found = 0;
    snprintf(text, sizeof text, "%ld", pid);
    if (proc_kib2(text, "smaps_rollup", clean_key, &clean, dirty_key, &dirty, &found) != 0 ||
        !found)
        return -1;
    *bytes = clean + dirty;
    return 0;
}

int batchfit__proc_private(long pid, uint64_t *bytes)
{
    return rollup_pair(pid, "Private_Clean", "Private_Dirty", bytes);
}

int batchfit__proc_shared(long pid, uint64_t *bytes)
{
    return rollup_pair(pid, "Shared_Clean", "Shared_Dirty", bytes);
}

/* Reads ppid, start time and RSS pages of one process from /proc/PID/stat
 * (the command name may hold spaces and parentheses: parse after the last
 * ')'), and its state letter where state is given. */
static int read_stat(const char *pid_text, long *ppid, unsigned long long *start,
                     long *rss_pages, char *state_out, long *session_out)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%s/stat", pid_text);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    /* Fields after the name: 3 state, 4 ppid, 5 pgrp, 6 session, ...,
     * 22 starttime, 24 rss. */
    char state;
    long pp, session, rss;
    unsigned long long st;
    if (sscanf(p + 2, "%c %ld %*d %ld %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d "
                      "%llu %*u %ld",
               &state, &pp, &session, &st, &rss) != 5)
        return -1;
    *ppid = pp;
    if (session_out)
        *session_out = session;
    *start = st;
    *rss_pages = state == 'Z' ? 0 : rss;
    if (state_out)
        *state_out = state;
    return 0;
}

/* One process of a /proc walk. */
struct batchfit__proc_entry {
    long pid;
    long ppid;
    unsigned long long start;
    long rss_pages;
    long session;
    int state; /* 0 undecided, 1 in the tree, 2 not */
};

void batchfit__proc_tree_init(batchfit__proc_tree *t, const batchfit_allocator *a)
{
    memset(t, 0, sizeof *t);
    t->allocator = a;
    t->proportional = 1;
    /* Without smaps_rollup (before Linux 4.14) every process would read as
     * gone: RSS it is. */
    t->rollup = access("/proc/self/smaps_rollup", R_OK) == 0;
}

void batchfit__proc_tree_clear(batchfit__proc_tree *t)
{
    t->count = 0;
}

void batchfit__proc_tree_free(batchfit__proc_tree *t)
{
    batchfit__free(t->allocator, t->member);
    batchfit__free(t->allocator, t->scan);
    batchfit__proc_tree_init(t, t->allocator);
}

static int member_cmp(const void *a, const void *b)
{
    const batchfit__proc_member *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int entry_cmp(const void *a, const void *b)
{
    const batchfit__proc_entry *x = a, *y = b;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Members [0, sorted) are sorted by pid and start time. */
static int member_has(const batchfit__proc_tree *t, unsigned sorted, long pid,
                      unsigned long long start)
{
    batchfit__proc_member key = {pid, start};
    return sorted && bsearch(&key, t->member, sorted, sizeof key, member_cmp) != NULL;
}

static int member_add(batchfit__proc_tree *t, long pid, unsigned long long start)
{
    if (t->count == t->capacity) {
        unsigned capacity = t->capacity ? t->capacity * 2 : 16;
        batchfit__proc_member *grown =
            batchfit__realloc(t->allocator, t->member, capacity * sizeof *grown);
        if (!grown)
            return BATCHFIT_E_NO_MEMORY;
        t->member = grown;
        t->capacity = capacity;
    }
    t->member[t->count].pid = pid;
    t->member[t->count].start = start;
    t->count++;
    return 0;
}

/* Reads every process into the scratch space, growing it to fit: one
 * allocation the first time (or when the host gains processes), none in
 * the steady state. Returns the number read, or -1 / BATCHFIT_E_NO_MEMORY
 * through *rc. */
static size_t scan_proc(batchfit__proc_tree *t, int *rc)
{
    for (int attempt = 0; attempt < 4; attempt++) {
        DIR *d = opendir("/proc");
        if (!d) {
            *rc = -1;
            return 0;
        }
        size_t n = 0, seen = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!isdigit((unsigned char)e->d_name[0]))
                continue;
            seen++;
            if (n == t->scan_capacity)
                continue;
            batchfit__proc_entry *x = &t->scan[n];
            if (read_stat(e->d_name, &x->ppid, &x->start, &x->rss_pages, NULL, &x->session) != 0)
                continue;
            x->pid = strtol(e->d_name, NULL, 10);
            x->state = 0;
            n++;
        }
        closedir(d);
        if (seen <= t->scan_capacity) {
            *rc = 0;
            return n;
        }
        /* Room for the host to gain a third more processes before the
         * next allocation. */
        size_t capacity = seen + seen / 2 + 64;
        batchfit__proc_entry *grown =
            batchfit__realloc(t->allocator, t->scan, capacity * sizeof *grown);
        if (!grown) {
            *rc = BATCHFIT_E_NO_MEMORY;
            return 0;
        }
        t->scan = grown;
        t->scan_capacity = capacity;
    }
    *rc = BATCHFIT_E_NO_MEMORY; /* the host outgrew every attempt: treated as no room */
    return 0;
}

static batchfit__proc_entry *scan_find(const batchfit__proc_tree *t, size_t n, long pid)
{
    batchfit__proc_entry key;
    key.pid = pid;
    return n ? bsearch(&key, t->scan, n, sizeof key, entry_cmp) : NULL;
}

/* Whether an undecided process descends from a member: follow its parent
 * links to the first decided process (or one not found: not in the tree),
 * then mark the path with the answer. A walk longer than the snapshot
 * means the snapshot saw a pid reused mid-walk: not in the tree. */
static int resolve(const batchfit__proc_tree *t, size_t n, batchfit__proc_entry *x)
{
    int answer = 2;
    batchfit__proc_entry *p = x;
    for (size_t steps = 0; p && steps <= n; steps++) {
        if (p->state) {
            answer = p->state;
            break;
        }
        p = scan_find(t, n, p->ppid);
    }
    for (p = x; p && !p->state; p = scan_find(t, n, p->ppid))
        p->state = answer;
    return answer;
}

static int spared(const long *spare, unsigned count, long pid)
{
    for (unsigned i = 0; i < count; i++)
        if (spare[i] == pid)
            return 1;
    return 0;
}

/* Whether a child of ours is a trial's orphan, reparented to us: not one
 * spared (the caller's children when the trial began, the guard), and not
 * in our own session. A trial runs in a session of its own, and a process
 * cannot join another session (nor a group in one), so no descendant of a
 * trial is in ours; a child the caller starts while the trial runs
 * (another thread's subprocess, a data loader's worker, one in a process
 * group of its own) is, unless it was given a session of its own, and is
 * the caller's. */
static int trial_orphan(const long *spare, unsigned count, long pid, int in_our_session)
{
    return !spared(spare, count, pid) && !in_our_session;
}

int batchfit__proc_tree_rss(batchfit__proc_tree *t, long root, uint64_t *rss_bytes)
{
    /* Descendants are found by walking /proc and following parent links;
     * a process whose parent already died was reparented to us (we are a
     * child subreaper), so our own children count as part of the trial
     * (all but those spared: the trial's guard, the caller's own). */
    long self = (long)getpid(), session = (long)getsid(0);
    int rc = 0;
    size_t n = scan_proc(t, &rc);
    if (rc)
        return rc;
    if (n)
        qsort(t->scan, n, sizeof *t->scan, entry_cmp);
    unsigned sorted = t->count;
    for (size_t i = 0; i < n; i++) {
        batchfit__proc_entry *x = &t->scan[i];
        if (x->pid == root ||
            (x->ppid == self && x->pid != self &&
             trial_orphan(t->spare, t->spare_count, x->pid, x->session == session)) ||
            member_has(t, sorted, x->pid, x->start))
            x->state = 1;
    }
    uint64_t total = 0;
    long page = sysconf(_SC_PAGESIZE);
    unsigned processes = 0;
    long only = 0;
    t->shmem_bytes = 0;
    /* Known where each process's mapped shared memory was read: by
     * smaps_rollup's Pss_Shmem (Linux 5.3) or, for one process, RssShmem. */
    t->shmem_known = 0;
    for (size_t i = 0; i < n; i++) {
        batchfit__proc_entry *x = &t->scan[i];
        if (resolve(t, n, x) != 1)
            continue;
        total += (uint64_t)x->rss_pages * (uint64_t)page;
        processes++;
        only = x->pid;
        if (!rc && !member_has(t, sorted, x->pid, x->start))
            rc = member_add(t, x->pid, x->start);
    }
    /* Several processes share pages: a forked worker (a DataLoader's) maps
     * its parent's heap and libraries, and summed RSS counts them once per
     * process (a PyTorch job with two workers read 621 MiB where it held
     * 273). Their proportional set sizes add up to each page once. One
     * process keeps the RSS: it is a counter read, where smaps_rollup walks
     * the page tables. A process whose PSS may not be read counts its RSS;
     * one gone since the walk, or exiting (its map released, as a trial's
     * workers are at its end: their RSS from the walk read 3 x 64 MiB of
     * pages already freed or still shared), counts nothing. A task that
     * shares its parent's memory map without being its thread (a vfork
     * child before its exec, a leak checker's tracer) is read as a second
     * map for as long as it lives. */
    if (processes > 1 && t->proportional && t->rollup) {
        total = 0;
        t->shmem_known = 1;
        for (size_t i = 0; i < n; i++) {
            batchfit__proc_entry *x = &t->scan[i];
            if (x->state != 1)
                continue;
            char text[32];
            uint64_t pss = 0, shmem = 0;
            int said = 0;
            snprintf(text, sizeof text, "%ld", x->pid);
            if (x->rss_pages &&
                proc_kib2(text, "smaps_rollup", "Pss", &pss, "Pss_Shmem", &shmem, &said) != 0)
                pss = errno == EACCES || errno == EPERM ? (uint64_t)x->rss_pages * (uint64_t)page
                                                        : 0;
            if (x->rss_pages && !said)
                t->shmem_known = 0;
            total += pss;
            t->shmem_bytes += shmem;
        }
    } else if (processes == 1 && t->proportional) {
        char text[32];
        snprintf(text, sizeof text, "%ld", only);
        t->shmem_known = proc_kib(text, "status", "RssShmem", &t->shmem_bytes) == 0;
    } else if (processes == 0) {
        t->shmem_known = 1; /* nothing maps any */
    }
    if (t->count)
        qsort(t->member, t->count, sizeof *t->member, member_cmp);
    *rss_bytes = total;
    return rc;
}

/* Calls visit(pid, state, in_our_session, userdata) for each process whose
 * parent is this one, until it returns nonzero. */
static void each_child(int (*visit)(long pid, char state, int in_our_session,
                                   unsigned long long start, void *userdata),
                       void *userdata)
{
    long self = (long)getpid(), own = (long)getsid(0);
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long ppid, rss, session;
        unsigned long long start;
        char state = 0;
        if (isdigit((unsigned char)e->d_name[0]) &&
            read_stat(e->d_name, &ppid, &start, &rss, &state, &session) == 0 && ppid == self &&
            visit(strtol(e->d_name, NULL, 10), state, session == own, start, userdata))
            break;
    }
    closedir(d);
}

typedef struct child_list {
    long *pids;
    unsigned max, count;
} child_list;

/* Dead ones in our own session too: a child that exited and waits for the
 * caller's waitpid is the caller's to reap (reaped by us, its exit status
 * was lost, and the caller's wait failed with ECHILD). One dead outside it
 * is a trial's orphan that came to us after the last trial's sweep (a
 * trial runs in a session of its own): left unspared, the sweep after
 * this trial reaps it. */
static int list_child(long pid, char state, int in_our_session, unsigned long long start,
                      void *userdata)
{
    (void)start;
    child_list *l = userdata;
    if (state != 'Z' || in_our_session)
        l->pids[l->count++] = pid;
    return l->count >= l->max;
}

unsigned batchfit__proc_children(long *pids, unsigned max)
{
    child_list l = {pids, max, 0};
    if (max)
        each_child(list_child, &l);
    return l.count;
}

typedef struct reaping {
    const long *spare;
    unsigned spare_count, killed;
    uint64_t *hwm;
    unsigned long long since;
} reaping;

void batchfit__proc_reap(long pid, uint64_t *hwm)
{
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    pid_t got;
    while ((got = wait4((pid_t)pid, NULL, 0, &ru)) < 0 && errno == EINTR)
        ;
    if (got == (pid_t)pid && hwm && (uint64_t)ru.ru_maxrss * 1024 > *hwm)
        *hwm = (uint64_t)ru.ru_maxrss * 1024;
}

static int reap_child(long pid, char state, int in_our_session, unsigned long long start,
                      void *userdata)
{
    (void)state;
    reaping *r = userdata;
    if (!trial_orphan(r->spare, r->spare_count, pid, in_our_session))
        return 0;
    kill((pid_t)pid, SIGKILL);
    /* One that began before the trial is not the trial's: an earlier
     * trial's late orphan, or a child of the caller's own in a session of
     * its own (a finished subprocess not yet waited for, whose 400 MiB were
     * charged to a trial that held next to nothing). */
    batchfit__proc_reap(pid, start >= r->since ? r->hwm : NULL);
    r->killed++;
    return 0;
}

unsigned batchfit__proc_reap_children(const long *spare, unsigned spare_count, uint64_t *hwm,
                                      unsigned long long since)
{
    reaping r = {spare, spare_count, 0, hwm, since};
    each_child(reap_child, &r);
    return r.killed;
}

int batchfit__proc_start(long pid, unsigned long long *start)
{
    char text[32];
    long ppid, rss;
    snprintf(text, sizeof text, "%ld", pid);
    return read_stat(text, &ppid, start, &rss, NULL, NULL);
}

int batchfit__proc_alive(long pid, unsigned long long start)
{
    unsigned long long st;
    return batchfit__proc_start(pid, &st) == 0 && st == start;
}

unsigned batchfit__proc_tree_running(const batchfit__proc_tree *t, long root, char *name,
                                     size_t len)
{
    unsigned running = 0;
    if (len)
        name[0] = '\0';
    for (unsigned i = 0; i < t->count; i++) {
        const batchfit__proc_member *m = &t->member[i];
        char text[32], state = 'X';
        long ppid, rss;
        unsigned long long start;
        snprintf(text, sizeof text, "%ld", m->pid);
        if (m->pid == root || read_stat(text, &ppid, &start, &rss, &state, NULL) != 0 ||
            start != m->start || state == 'Z' || state == 'X')
            continue;
        if (!running++ && len) {
            char path[64];
            snprintf(path, sizeof path, "/proc/%ld/comm", m->pid);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            ssize_t n = fd >= 0 ? read(fd, name, len - 1) : -1;
            if (fd >= 0)
                close(fd);
            name[n > 0 ? n : 0] = '\0';
            name[strcspn(name, "\n")] = '\0';
        }
    }
    return running;
}

int batchfit__proc_exited(long pid)
{
    char text[32], state = 0;
    long ppid, rss;
    unsigned long long st;
    snprintf(text, sizeof text, "%ld", pid);
    return read_stat(text, &ppid, &st, &rss, &state, NULL) == 0 && (state == 'Z' || state == 'X');
}
