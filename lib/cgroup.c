/* Per-trial cgroups for child processes: detection (v2 with its memory
 * controller, else v1's memory hierarchy, else none), creation under our
 * own cgroup, the kernel's peak and OOM-kill accounting, a hard limit, and
 * teardown. Every failure here leaves the caller on its fallback (rusage
 * and sampling), never stuck. */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int read_text(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return 0;
}

static int write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = strlen(text);
    ssize_t n = write(fd, text, len);
    close(fd);
    return n == (ssize_t)len ? 0 : -1;
}

static int read_u64_file(const char *path, uint64_t *out)
{
    char buf[64];
    if (read_text(path, buf, sizeof buf) != 0)
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (errno || end == buf)
        return -1;
    *out = v;
    return 0;
}

/* Our own cgroup path for a hierarchy, from /proc/self/cgroup: the line
 * "0::/path" for v2, "N:...memory...:/path" for v1. */
static int own_cgroup(int version, char *path, size_t len)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return -1;
    char line[1024];
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *controllers = c1 + 1;
        int match = version == 2 ? strncmp(line, "0", 2) == 0 && controllers[0] == '\0'
                                 : strstr(controllers, "memory") != NULL;
        if (match) {
            snprintf(path, len, "%s", c2 + 1);
            found = 0;
            break;
        }
    }
    fclose(f);
    return found;
}

/* The mount point of a hierarchy, from /proc/self/mounts. */
static int mount_point(int version, char *path, size_t len)
{
    FILE *f = fopen("/proc/self/mounts", "re");
    if (!f)
        return -1;
    char dev[256], dir[512], type[64], opts[512];
    int found = -1;
    while (fscanf(f, "%255s %511s %63s %511s %*d %*d", dev, dir, type, opts) == 4) {
        int match = version == 2 ? strcmp(type, "cgroup2") == 0
                                 : strcmp(type, "cgroup") == 0 && strstr(opts, "memory") != NULL;
        if (match) {
            snprintf(path, len, "%s", dir);
            found = 0;
            break;
        }
    }
    fclose(f);
    return found;
}

