/* The trial's guard: a small process, forked for each trial, that outlives
 * us only to do what we no longer can. batchfit kills and reaps everything a
 * trial started when the trial ends; killed itself (kill -9, an OOM killer,
 * a scheduler's limit), it cannot, and the trial's main process alone has a
 * parent-death signal: its descendants, daemonised ones among them, would
 * run on. The guard holds one end of a socket whose other end only we hold.
 * We tell it each process of the trial as the samples find it; at the
 * trial's end, with everything the trial left killed and reaped, we kill
 * the guard (killed, it does nothing). It is forked before the trial (its
 * fork then delays none of the trial's samples) and told the trial's
 * process group first. If the socket closes while the guard lives, we are
 * gone, and the guard kills the trial's process group, every process
 * it was told of that is still the same process (its start time), and the
 * trial's cgroup, which it then removes. It runs in a process group (a
 * session) of its own, so a signal to our process group does not reach it.
 *
 * After fork() in a process that may have other threads (a Python program
 * using the library), the guard calls only async-signal-safe functions. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GUARD_SET 4096 /* processes remembered (more: the group and the cgroup still) */
#define GUARD_MESSAGE 64 /* processes a message (each send is one, whole or not at all) */

/* "/proc/PID/stat"'s start time (field 22), 0 if the process is gone. */
static unsigned long long start_of(long pid)
{
    char path[40] = "/proc/", digits[24];
    int n = 0;
    for (long v = pid; v > 0 && n < 20; v /= 10)
        digits[n++] = (char)('0' + v % 10);
    size_t at = 6;
    while (n > 0)
        path[at++] = digits[--n];
    memcpy(path + at, "/stat", 6);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[1024];
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got <= 0)
        return 0;
    buf[got] = '\0';
    char *p = NULL;
    for (char *c = buf; *c; c++)
        if (*c == ')')
            p = c;
    if (!p)
        return 0;
    /* After the name: field 3 follows the first space, 22 the twentieth. */
    int spaces = 0;
    while (*p && spaces < 20)
        if (*p++ == ' ')
            spaces++;
    unsigned long long start = 0;
    while (*p >= '0' && *p <= '9')
        start = start * 10 + (unsigned long long)(*p++ - '0');
    return start;
}

static void remember(batchfit__proc_member *set, const batchfit__proc_member *m)
{
    for (unsigned k = 0; k < GUARD_SET; k++) {
        batchfit__proc_member *slot = &set[((unsigned long)m->pid + k) % GUARD_SET];
        if (slot->pid == m->pid && slot->start == m->start)
            return;
        if (slot->pid == 0) {
            *slot = *m;
            return;
        }
    }
}

