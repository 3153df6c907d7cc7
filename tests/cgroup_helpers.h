/* Helpers for the tests that run a process under a cgroup's memory limit
 * (as a container or a job scheduler would). */
#ifndef BATCHFIT_CGROUP_HELPERS_H
#define BATCHFIT_CGROUP_HELPERS_H

#include "internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Two cgroups under this process's own: outer, and inner inside it, each
 * with a memory limit, and the path of inner's cgroup.procs (for a
 * process to join). made: 0, or -1 where they could not be made. */
typedef struct test_cgroups {
    batchfit__cgroup outer, inner;
    char procs[BATCHFIT__CGROUP_PATH_MAX];
    int made;
} test_cgroups;

static inline void test_cgroups_close(test_cgroups *c)
{
    if (!c)
        return;
    batchfit__cgroup_destroy(&c->inner);
    batchfit__cgroup_destroy(&c->outer);
    free(c);
}

/* On v2, a child cgroup has the memory controller only where its
 * parent's subtree_control names it: names it in cg's (a trial cgroup's
 * path). Nothing on v1. */
static inline void test_cgroup_give_memory(const batchfit__cgroup *cg)
{
    char file[BATCHFIT__CGROUP_PATH_MAX];
    if (cg->version != 2 ||
        batchfit__cgroup_file(cg, "cgroup.subtree_control", file, sizeof file) != 0)
        return;
    int fd = open(file, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t ignored = write(fd, "+memory", 7);
        (void)ignored;
        close(fd);
    }
}

/* Makes the pair; NULL, with the reason printed, where no cgroup memory
 * hierarchy is usable here (the test is skipped). */
static inline test_cgroups *test_cgroups_open(uint64_t outer_limit, uint64_t inner_limit)
{
    test_cgroups *c = calloc(1, sizeof *c);
    if (!c)
        abort();
    if (batchfit__cgroup_detect(&c->outer) != 0) {
        fprintf(stderr, "    skipped: %s\n", c->outer.why_not);
        free(c);
        return NULL;
    }
    c->made = -1;
    if (batchfit__cgroup_create(&c->outer, outer_limit, 1) != 0)
        return c;
    c->inner = c->outer;
    snprintf(c->inner.parent, sizeof c->inner.parent, "%s", c->outer.path);
    test_cgroup_give_memory(&c->outer);
    if (batchfit__cgroup_create(&c->inner, inner_limit, 1) == 0 &&
        batchfit__cgroup_file(&c->inner, "cgroup.procs", c->procs, sizeof c->procs) == 0)
        c->made = 0;
    return c;
}

/* The hierarchy's mount point of c's cgroups: this process's cgroup's
 * directory (c->outer.parent) less its path in /proc/self/cgroup; "" where
 * they do not match. */
static inline void test_cgroup_mount(const test_cgroups *c, char *out, size_t len)
{
    char line[1024];
    out[0] = '\0';
    FILE *f = fopen("/proc/self/cgroup", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *rel = strrchr(line, ':');
        int ours = c->outer.version == 2 ? strncmp(line, "0::", 3) == 0
                                         : strstr(line, "memory") != NULL;
        if (!ours || !rel)
            continue;
        rel[strcspn(rel, "\n")] = '\0';
        size_t have = strlen(c->outer.parent), n = strcmp(rel + 1, "/") == 0 ? 0 : strlen(rel + 1);
        if (have >= n && strcmp(c->outer.parent + have - n, rel + 1) == 0)
            snprintf(out, len, "%.*s", (int)(have - n), c->outer.parent);
    }
    if (f)
        fclose(f);
}

#endif