static int path_join(char *out, size_t len, const char *a, const char *b, const char *c)
{
    int n = snprintf(out, len, "%s%s%s", a, b, c);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The inode of this process's PID namespace: a pid in a cgroup's name
 * means something only in the namespace it was taken in (a probe in a
 * container or under unshare -p shares its memory cgroup with probes
 * outside, where its pid is another process's or none). 0: unknown. */
static unsigned long long pid_namespace(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

/* Tries to make a test child cgroup under parent that has the memory
 * files we need; removes it again. */
static int probe_parent(int version, const char *parent, char *why, size_t why_len)
{
    char dir[BATCHFIT__CGROUP_PATH_MAX], file[BATCHFIT__CGROUP_PATH_MAX];
    char leaf[64];
    snprintf(leaf, sizeof leaf, "/batchfit-probe-%ld-%llu", (long)getpid(), pid_namespace());
    if (path_join(dir, sizeof dir, parent, leaf, "") != 0)
        return -1;
    if (mkdir(dir, 0755) != 0) {
        snprintf(why, why_len, "cannot create a cgroup under %s: %s", parent, strerror(errno));
        return -1;
    }
    const char *needed = version == 2 ? "/memory.current" : "/memory.max_usage_in_bytes";
    int ok = path_join(file, sizeof file, dir, needed, "") == 0 && file_exists(file);
    if (!ok)
        snprintf(why, why_len, "the memory controller is not enabled under %s", parent);
    rmdir(dir);
    return ok ? 0 : -1;
}

int batchfit__cgroup_detect(batchfit__cgroup *cg)
{
    memset(cg, 0, sizeof *cg);
    char mount[512], own[512], why[256] = "";
    /* v2 first: it is the future, and its memory.peak counts the whole tree. */
    if (mount_point(2, mount, sizeof mount) == 0 && own_cgroup(2, own, sizeof own) == 0 &&
        path_join(cg->parent, sizeof cg->parent, mount, own, "") == 0) {
        char controllers[256] = "";
        char file[BATCHFIT__CGROUP_PATH_MAX];
        if (path_join(file, sizeof file, cg->parent, "/cgroup.controllers", "") == 0 &&
            read_text(file, controllers, sizeof controllers) == 0 &&
            strstr(controllers, "memory") != NULL) {
            if (probe_parent(2, cg->parent, why, sizeof why) != 0 &&
                path_join(file, sizeof file, cg->parent, "/cgroup.subtree_control", "") == 0)
                write_text(file, "+memory");
            if (probe_parent(2, cg->parent, why, sizeof why) == 0) {
                cg->version = 2;
                return 0;
            }
        } else if (!why[0]) {
            snprintf(why, sizeof why, "cgroup v2 has no memory controller here");
        }
    }
    if (mount_point(1, mount, sizeof mount) == 0 && own_cgroup(1, own, sizeof own) == 0 &&
        path_join(cg->parent, sizeof cg->parent, mount, own, "") == 0 &&
        probe_parent(1, cg->parent, why, sizeof why) == 0) {
        cg->version = 1;
        return 0;
    }
    cg->version = 0;
    cg->parent[0] = '\0';
    snprintf(cg->why_not, sizeof cg->why_not, "%s", why[0] ? why : "no cgroup memory hierarchy");
    return -1;
}

int batchfit__cgroup_create(batchfit__cgroup *cg, uint64_t limit_bytes, int no_swap)
{
    static unsigned counter;
    char leaf[80];
    snprintf(leaf, sizeof leaf, "/batchfit-%ld-%u-%llu", (long)getpid(), ++counter,
             pid_namespace());
    if (path_join(cg->path, sizeof cg->path, cg->parent, leaf, "") != 0 ||
        mkdir(cg->path, 0755) != 0) {
        cg->path[0] = '\0';
        return -1;
    }
    if (limit_bytes) {
        /* The kernel keeps a limit in whole pages, rounded down: a limit
         * of a budget's bytes (rarely a page multiple) would sit up to a
         * page under the budget, so it is rounded up. */
        long page = sysconf(_SC_PAGESIZE);
        uint64_t size = page > 0 ? (uint64_t)page : 4096;
        if (limit_bytes <= UINT64_MAX - size)
            limit_bytes = (limit_bytes + size - 1) / size * size;
        char file[BATCHFIT__CGROUP_PATH_MAX], value[32];
        snprintf(value, sizeof value, "%llu", (unsigned long long)limit_bytes);
        const char *name = cg->version == 2 ? "/memory.max" : "/memory.limit_in_bytes";
        if (path_join(file, sizeof file, cg->path, name, "") != 0 || write_text(file, value) != 0) {
            rmdir(cg->path);
            cg->path[0] = '\0';
            return -1;
        }
        if (no_swap && cg->version == 2 &&
            path_join(file, sizeof file, cg->path, "/memory.swap.max", "") == 0)
            write_text(file, "0");
        /* v1: memory and swap together capped at the limit (where swap is
         * accounted), else no swapping in this cgroup's reclaim: on a host
         * with swap a trial under --enforce swapped its 400 MiB out past a
         * cap of 64 MiB and fitted. */
        if (no_swap && cg->version == 1 &&
            (path_join(file, sizeof file, cg->path, "/memory.memsw.limit_in_bytes", "") != 0 ||
             write_text(file, value) != 0) &&
            path_join(file, sizeof file, cg->path, "/memory.swappiness", "") == 0)
            write_text(file, "0");
    }
    return 0;
}

/* Joins the cgroup; called in the child between fork and exec, so it uses
 * only async-signal-safe calls. */
int batchfit__cgroup_join_self(const batchfit__cgroup *cg, const char *procs_file)
{
    (void)cg;
    int fd = open(procs_file, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, "0", 1);
    close(fd);
    return n == 1 ? 0 : -1;
}

int batchfit__cgroup_file(const batchfit__cgroup *cg, const char *name, char *out, size_t len)
{
    return path_join(out, len, cg->path, "/", name);
}

/* The value of a "key N" line of a memory.stat text. */
static int stat_value(const char *text, const char *key, uint64_t *value)
{
    size_t klen = strlen(key);
    const char *line = text;
    while (line) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
            *value = strtoull(line + klen + 1, NULL, 10);
            return 0;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return -1;
}

/* Anonymous plus shared memory (tmpfs, shm, shared anonymous mappings):
 * what the trial's processes hold and the kernel cannot drop. Page cache
 * (files the trial read or wrote, the interpreter's libraries when their
 * first reader was this trial) is reclaimable and left out. v1 counts THP in
 * rss (rss_huge is a part of it); total_* include child cgroups. */
int batchfit__cgroup_resident(const batchfit__cgroup *cg, uint64_t *bytes)
{
    char file[BATCHFIT__CGROUP_PATH_MAX], text[8192];
    if (!cg->path[0] || batchfit__cgroup_file(cg, "memory.stat", file, sizeof file) != 0 ||
        read_text(file, text, sizeof text) != 0)
        return -1;
    uint64_t anon = 0, shmem = 0;
    int v2 = cg->version == 2;
    if (stat_value(text, v2 ? "anon" : "total_rss", &anon) != 0 ||
        stat_value(text, v2 ? "shmem" : "total_shmem", &shmem) != 0)
        return -1;
    *bytes = anon + shmem;
    return 0;
}

int batchfit__cgroup_peak(const batchfit__cgroup *cg, uint64_t *bytes)
{
    char file[BATCHFIT__CGROUP_PATH_MAX];
    const char *name = cg->version == 2 ? "memory.peak" : "memory.max_usage_in_bytes";
    if (!cg->path[0] || batchfit__cgroup_file(cg, name, file, sizeof file) != 0)
        return -1;
    return read_u64_file(file, bytes);
}

/* The kernel's count of OOM kills in the cgroup (v2 memory.events, v1
 * memory.oom_control, both "oom_kill N"). */
int batchfit__cgroup_oom_kills(const batchfit__cgroup *cg, uint64_t *count)
{
    char file[BATCHFIT__CGROUP_PATH_MAX], text[1024];
    const char *name = cg->version == 2 ? "memory.events" : "memory.oom_control";
    if (!cg->path[0] || batchfit__cgroup_file(cg, name, file, sizeof file) != 0 ||
        read_text(file, text, sizeof text) != 0)
        return -1;
    const char *p = strstr(text, "oom_kill ");
    if (!p)
        return -1;
    *count = strtoull(p + 9, NULL, 10);
    return 0;
}

/* The owner pid in a trial cgroup's name: "batchfit-<pid>-<n>-<ns>" (a
 * trial) or "batchfit-probe-<pid>-<ns>" (detection), ns the owner's PID
 * namespace (pid_namespace; 0 where it could not be read; *has_ns 0 where
 * the name has none, as earlier versions wrote it); 0 for any other name. */
static long owner_pid(const char *name, unsigned long long *ns, int *has_ns)
{
    int probe = strncmp(name, "batchfit-probe-", 15) == 0;
    const char *p = probe ? name + 15 : strncmp(name, "batchfit-", 9) == 0 ? name + 9 : NULL;
    *ns = 0;
    *has_ns = 0;
    if (!p || *p < '1' || *p > '9')
        return 0;
    char *end;
    long pid = strtol(p, &end, 10);
    if (*end == '\0')
        return pid;
    if (*end != '-')
        return 0;
    if (!probe) { /* the trial's number */
        strtoul(end + 1, &end, 10);
        if (*end == '\0')
            return pid;
        if (*end != '-')
            return 0;
    }
    *ns = strtoull(end + 1, &end, 10);
    *has_ns = 1;
    return *end == '\0' ? pid : 0;
}

unsigned batchfit__cgroup_sweep(const batchfit__cgroup *cg)
{
    DIR *d = cg->version ? opendir(cg->parent) : NULL;
    if (!d)
        return 0;
    unsigned removed = 0;
    long self = (long)getpid();
    unsigned long long own_ns = pid_namespace();
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        unsigned long long ns;
        int has_ns;
        long owner = owner_pid(e->d_name, &ns, &has_ns);
        /* A live owner, or a pid reused since, keeps its cgroup: only a
         * certainly dead one (ESRCH, or a zombie its parent has not reaped
         * yet: a batchfit killed under timeout -s KILL stays one until its
         * shell waits, and kept its trials running meanwhile) is swept. An
         * owner in another PID namespace cannot be asked: its cgroup is
         * left to it (and its guard). A probe under unshare -p, pid 403
         * there and no process here, had its running trial killed by a
         * probe outside, and answered that batch 1 did not fit. */
        if (!owner || owner == self || (has_ns && (!ns || ns != own_ns)) ||
            ((kill((pid_t)owner, 0) == 0 || errno != ESRCH) && !batchfit__proc_exited(owner)))
            continue;
        batchfit__cgroup stale = *cg;
        if (path_join(stale.path, sizeof stale.path, cg->parent, "/", e->d_name) != 0)
            continue;
        batchfit__cgroup_destroy(&stale);
        removed++;
    }
    closedir(d);
    return removed;
}

unsigned batchfit__cgroup_kill(const batchfit__cgroup *cg)
{
    unsigned killed = 0;
    char file[BATCHFIT__CGROUP_PATH_MAX];
    if (!cg->path[0] || batchfit__cgroup_file(cg, "cgroup.procs", file, sizeof file) != 0)
        return 0;
    FILE *f = fopen(file, "re");
    long pid;
    while (f && fscanf(f, "%ld", &pid) == 1)
        if (pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
            killed++;
    if (f)
        fclose(f);
    return killed;
}

/* Removes dir and the cgroups inside it, killing what runs there, until
 * the deadline: the tree shares one (a deadline a level, each retried by
 * the level above, took 209 s over a frozen process two levels down).
 * Only a busy cgroup is retried; one that cannot be removed for another
 * reason (EPERM, EACCES) is left at once. */
static void destroy_until(const batchfit__cgroup *cg, double deadline)
{
    for (;;) {
        if (rmdir(cg->path) == 0 || errno != EBUSY)
            return;
        /* Its processes first (one of them may make cgroups inside it),
         * then what is inside. */
        batchfit__cgroup_kill(cg);
        DIR *d = opendir(cg->path);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (e->d_type != DT_DIR || strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            batchfit__cgroup inner = *cg;
            if (path_join(inner.path, sizeof inner.path, cg->path, "/", e->d_name) == 0)
                destroy_until(&inner, deadline);
        }
        if (d)
            closedir(d);
        if (rmdir(cg->path) == 0 || errno != EBUSY || batchfit__now() >= deadline)
            return;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Kills every process left in the cgroup, then removes it, and the
 * cgroups inside it first (a cgroup with children cannot be removed: a
 * stale one a sweep found with one inside was retried for a second by
 * every probe); a second in all at most. */
void batchfit__cgroup_destroy(batchfit__cgroup *cg)
{
    if (!cg->path[0])
        return;
    destroy_until(cg, batchfit__now() + 1.0);
    cg->path[0] = '\0';
}

/* A limit file's value: -1 where there is none (v2 "max", v1 2^63 less a
 * page) or it cannot be read. */
static int limit_value(const char *dir, const char *name, uint64_t *value)
{
    char file[BATCHFIT__CGROUP_PATH_MAX], text[64];
    if (path_join(file, sizeof file, dir, name, "") != 0 || read_text(file, text, sizeof text) != 0 ||
        strncmp(text, "max", 3) == 0)
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || v >= UINT64_C(1) << 62)
        return -1;
    *value = v;
    return 0;
}

/* The limit of one cgroup directory and the room under it. The limit: v1
 * memory.limit_in_bytes; v2 memory.max, or memory.high where lower (past
 * it the kernel throttles the group and reclaims from it at every
 * allocation: training there crawls). The room: the limit less what the
 * kernel cannot drop to make room before it kills: the usage less the
 * clean page cache (active or not: a program that had read 250 MiB of
 * files three times was held to 42 of its 300 MiB, and then ran 254 MiB
 * there); shared memory (tmpfs, shm) and dirty or written-back pages stay
 * counted. *reclaimable: the limit less what no reclaim frees, shared
 * memory alone (dirty pages are written back first: a trial that wrote a
 * 200 MiB file left them charged to the container, and a cap placed by
 * the room alone killed the next trials far under the budget). Returns -1
 * where the directory has no limit or its files cannot be read. */
static int limit_of(int version, const char *dir, uint64_t *limit, uint64_t *room,
                    uint64_t *reclaimable)
{
    uint64_t value = 0, high = 0;
    int has_max = limit_value(dir, version == 2 ? "/memory.max" : "/memory.limit_in_bytes", &value) == 0;
    if (version == 2 && limit_value(dir, "/memory.high", &high) == 0 && (!has_max || high < value)) {
        value = high;
        has_max = 1;
    }
    if (!has_max)
        return -1;
    char file[BATCHFIT__CGROUP_PATH_MAX], text[8192];
    uint64_t usage = 0;
    if (path_join(file, sizeof file, dir, version == 2 ? "/memory.current" : "/memory.usage_in_bytes",
                  "") != 0 ||
        read_u64_file(file, &usage) != 0)
        return -1;
    uint64_t cache = 0, shmem = 0, dirty = 0, writeback = 0;
    if (path_join(file, sizeof file, dir, "/memory.stat", "") == 0 &&
        read_text(file, text, sizeof text) == 0 &&
        stat_value(text, version == 2 ? "file" : "total_cache", &cache) == 0) {
        stat_value(text, version == 2 ? "shmem" : "total_shmem", &shmem);
        stat_value(text, version == 2 ? "file_dirty" : "total_dirty", &dirty);
        stat_value(text, version == 2 ? "file_writeback" : "total_writeback", &writeback);
    }
    uint64_t kept = shmem + dirty + writeback;
    uint64_t clean = cache > kept ? cache - kept : 0;
    uint64_t held = usage > clean ? usage - clean : 0;
    uint64_t files = cache > shmem ? cache - shmem : 0;
    uint64_t pinned = usage > files ? usage - files : 0;
    *limit = value;
    *room = value > held ? value - held : 0;
    *reclaimable = value > pinned ? value - pinned : 0;
    return 0;
}

int batchfit__cgroup_memory_limit(batchfit__memory_limit *out)
{
    int found = -1;
    memset(out, 0, sizeof *out);
    for (int version = 2; version >= 1; version--) {
        char mount[512], own[512], dir[BATCHFIT__CGROUP_PATH_MAX];
        if (mount_point(version, mount, sizeof mount) != 0 ||
            own_cgroup(version, own, sizeof own) != 0 || path_join(dir, sizeof dir, mount, own, "") != 0)
            continue;
        /* A container that sees its own cgroup mounted at the hierarchy's
         * mount point (no cgroup namespace) has no directory by its path:
         * the mount point is that cgroup. */
        if (!file_exists(dir))
            snprintf(dir, sizeof dir, "%s", mount);
        size_t root = strlen(mount);
        for (;;) {
            uint64_t l, r, w;
            if (limit_of(version, dir, &l, &r, &w) == 0) {
                if (found != 0 || w < out->reclaimable)
                    out->reclaimable = w;
                if (found != 0 || l < out->limit) {
                    out->limit = l;
                    snprintf(out->limit_where, sizeof out->limit_where, "%s", dir);
                }
                if (found != 0 || r < out->room) {
                    out->room = r;
                    snprintf(out->room_where, sizeof out->room_where, "%s", dir);
                }
                found = 0;
            }
            /* v1 without hierarchy (use_hierarchy 0, old kernels): what
             * is below this cgroup is not charged to it, nor above. */
            char file[BATCHFIT__CGROUP_PATH_MAX], flag[8];
            char *slash = strrchr(dir, '/');
            if (strlen(dir) <= root || !slash || (size_t)(slash - dir) < root)
                break;
            *slash = '\0';
            if (version == 1 && path_join(file, sizeof file, dir, "/memory.use_hierarchy", "") == 0 &&
                read_text(file, flag, sizeof flag) == 0 && flag[0] == '0')
                break;
        }
    }
    return found;
}
