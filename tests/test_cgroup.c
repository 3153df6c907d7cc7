#include "test.h"

#include "internal.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Where a cgroup memory hierarchy is usable (root on this project's
 * machines), a trial cgroup accounts a process that joins it, caps it and
 * goes away; elsewhere detection says why not. */
TEST(cgroup_accounts_caps_and_removes)
{
    batchfit__cgroup *cg = calloc(1, sizeof *cg);
    CHECK(cg != NULL);
    if (batchfit__cgroup_detect(cg) != 0) {
        CHECK(cg->version == 0);
        CHECK(cg->why_not[0] != '\0');
        free(cg);
        return;
    }
    CHECK(cg->version == 1 || cg->version == 2);
    CHECK_EQ(batchfit__cgroup_create(cg, UINT64_C(256) << 20), 0);
    char procs[BATCHFIT__CGROUP_PATH_MAX];
    CHECK_EQ(batchfit__cgroup_file(cg, "cgroup.procs", procs, sizeof procs), 0);
    int ready[2];
    CHECK_EQ(pipe(ready), 0);
    pid_t child = fork();
    if (child == 0) {
        close(ready[0]);
        if (batchfit__cgroup_join_self(cg, procs) != 0)
            _exit(3);
        size_t n = (size_t)40 << 20;
        volatile char *p = malloc(n);
        for (size_t i = 0; p && i < n; i += 4096)
            p[i] = 1;
        ssize_t ignored = write(ready[1], "x", 1);
        (void)ignored;
        for (;;)
            pause();
    }
    close(ready[1]);
    char c;
    ssize_t got = read(ready[0], &c, 1);
    close(ready[0]);
    uint64_t usage = 0, peak = 0, kills = 99;
    int u = batchfit__cgroup_resident(cg, &usage);
    int pk = batchfit__cgroup_peak(cg, &peak);
    int k = batchfit__cgroup_oom_kills(cg, &kills);
    char path[BATCHFIT__CGROUP_PATH_MAX];
    snprintf(path, sizeof path, "%s", cg->path);
    batchfit__cgroup_destroy(cg); /* kills the child, removes the cgroup */
    int status = 0;
    waitpid(child, &status, 0);
    struct stat st;
    int gone = stat(path, &st) != 0;
    free(cg);
    CHECK_EQ(got, 1);
    CHECK_EQ(u, 0);
    CHECK(usage >= (UINT64_C(40) << 20));
    if (pk == 0)
        CHECK(peak >= usage);
    if (k == 0)
        CHECK_EQ(kills, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    CHECK(gone);
}
