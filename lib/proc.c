/* Readers of the kernel's process and memory accounting under /proc:
 * MemTotal/MemAvailable, a process's own RSS and high-water mark (with
 * its reset through clear_refs), and the resident memory of a process tree. */
#include "internal.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* A "Key:   N kB" line of /proc/PID/status. */
static int status_kib(const char *pid, const char *key, uint64_t *bytes)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%s/status", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t klen = strlen(key);
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            *bytes = strtoull(line + klen + 1, NULL, 10) * 1024;
            found = 0;
            break;
        }
    }
    fclose(f);
    return found;
}

int batchfit__self_rss(uint64_t *bytes)
{
    return status_kib("self", "VmRSS", bytes);
}

int batchfit__self_hwm(uint64_t *bytes)
{
    return status_kib("self", "VmHWM", bytes);
}

int batchfit__self_hwm_reset(void)
{
    /* "5" resets the peak RSS (VmHWM) to the current RSS (Linux 4.0+). */
    int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, "5", 1);
    close(fd);
    return n == 1 ? 0 : -1;
}

/* Reads ppid, start time and RSS pages of one process from /proc/PID/stat
 * (the command name may hold spaces and parentheses: parse after the last ')'). */
static int read_stat(const char *pid_text, long *ppid, unsigned long long *start,
                     long *rss_pages)
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
    /* Fields after the name: 3 state, 4 ppid, ..., 22 starttime, 24 rss. */
    char state;
    long pp, rss;
    unsigned long long st;
    if (sscanf(p + 2, "%c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d "
                      "%llu %*u %ld",
               &state, &pp, &st, &rss) != 4)
        return -1;
    *ppid = pp;
    *start = st;
    *rss_pages = state == 'Z' ? 0 : rss;
    return 0;
}

static int pidset_has(const batchfit__pidset *set, long pid, unsigned long long start)
{
    for (unsigned i = 0; i < set->count; i++)
        if (set->pid[i] == pid && set->start[i] == start)
            return 1;
    return 0;
}

int batchfit__proc_tree_rss(long root, batchfit__pidset *seen, uint64_t *rss_bytes)
{
    /* Descendants are found by walking /proc and following parent links;
     * a process whose parent already died was reparented to us (we are a
     * child subreaper), so our own children count as part of the trial. */
    long self = (long)getpid();
    long pids[BATCHFIT__PIDSET_MAX], ppids[BATCHFIT__PIDSET_MAX], rss[BATCHFIT__PIDSET_MAX];
    unsigned long long starts[BATCHFIT__PIDSET_MAX];
    unsigned n = 0;
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < BATCHFIT__PIDSET_MAX) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        if (read_stat(e->d_name, &ppids[n], &starts[n], &rss[n]) != 0)
            continue;
        pids[n] = strtol(e->d_name, NULL, 10);
        n++;
    }
    closedir(d);
    unsigned char in_tree[BATCHFIT__PIDSET_MAX] = {0};
    for (unsigned i = 0; i < n; i++)
        if (pids[i] == root || (ppids[i] == self && pids[i] != self) ||
            pidset_has(seen, pids[i], starts[i]))
            in_tree[i] = 1;
    /* Close the set under "child of a member"; depth is small in practice. */
    for (int changed = 1; changed;) {
        changed = 0;
        for (unsigned i = 0; i < n; i++) {
            if (in_tree[i])
                continue;
            for (unsigned j = 0; j < n; j++) {
                if (in_tree[j] && ppids[i] == pids[j]) {
                    in_tree[i] = 1;
                    changed = 1;
                    break;
                }
            }
        }
    }
    uint64_t total = 0;
    long page = sysconf(_SC_PAGESIZE);
    for (unsigned i = 0; i < n; i++) {
        if (!in_tree[i])
            continue;
        total += (uint64_t)rss[i] * (uint64_t)page;
        if (!pidset_has(seen, pids[i], starts[i]) && seen->count < BATCHFIT__PIDSET_MAX) {
            seen->pid[seen->count] = pids[i];
            seen->start[seen->count] = starts[i];
            seen->count++;
        }
    }
    *rss_bytes = total;
    return 0;
}

int batchfit__proc_alive(long pid, unsigned long long start)
{
    char text[32];
    long ppid, rss;
    unsigned long long st;
    snprintf(text, sizeof text, "%ld", pid);
    return read_stat(text, &ppid, &st, &rss) == 0 && st == start;
}
