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
    CHECK_EQ(batchfit__cgroup_create(cg, UINT64_C(256) << 20, 1), 0);
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

/* The first line of a trial cgroup's file, "" where it has none. */
static void cgroup_text(const batchfit__cgroup *cg, const char *name, char *text, size_t len)
{
    char file[BATCHFIT__CGROUP_PATH_MAX];
    text[0] = '\0';
    FILE *f = batchfit__cgroup_file(cg, name, file, sizeof file) == 0 ? fopen(file, "r") : NULL;
    if (f) {
        if (!fgets(text, (int)len, f))
            text[0] = '\0';
        fclose(f);
    }
}

/* A limit of a budget's bytes is never set under them: the kernel keeps
 * whole pages, rounded down, and a trial's cap at its budget (rarely a
 * page multiple) read back up to a page under it: a CI machine's failure
 * of cli_a_trial_s_cap_under_a_container_is_never_under_its_budget, where
 * the test's file was shared memory and the cap fell to the budget. */
TEST(cgroup_a_limit_is_never_set_under_its_bytes)
{
    batchfit__cgroup *cg = calloc(1, sizeof *cg);
    CHECK(cg != NULL);
    if (batchfit__cgroup_detect(cg) != 0) {
        free(cg);
        return;
    }
    const uint64_t limit = (UINT64_C(256) << 20) + 1;
    int made = batchfit__cgroup_create(cg, limit, 0);
    char text[64];
    cgroup_text(cg, cg->version == 2 ? "memory.max" : "memory.limit_in_bytes", text, sizeof text);
    batchfit__cgroup_destroy(cg);
    free(cg);
    CHECK_EQ(made, 0);
    unsigned long long set = strtoull(text, NULL, 10);
    CHECK(set >= limit);
    CHECK(set < limit + UINT64_C(65536));
}

/* A hard cap (--enforce) is not swapped past: on a v1 host with swap a
 * trial's 400 MiB went to swap under a cap of 64 MiB and fitted. v1 caps
 * memory and swap together at the limit (or, where swap is not accounted,
 * sets swappiness 0); v2 sets memory.swap.max 0. A cap that is no hard one
 * leaves swap as it is. */
TEST(cgroup_a_hard_cap_is_not_swapped_past)
{
    batchfit__cgroup *cg = calloc(1, sizeof *cg);
    CHECK(cg != NULL);
    if (batchfit__cgroup_detect(cg) != 0) {
        free(cg);
        return;
    }
    const uint64_t limit = UINT64_C(64) << 20;
    char memsw[64], swappiness[64], swap_max[64], soft_memsw[64];
    int made = batchfit__cgroup_create(cg, limit, 1);
    cgroup_text(cg, "memory.memsw.limit_in_bytes", memsw, sizeof memsw);
    cgroup_text(cg, "memory.swappiness", swappiness, sizeof swappiness);
    cgroup_text(cg, "memory.swap.max", swap_max, sizeof swap_max);
    batchfit__cgroup_destroy(cg);
    int soft = batchfit__cgroup_create(cg, limit, 0);
    cgroup_text(cg, "memory.memsw.limit_in_bytes", soft_memsw, sizeof soft_memsw);
    batchfit__cgroup_destroy(cg);
    int version = cg->version;
    free(cg);
    CHECK_EQ(made, 0);
    CHECK_EQ(soft, 0);
    if (version == 1) {
        CHECK(strtoull(memsw, NULL, 10) == limit || strtoull(swappiness, NULL, 10) == 0);
        if (memsw[0])
            CHECK(strtoull(soft_memsw, NULL, 10) > limit);
    } else if (swap_max[0]) {
        CHECK_STR(swap_max, "0\n");
    }
}

/* What a process in the inner of two limited cgroups reads: it holds 16
 * MiB and has written and read back a 24 MiB file (page cache the kernel
 * drops before it kills). */
typedef struct limit_reading {
    int rc;
    batchfit__memory_limit m;
} limit_reading;