/* Every process of the cgroup, from its cgroup.procs, read by hand. */
static void kill_listed(const char *procs)
{
    int fd = open(procs, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[4096];
    long pid = 0;
    ssize_t got;
    while ((got = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < got; i++) {
            if (buf[i] >= '0' && buf[i] <= '9') {
                pid = pid * 10 + (buf[i] - '0');
            } else {
                if (pid > 0)
                    kill((pid_t)pid, SIGKILL);
                pid = 0;
            }
        }
    if (pid > 0)
        kill((pid_t)pid, SIGKILL);
    close(fd);
}

static _Noreturn void guard_run(int fd, const batchfit__cgroup *cg, const char *procs)
{
    pid_t pgid = 0;
    /* mmap, not malloc: no lock another thread of the parent may hold.
     * Without it the group and the cgroup are still killed. */
    batchfit__proc_member *set = mmap(NULL, GUARD_SET * sizeof *set, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (set == MAP_FAILED)
        set = NULL;
    /* Nothing of ours is held open but the socket and stdin/out/err (the
     * trial's pipes are made after the guard), so the guard keeps no pipe
     * of the trial or of a caller from closing. */
    if (fd != 3) {
        dup2(fd, 3);
        fd = 3;
    }
    struct rlimit files = {1024, 1024};
    getrlimit(RLIMIT_NOFILE, &files);
    int open_max = files.rlim_cur < 65536 ? (int)files.rlim_cur : 65536;
    for (int other = 4; other < open_max; other++)
        close(other);
    batchfit__proc_member message[GUARD_MESSAGE];
    for (;;) {
        ssize_t got = read(fd, message, sizeof message);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        for (size_t i = 0; i < (size_t)got / sizeof message[0]; i++) {
            if (message[i].start == 0) {
                pgid = (pid_t)message[i].pid; /* the trial's group */
                continue;
            }
            /* The walk spares the guard; never itself, should it be told. */
            if (set && message[i].pid != (long)getpid())
                remember(set, &message[i]);
        }
    }
    /* We are gone: the trial goes too. */
    if (pgid > 0)
        kill(-pgid, SIGKILL);
    for (unsigned i = 0; set && i < GUARD_SET; i++)
        if (set[i].pid > 0 && start_of(set[i].pid) == set[i].start)
            kill((pid_t)set[i].pid, SIGKILL);
    if (cg->path[0]) {
        for (int attempt = 0; attempt < 200; attempt++) {
            if (rmdir(cg->path) == 0 || errno == ENOENT)
                break;
            kill_listed(procs);
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    _exit(0);
}

int batchfit__guard_start(batchfit__guard *g, const batchfit__cgroup *cg)
{
    g->pid = -1;
    g->fd = -1;
    char procs[BATCHFIT__CGROUP_PATH_MAX + 16] = "";
    if (cg->path[0] && batchfit__cgroup_file(cg, "cgroup.procs", procs, sizeof procs) != 0)
        procs[0] = '\0';
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return -1;
    /* Every signal blocked across the fork: the guard must never run a
     * handler of ours (nor die of Ctrl-C, which reaches our group). */
    sigset_t all, was;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &was);
    pid_t pid = fork();
    if (pid == 0) {
        /* Out of our process group: a signal to our whole group (kill -9
         * %1, timeout -s KILL, a Jupyter kernel's restart) killed the guard
         * with us, and the trial's program ran on. A session of its own
         * (no terminal's hangup either), or, where our setpgid below came
         * first and made it a group's leader, a group of its own. */
        setsid();
        close(sv[0]);
        guard_run(sv[1], cg, procs);
    }
    int e = errno;
    /* Also from here, as a shell does: the guard is out of our group
     * before we go on, whether or not it has run yet. */
    if (pid > 0)
        setpgid(pid, pid);
    pthread_sigmask(SIG_SETMASK, &was, NULL);
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        errno = e;
        return -1;
    }
    g->pid = pid;
    g->fd = sv[0];
    return 0;
}

void batchfit__guard_group(batchfit__guard *g, pid_t pgid)
{
    /* A start time of 0 names the group (no process of ours started at 0). */
    batchfit__proc_member group = {(long)pgid, 0};
    if (g->fd >= 0)
        send(g->fd, &group, sizeof group, MSG_NOSIGNAL);
}

void batchfit__guard_tell(batchfit__guard *g, const batchfit__proc_tree *tree)
{
    if (g->fd < 0 || !tree->count)
        return;
    /* Never blocks, never raises SIGPIPE: a full socket skips the rest of
     * this round (the next sample tells them all again). */
    for (unsigned at = 0; at < tree->count; at += GUARD_MESSAGE) {
        unsigned n = tree->count - at < GUARD_MESSAGE ? tree->count - at : GUARD_MESSAGE;
        if (send(g->fd, tree->member + at, n * sizeof *tree->member,
                 MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
            return;
    }
}

void batchfit__guard_stop(batchfit__guard *g)
{
    /* Killed, it does nothing: it acts only on the socket's end, which it
     * never reads now. Killed first, then the socket closed. */
    if (g->pid > 0) {
        kill(g->pid, SIGKILL);
        while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (g->fd >= 0)
        close(g->fd);
    g->fd = -1;
    g->pid = -1;
}
