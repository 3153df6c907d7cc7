#include "test.h"

#include "internal.h"
#include "cgroup_helpers.h"

#include <fcntl.h>
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

/* The memory limit on a process is the tightest of its cgroup's and its
 * ancestors': a process in a cgroup of 1 GiB inside one of 96 MiB is held
 * to 96 MiB (the outer cgroup named), with room for what it holds less;
 * outside any limit there is none (or the machine's own, when the test
 * runs in a limited cgroup). */
TEST(cgroup_memory_limit_is_the_tightest_ancestor_s)
{
    uint64_t before_limit = 0, before_room = 0;
    char where[BATCHFIT__CGROUP_PATH_MAX];
    int limited_before = batchfit__cgroup_memory_limit(&before_limit, &before_room, where,
                                                       sizeof where) == 0;
    test_cgroups *c = test_cgroups_open(UINT64_C(96) << 20, UINT64_C(1) << 30);
    if (!c)
        return;
    CHECK_EQ(c->made, 0);
    int pipefd[2];
    CHECK_EQ(pipe(pipefd), 0);
    pid_t child = fork();
    if (child == 0) {
        close(pipefd[0]);
        struct {
            int rc;
            uint64_t limit, room;
            char where[BATCHFIT__CGROUP_PATH_MAX];
        } got = {-1, 0, 0, ""};
        if (batchfit__cgroup_join_self(&c->inner, c->procs) == 0) {
            /* 16 MiB held, which the room leaves out. */
            size_t n = (size_t)16 << 20;
            volatile char *p = malloc(n);
            for (size_t i = 0; p && i < n; i += 4096)
                p[i] = 1;
            got.rc = batchfit__cgroup_memory_limit(&got.limit, &got.room, got.where,
                                                   sizeof got.where);
        }
        ssize_t ignored = write(pipefd[1], &got, sizeof got);
        (void)ignored;
        _exit(0);
    }
    close(pipefd[1]);
    struct {
        int rc;
        uint64_t limit, room;
        char where[BATCHFIT__CGROUP_PATH_MAX];
    } got;
    ssize_t n = read(pipefd[0], &got, sizeof got);
    close(pipefd[0]);
    waitpid(child, NULL, 0);
    char outer_path[BATCHFIT__CGROUP_PATH_MAX];
    snprintf(outer_path, sizeof outer_path, "%s", c->outer.path);
    test_cgroups_close(c);
    CHECK_EQ(n, (ssize_t)sizeof got);
    CHECK_EQ(got.rc, 0);
    if (!limited_before || before_room > (UINT64_C(96) << 20)) {
        CHECK_EQ(got.limit, UINT64_C(96) << 20);
        CHECK_STR(got.where, outer_path);
        CHECK(got.room <= (UINT64_C(80) << 20));
        CHECK(got.room >= (UINT64_C(60) << 20));
    }
    /* This process, in neither, has no limit from them. */
    uint64_t limit = 0, room = 0;
    if (batchfit__cgroup_memory_limit(&limit, &room, where, sizeof where) == 0)
        CHECK(limited_before && limit == before_limit);
    else
        CHECK(!limited_before);
}