static limit_reading read_limit_inside(const test_cgroups *c)
{
    limit_reading got;
    memset(&got, 0, sizeof got);
    got.rc = -2;
    int pipefd[2];
    if (pipe(pipefd) != 0)
        return got;
    pid_t child = fork();
    if (child == 0) {
        close(pipefd[0]);
        got.rc = -3;
        if (batchfit__cgroup_join_self(&c->inner, c->procs) == 0) {
            size_t n = (size_t)16 << 20;
            volatile char *p = malloc(n);
            for (size_t i = 0; p && i < n; i += 4096)
                p[i] = 1;
            char path[1100];
            const char *dir = test_page_cache_dir();
            snprintf(path, sizeof path, "%s/batchfit-cgroup-cache-%ld", dir ? dir : ".",
                     (long)getpid());
            FILE *f = fopen(path, "w+");
            static char block[1 << 20];
            memset(block, 7, sizeof block);
            for (int i = 0; f && i < 24; i++)
                fwrite(block, 1, sizeof block, f);
            if (f) {
                fflush(f);
                fsync(fileno(f));
                rewind(f);
                for (int pass = 0; pass < 3; pass++, rewind(f))
                    while (fread(block, 1, sizeof block, f) == sizeof block)
                        ;
                fclose(f);
            }
            got.rc = batchfit__cgroup_memory_limit(&got.m);
            unlink(path);
        }
        ssize_t ignored = write(pipefd[1], &got, sizeof got);
        (void)ignored;
        _exit(0);
    }
    close(pipefd[1]);
    ssize_t n = read(pipefd[0], &got, sizeof got);
    close(pipefd[0]);
    waitpid(child, NULL, 0);
    if (n != (ssize_t)sizeof got)
        got.rc = -4;
    return got;
}

/* The memory limit on a process is the tightest of its cgroup's and its
 * ancestors': in a cgroup of 1 GiB inside one of 96 MiB it is 96 MiB, the
 * outer cgroup named; in one of 48 MiB inside one of 96 MiB, 48 MiB, the
 * inner named. The room leaves out the 16 MiB the process holds, and not
 * the 24 MiB of clean page cache it read (counted, active, it held a 300
 * MiB cgroup to 42 MiB where 254 MiB ran). Outside them this process has
 * no limit from them. The cgroups are removed before anything is checked,
 * so that a failed check leaves none behind. */
TEST(cgroup_memory_limit_is_the_tightest_ancestor_s)
{
    batchfit__memory_limit before;
    int limited_before = batchfit__cgroup_memory_limit(&before) == 0;
    const uint64_t MiB = UINT64_C(1) << 20;
    limit_reading got[2];
    char where[2][2][BATCHFIT__CGROUP_PATH_MAX];
    int made[2];
    for (int k = 0; k < 2; k++) {
        test_cgroups *c = test_cgroups_open(96 * MiB, k ? 48 * MiB : UINT64_C(1) << 30);
        if (!c)
            return;
        made[k] = c->made;
        got[k] = c->made == 0 ? read_limit_inside(c) : (limit_reading){-1, {0}};
        snprintf(where[k][0], sizeof where[k][0], "%s", c->outer.path);
        snprintf(where[k][1], sizeof where[k][1], "%s", c->inner.path);
        test_cgroups_close(c);
    }
    batchfit__memory_limit after;
    int limited_after = batchfit__cgroup_memory_limit(&after) == 0;
    for (int k = 0; k < 2; k++) {
        CHECK_EQ(made[k], 0);
        CHECK_EQ(got[k].rc, 0);
        if (limited_before && before.room <= 96 * MiB)
            continue; /* this test runs under a tighter limit of its own */
        uint64_t limit = k ? 48 * MiB : 96 * MiB;
        CHECK_EQ(got[k].m.limit, limit);
        CHECK_STR(got[k].m.limit_where, where[k][k]);
        CHECK_STR(got[k].m.room_where, where[k][k]);
        /* 16 MiB held (and a little more: the child's own pages); the
         * 24 MiB read back not counted. */
        CHECK(got[k].m.room <= limit - 16 * MiB);
        CHECK(got[k].m.room >= limit - 28 * MiB);
    }
    CHECK_EQ(limited_after, limited_before);
    if (limited_before)
        CHECK_EQ(after.limit, before.limit);
}

