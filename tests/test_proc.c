#include "test.h"

#include "internal.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

TEST(proc_meminfo_and_self)
{
    uint64_t total = 0, avail = 0, rss = 0, hwm = 0;
    CHECK_EQ(batchfit__meminfo(&total, &avail), 0);
    CHECK(total > 0 && avail > 0 && avail <= total);
    CHECK_EQ(batchfit__self_rss(&rss), 0);
    CHECK_EQ(batchfit__self_hwm(&hwm), 0);
    CHECK(rss > 0 && hwm >= rss);
    CHECK_EQ(batchfit__self_hwm_reset(), 0);
}

/* A child holding 48 MiB and a grandchild holding 32 MiB: the tree's RSS
 * counts both, and both end up in the seen set. */
TEST(proc_tree_rss_counts_descendants)
{
    int ready[2];
    CHECK_EQ(pipe(ready), 0);
    pid_t child = fork();
    if (child == 0) {
        close(ready[0]);
        pid_t grand = fork();
        size_t n = (size_t)(grand == 0 ? 32 : 48) << 20;
        volatile char *p = malloc(n);
        for (size_t i = 0; p && i < n; i += 4096)
            p[i] = 1;
        ssize_t ignored = write(ready[1], "x", 1);
        (void)ignored;
        for (;;)
            pause();
    }
    close(ready[1]);
    char buf[2];
    CHECK_EQ(read(ready[0], buf, 1), 1);
    CHECK_EQ(read(ready[0], buf + 1, 1), 1);
    close(ready[0]);
    test_alloc_state st = {0, -1, 0, 0};
    batchfit_allocator a = test_allocator(&st);
    batchfit__proc_tree tree;
    batchfit__proc_tree_init(&tree, &a);
    uint64_t rss = 0;
    int rc = batchfit__proc_tree_rss(&tree, child, &rss);
    unsigned found = tree.count;
    unsigned long long start = 0;
    for (unsigned i = 0; i < tree.count; i++)
        if (tree.member[i].pid == child)
            start = tree.member[i].start;
    int alive_before = batchfit__proc_alive(child, start);
    kill(-child, SIGKILL);
    for (unsigned i = 0; i < tree.count; i++)
        kill((pid_t)tree.member[i].pid, SIGKILL);
    waitpid(child, NULL, 0);
    batchfit__proc_tree_free(&tree);
    CHECK_EQ(rc, 0);
    CHECK(rss >= (UINT64_C(80) << 20));
    CHECK(found >= 2);
    CHECK(alive_before);
    CHECK(!batchfit__proc_alive(child, start));
    CHECK_EQ(st.outstanding, 0);
}