/* A cgroup with a cgroup inside it, and a process running there, goes
 * away whole: the process killed, the inner cgroup removed first (a stale
 * one that held another was retried for a second by every probe and left
 * behind). */
TEST(cgroup_destroy_removes_what_is_inside)
{
    test_cgroups *c = test_cgroups_open(UINT64_C(96) << 20, UINT64_C(1) << 30);
    if (!c)
        return;
    int made = c->made;
    pid_t child = -1;
    int ready[2] = {-1, -1};
    if (made == 0 && pipe(ready) == 0) {
        child = fork();
        if (child == 0) {
            close(ready[0]);
            if (batchfit__cgroup_join_self(&c->inner, c->procs) != 0)
                _exit(3);
            ssize_t ignored = write(ready[1], "x", 1);
            (void)ignored;
            for (;;)
                pause();
        }
        close(ready[1]);
        char x;
        ssize_t ignored = read(ready[0], &x, 1);
        (void)ignored;
        close(ready[0]);
    }
    char outer[BATCHFIT__CGROUP_PATH_MAX], inner[BATCHFIT__CGROUP_PATH_MAX];
    snprintf(outer, sizeof outer, "%s", c->outer.path);
    snprintf(inner, sizeof inner, "%s", c->inner.path);
    batchfit__cgroup_destroy(&c->outer);
    int status = 0;
    if (child > 0)
        waitpid(child, &status, 0);
    struct stat st;
    int inner_gone = stat(inner, &st) != 0, outer_gone = stat(outer, &st) != 0;
    test_cgroups_close(c);
    CHECK_EQ(made, 0);
    CHECK(child > 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    CHECK(inner_gone);
    CHECK(outer_gone);
}

/* A cgroup's name may hold any byte but '/' and NUL; the host's note,
 * which reaches terminals and JSON, writes those outside printable ASCII
 * as \xNN (a name with a control byte and a byte that is no UTF-8 went out
 * raw). */
TEST(cgroup_note_escapes_the_bytes_of_odd_names)
{
    test_cgroups *c = test_cgroups_open(UINT64_C(96) << 20, UINT64_C(1) << 30);
    if (!c)
        return;
    int made = c->made;
    char odd[BATCHFIT__CGROUP_PATH_MAX + 32], procs[BATCHFIT__CGROUP_PATH_MAX + 64];
    snprintf(odd, sizeof odd, "%s/odd\x01\xff\\", c->inner.path);
    snprintf(procs, sizeof procs, "%s/cgroup.procs", odd);
    if (made == 0)
        test_cgroup_give_memory(&c->inner);
    int dir_made = made == 0 && mkdir(odd, 0755) == 0;
    /* The tightest limit: the note names it. */
    if (dir_made) {
        char limit[BATCHFIT__CGROUP_PATH_MAX + 64];
        snprintf(limit, sizeof limit, "%s/%s", odd,
                 c->outer.version == 2 ? "memory.max" : "memory.limit_in_bytes");
        int fd = open(limit, O_WRONLY | O_CLOEXEC);
        dir_made = fd >= 0 && write(fd, "67108864", 8) == 8;
        if (fd >= 0)
            close(fd);
    }
    char note[BATCHFIT_ERRMSG_MAX] = "";
    int pipefd[2];
    if (dir_made && pipe(pipefd) == 0) {
        pid_t child = fork();
        if (child == 0) {
            close(pipefd[0]);
            char got[BATCHFIT_ERRMSG_MAX] = "(none)";
            batchfit_ctx *ctx = NULL;
            batchfit_device *host = NULL;
            uint64_t total = 0, free_bytes = 0;
            int fd = open(procs, O_WRONLY | O_CLOEXEC);
            if (fd >= 0 && write(fd, "0", 1) == 1 && batchfit_ctx_create(NULL, &ctx) == BATCHFIT_OK &&
                batchfit_device_open(ctx, "host", &host) == BATCHFIT_OK &&
                batchfit_device_memory(host, &total, &free_bytes) == BATCHFIT_OK)
                snprintf(got, sizeof got, "%s", batchfit_device_memory_note(host));
            ssize_t ignored = write(pipefd[1], got, sizeof got);
            (void)ignored;
            _exit(0);
        }
        close(pipefd[1]);
        ssize_t n = read(pipefd[0], note, sizeof note - 1);
        note[n > 0 ? n : 0] = '\0';
        close(pipefd[0]);
        waitpid(child, NULL, 0);
    }
    rmdir(odd);
    test_cgroups_close(c);
    CHECK_EQ(made, 0);
    CHECK(dir_made);
    CHECK(strstr(note, "/odd\\x01\\xff\\x5c), ") != NULL);
    CHECK(strchr(note, '\x01') == NULL && strchr(note, '\xff') == NULL);
}

/* A trial cgroup's name holds its owner's pid and PID namespace. The sweep
 * removes one whose owner is dead here, and one named as earlier versions
 * named them (no namespace), but not one made in another PID namespace,
 * where the pid is not ours to ask of (a probe under unshare -p had its
 * running trial killed by a probe outside, and answered "does not fit"). */
TEST(cgroup_sweep_leaves_another_pid_namespace_s_trials)
{
    batchfit__cgroup cg;
    if (batchfit__cgroup_detect(&cg) != 0) {
        fprintf(stderr, "    skipped: %s\n", cg.why_not);
        return;
    }
    struct stat ns;
    CHECK_EQ(stat("/proc/self/ns/pid", &ns), 0);
    /* A pid that is no process here. */
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    CHECK(dead > 0);
    waitpid(dead, NULL, 0);
    char other[BATCHFIT__CGROUP_PATH_MAX + 64], ours[BATCHFIT__CGROUP_PATH_MAX + 64],
        legacy[BATCHFIT__CGROUP_PATH_MAX + 64], procs[BATCHFIT__CGROUP_PATH_MAX + 96];
    snprintf(other, sizeof other, "%s/batchfit-%ld-1-%llu", cg.parent, (long)dead,
             (unsigned long long)ns.st_ino + 1);
    snprintf(ours, sizeof ours, "%s/batchfit-%ld-2-%llu", cg.parent, (long)dead,
             (unsigned long long)ns.st_ino);
    snprintf(legacy, sizeof legacy, "%s/batchfit-%ld-3", cg.parent, (long)dead);
    snprintf(procs, sizeof procs, "%s/cgroup.procs", other);
    int made = mkdir(other, 0755) == 0;
    made += mkdir(ours, 0755) == 0;
    made += mkdir(legacy, 0755) == 0;
    /* Another namespace's trial, running. */
    int go[2];
    CHECK_EQ(pipe(go), 0);
    pid_t running = fork();
    if (running == 0) {
        char c;
        close(go[1]);
        ssize_t ignored = read(go[0], &c, 1);
        (void)ignored;
        _exit(0);
    }
    close(go[0]);
    int joined = 0;
    int fd = open(procs, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%ld", (long)running);
        joined = write(fd, pid, (size_t)n) == n;
        close(fd);
    }
    unsigned removed = batchfit__cgroup_sweep(&cg);
    struct stat st;
    int other_left = stat(other, &st) == 0, ours_left = stat(ours, &st) == 0,
        legacy_left = stat(legacy, &st) == 0;
    int running_alive = waitpid(running, NULL, WNOHANG) == 0;
    /* Removed before anything is checked. */
    close(go[1]);
    waitpid(running, NULL, 0);
    rmdir(other);
    rmdir(ours);
    rmdir(legacy);
    CHECK_EQ(made, 3);
    CHECK(joined);
    CHECK(removed >= 2u); /* and any stale one another run left */
    CHECK(other_left);
    CHECK(running_alive);
    CHECK(!ours_left);
    CHECK(!legacy_left);
}
