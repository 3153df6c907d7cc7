/* Child-process trials: run a command once per batch size in its own
 * process group (and cgroup where one can be made), watch its memory and
 * output, and classify how it ended - fits, out of memory, or an error -
 * with the peak memory the kernel saw. No process of a trial outlives it. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define LINE_MAX_KEEP 4096
/* A line longer than LINE_MAX_KEEP is scanned in windows that overlap by
 * this much, so a signature shorter than the overlap (every built-in one
 * is under 100 characters) is found wherever the window boundary falls. */
#define LINE_OVERLAP 512
#define TAIL_LINES 12

struct batchfit__runner_s {
    batchfit_ctx *ctx;
    batchfit__runner_options opts;
    size_t argc;
    int has_placeholder;
    batchfit__oom_table *own_oom;
    const batchfit__oom_table *oom;
    batchfit__cgroup cg;
    batchfit__proc_tree tree; /* the current trial's processes */
    long *device_pids;        /* scratch for the device's per-process query */
    unsigned device_pids_capacity;
    batchfit__buf mechanisms;
    unsigned long wakeups; /* iterations of the last trial's watch loop */
    /* --show-output in the current trial: a reader of our stderr that has
     * stopped (a full pipe), and what it was not given. */
    int show_stalled;
    uint64_t show_dropped;
    int show_fd; /* our stderr opened anew without blocking (a pipe, a tty), -1: fd 2 */
    batchfit__guard guard; /* the current trial's */
    int subreaper;         /* holds the process's child-subreaper flag */
    /* Children of ours that are not the trial's (see batchfit__proc_tree):
     * the caller's own when the trial began, then the guard. */
    long *spare;
    unsigned spare_count, spare_capacity;
    /* The GPUs trials run on (none: host memory), each with its own budget;
     * a trial's GPU peak is the worst one's, scaled to opts.budget_bytes. */
    unsigned gpu_count;
    batchfit_device *gpu[BATCHFIT_MAX_GPUS];
    uint64_t gpu_budget[BATCHFIT_MAX_GPUS];
    batchfit_gpu_peak gpu_peak[BATCHFIT_MAX_GPUS]; /* the last trial's */
    /* CUDA_VISIBLE_DEVICES=<the probed GPUs' UUIDs, in order>, or "" */
    char visible_env[32 + BATCHFIT_MAX_GPUS * 97];
};

/* Orphaned grandchildren are reparented to a child subreaper rather than
 * to init, so a trial's can be found, killed and reaped after it. The flag
 * is the process's: it is set while any runner lives and then put back as
 * the caller had it (left on, a program using the library became the
 * parent of every orphan its other children left, for good). */
static pthread_mutex_t subreaper_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned subreaper_runners;
static int subreaper_before;

static void subreaper_take(void)
{
    pthread_mutex_lock(&subreaper_lock);
    if (subreaper_runners++ == 0) {
        int was = 0;
        subreaper_before = prctl(PR_GET_CHILD_SUBREAPER, &was, 0, 0, 0) == 0 ? was : 1;
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    pthread_mutex_unlock(&subreaper_lock);
}

static void subreaper_give(void)
{
    pthread_mutex_lock(&subreaper_lock);
    if (--subreaper_runners == 0 && !subreaper_before)
        prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    pthread_mutex_unlock(&subreaper_lock);
}

void batchfit__runner_options_init(batchfit__runner_options *opts)
{
    if (!opts)
        return;
    *opts = (batchfit__runner_options){0};
    opts->kill_grace_seconds = 2.0;
    opts->watchdog = 1;
    opts->sample_interval = 0.02;
    opts->cgroups = BATCHFIT_CGROUPS_AUTO;
    opts->host_shmem = 1;
}

int batchfit__runner_create(batchfit_ctx *ctx, const batchfit__runner_options *opts,
                           batchfit__runner **out)
{
    if (!ctx || !out)
        return BATCHFIT_E_INVALID_ARGUMENT;
    *out = NULL;
    if (!opts)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "runner options: none given");
    if (!opts->argv || !opts->argv[0] || !opts->argv[0][0])
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "no command to run");
    if (!(opts->sample_interval > 0.0) || opts->timeout_seconds < 0.0 ||
        opts->kill_grace_seconds < 0.0)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "runner options: intervals must be positive");
    batchfit__runner *r = batchfit__calloc(&ctx->allocator, 1, sizeof *r);
    if (!r)
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory creating a runner");
    r->ctx = ctx;
    r->opts = *opts;
    r->guard = (batchfit__guard){-1, -1};
    r->show_fd = -1;
    batchfit__proc_tree_init(&r->tree, &ctx->allocator);
    for (r->argc = 0; opts->argv[r->argc]; r->argc++) {
        char err[BATCHFIT_ERRMSG_MAX];
        if (batchfit__template_check(opts->argv[r->argc], &r->has_placeholder, err, sizeof err)) {
            batchfit__free(&ctx->allocator, r);
            return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "%s", err);
        }
    }
    r->oom = opts->oom;
    if (!r->oom) {
        int rc = batchfit__oom_table_create(ctx, &r->own_oom);
        if (rc) {
            batchfit__free(&ctx->allocator, r);
            return rc;
        }
        r->oom = r->own_oom;
    }
    const char *peak = "rusage+sampling (no cgroup: ";
    if (opts->cgroups == BATCHFIT_CGROUPS_AUTO && batchfit__cgroup_detect(&r->cg) == 0) {
        /* A batchfit killed outright left its trial cgroups (and what ran
         * in them) behind: the next run removes them. */
        batchfit__cgroup_sweep(&r->cg);
        peak = r->cg.version == 2 ? "cgroup-v2 memory.stat anon+shmem sampling and high-water RSS "
                                    "(page cache not counted)"
                                  : "cgroup-v1 memory.stat rss+shmem sampling and high-water RSS "
                                    "(page cache not counted)";
    } else if (opts->cgroups != BATCHFIT_CGROUPS_AUTO)
        snprintf(r->cg.why_not, sizeof r->cg.why_not, "cgroups turned off");
    batchfit__buf *m = &r->mechanisms;
    batchfit__buf_init(m, &ctx->allocator);
    batchfit__buf_printf(m, "peak: %s%s%s; watchdog: %s", peak, r->cg.version ? "" : r->cg.why_not,
                         r->cg.version ? "" : ")",
                         opts->watchdog && opts->budget_bytes ? "sampling" : "off");
    if (opts->watchdog && opts->budget_bytes)
        batchfit__buf_printf(m, " every %.0f ms", opts->sample_interval * 1000.0);
    r->gpu_count = batchfit__device_gpus(opts->device);
    for (unsigned i = 0; i < r->gpu_count; i++) {
        r->gpu[i] = batchfit__device_gpu(opts->device, i);
        r->gpu_budget[i] = opts->gpu_budget_bytes ? opts->gpu_budget_bytes[i] : opts->budget_bytes;
    }
    if (r->gpu_count == 1)
        batchfit__buf_printf(m,
                             "; gpu peak: %s every %.0f ms, with the device's free memory as a "
                             "cross-check",
                             r->gpu[0]->ops->process_usage ? "nvml per-process sampling"
                                                           : "device free memory",
                             opts->sample_interval * 1000.0);
    else if (r->gpu_count > 1)
        batchfit__buf_printf(m,
                             "; gpu peak: %s on each of %u GPUs every %.0f ms, each judged "
                             "against its own budget, with each GPU's free memory as a "
                             "cross-check",
                             r->gpu[0]->ops->process_usage ? "nvml per-process sampling"
                                                           : "device free memory",
                             r->gpu_count, opts->sample_interval * 1000.0);
    if (opts->enforce)
        batchfit__buf_printf(m, "; hard cap: %s",
                             r->cg.version == 2   ? "cgroup-v2 memory.max"
                             : r->cg.version == 1 ? "cgroup-v1 memory.limit_in_bytes"
                                                  : "resident memory, stopped by sampling");
    if (opts->enforce_address_space)
        batchfit__buf_printf(m, "; virtual-memory cap: RLIMIT_AS");
    if (!batchfit__buf_text(m)) {
        batchfit__runner_free(r);
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory creating a runner");
    }
    /* Trials run on the probed GPUs: they are the only ones they see, in
     * the device's order. */
    size_t used = 0;
    for (unsigned i = 0; i < r->gpu_count; i++) {
        batchfit_device_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        if (batchfit_device_describe(r->gpu[i], &info) != BATCHFIT_OK || !info.uuid[0]) {
            /* Without its UUID a GPU of several cannot be named to the
             * command; one GPU alone is then left as the environment has it. */
            if (r->gpu_count == 1)
                break;
            batchfit__runner_free(r);
            return batchfit__fail(ctx, BATCHFIT_E_DEVICE,
                                  "%s: the driver gives no UUID, so trials cannot be shown only "
                                  "these GPUs", batchfit_device_spec(r->gpu[i]));
        }
        used += (size_t)snprintf(r->visible_env + used, sizeof r->visible_env - used, "%s%s",
                                 i ? "," : "CUDA_VISIBLE_DEVICES=", info.uuid);
    }
    subreaper_take();
    r->subreaper = 1;
    *out = r;
    return BATCHFIT_OK;
}

void batchfit__runner_free(batchfit__runner *runner)
{
    if (!runner)
        return;
    if (runner->subreaper)
        subreaper_give();
    batchfit__free(&runner->ctx->allocator, runner->spare);
    batchfit__oom_table_free(runner->own_oom);
    batchfit__buf_free(&runner->mechanisms);
    batchfit__proc_tree_free(&runner->tree);
    batchfit__free(&runner->ctx->allocator, runner->device_pids);
    batchfit__free(&runner->ctx->allocator, runner);
}

const batchfit_gpu_peak *batchfit__runner_gpu_peaks(const batchfit__runner *runner,
                                                    unsigned *count)
{
    *count = runner ? runner->gpu_count : 0;
    return runner ? runner->gpu_peak : NULL;
}

unsigned long batchfit__runner_wakeups(const batchfit__runner *runner)
{
    return runner ? runner->wakeups : 0;
}

void batchfit__timespec_from_seconds(double seconds, struct timespec *ts)
{
    ts->tv_sec = 0;
    ts->tv_nsec = 0;
    if (!(seconds > 0.0))
        return;
    /* A year is far beyond any interval or timeout; it keeps tv_sec in range. */
    if (seconds > 31536000.0)
        seconds = 31536000.0;
    ts->tv_sec = (time_t)seconds;
    long nsec = (long)((seconds - (double)ts->tv_sec) * 1e9);
    /* nanosleep rejects tv_nsec outside [0, 1e9) with EINVAL, and a
     * caller that loops on it would spin. */
    ts->tv_nsec = nsec < 0 ? 0 : nsec > 999999999L ? 999999999L : nsec;
}

int batchfit__runner_has_placeholder(const batchfit__runner *runner)
{
    return runner ? runner->has_placeholder : 0;
}

const char *batchfit__runner_mechanisms(const batchfit__runner *runner)
{
    return runner ? batchfit__buf_text(&runner->mechanisms) : "";
}

/* Everything a trial allocates before fork, so the child only execs. */
typedef struct launch {
    char **argv;
    char **envp;
    char *strings;
    char procs_file[BATCHFIT__CGROUP_PATH_MAX];
} launch;

static void launch_free(const batchfit_allocator *a, launch *l)
{
    batchfit__free(a, l->argv);
    batchfit__free(a, l->envp);
    batchfit__free(a, l->strings);
}

static int launch_build(batchfit__runner *r, uint64_t batch, launch *l)
{
    const batchfit_allocator *a = &r->ctx->allocator;
    size_t env_count = 0;
    while (environ && environ[env_count])
        env_count++;
    char batch_env[64], vram_env[96] = "";
    const char *visible_env = r->visible_env;
    snprintf(batch_env, sizeof batch_env, "BATCHFIT_BATCH_SIZE=%llu", (unsigned long long)batch);
    if (r->opts.vram_limit_gb)
        snprintf(vram_env, sizeof vram_env, "VRAM_LIMIT_GB=%s", r->opts.vram_limit_gb);
    size_t total = strlen(batch_env) + strlen(vram_env) + strlen(visible_env) + 3;
    for (size_t i = 0; i < r->argc; i++)
        total += batchfit__template_expand(r->opts.argv[i], batch, NULL, 0) + 1;
    l->argv = batchfit__calloc(a, r->argc + 1, sizeof *l->argv);
    l->envp = batchfit__calloc(a, env_count + 4, sizeof *l->envp);
    l->strings = batchfit__alloc(a, total);
    if (!l->argv || !l->envp || !l->strings) {
        launch_free(a, l);
        return batchfit__fail(r->ctx, BATCHFIT_E_NO_MEMORY, "out of memory preparing a trial");
    }
    char *p = l->strings;
    for (size_t i = 0; i < r->argc; i++) {
        size_t len = batchfit__template_expand(r->opts.argv[i], batch, p, total);
        l->argv[i] = p;
        p += len + 1;
    }
    size_t e = 0;
    for (size_t i = 0; i < env_count; i++) {
        if (strncmp(environ[i], "BATCHFIT_BATCH_SIZE=", 20) == 0 ||
            (r->opts.vram_limit_gb && strncmp(environ[i], "VRAM_LIMIT_GB=", 14) == 0) ||
            (visible_env[0] && strncmp(environ[i], "CUDA_VISIBLE_DEVICES=", 21) == 0))
            continue;
        l->envp[e++] = environ[i];
    }
    memcpy(p, batch_env, strlen(batch_env) + 1);
    l->envp[e++] = p;
    p += strlen(batch_env) + 1;
    if (vram_env[0]) {
        memcpy(p, vram_env, strlen(vram_env) + 1);
        l->envp[e++] = p;
        p += strlen(vram_env) + 1;
    }
    if (visible_env[0]) {
        memcpy(p, visible_env, strlen(visible_env) + 1);
        l->envp[e++] = p;
    }
    return BATCHFIT_OK;
}

/* What the child could not do before exec, reported through the pipe that
 * exec closes: the stage, then errno. */
enum { STAGE_EXEC = 1, STAGE_CGROUP = 2 };

static void child_fail(int err_pipe, int stage)
{
    int report[2] = {stage, errno};
    ssize_t ignored = write(err_pipe, report, sizeof report);
    (void)ignored;
    _exit(127);
}

/* In the child, between fork and exec: async-signal-safe calls only. */
static void child_exec(const batchfit__runner *r, const launch *l, pid_t parent, int out_fd,
                       int err_fd, int report_pipe)
{
    /* A session of its own, and so a process group: no descendant can then
     * join the caller's session (nor a group in it), whose children after
     * the trial are the caller's (proc.c). */
    if (setsid() < 0)
        setpgid(0, 0);
    /* If batchfit dies (SIGKILL included), the trial dies with it rather
     * than run on under init; a parent that died before this call is seen
     * by the check after it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent)
        _exit(127);
    /* Out of memory (a cgroup's limit, the machine's), the kernel kills
     * the trial, not batchfit: until its exec the child is as large as
     * batchfit, and under a small cgroup limit the kernel took batchfit
     * (exit 137, nothing said). Raising the score needs no privilege, and
     * the program and what it starts inherit it. */
    int adj = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (adj >= 0) {
        ssize_t ignored = write(adj, "1000", 4);
        (void)ignored;
        close(adj);
    }
    /* A trial outside its cgroup would be measured as using nothing: that
     * is a trial that did not run as asked, never a fit. */
    if (l->procs_file[0] && batchfit__cgroup_join_self(&r->cg, l->procs_file) != 0)
        child_fail(report_pipe, STAGE_CGROUP);
    if (r->opts.enforce_address_space && r->opts.enforce_bytes) {
        struct rlimit lim = {(rlim_t)r->opts.enforce_bytes, (rlim_t)r->opts.enforce_bytes};
        setrlimit(RLIMIT_AS, &lim);
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGINT, &dfl, NULL);
    sigaction(SIGTERM, &dfl, NULL);
    sigaction(SIGPIPE, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) {
        dup2(devnull, 0);
        close(devnull);
    }
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    environ = l->envp;
    execvp(l->argv[0], l->argv);
    child_fail(report_pipe, STAGE_EXEC);
}

/* One output stream of the child (stderr or stdout), on its own pipe so
 * that a buffered stdout flushed at exit cannot push the line that
 * explains a failure, on stderr, out of the excerpt. */
typedef struct stream {
    char line[LINE_MAX_KEEP];
    size_t line_len;
    int line_continued; /* line holds a later window of a long line */
    char tail[TAIL_LINES][256];
    unsigned long tail_stamp[TAIL_LINES]; /* the wakeup that completed each line */
    unsigned tail_next;
    unsigned tail_count;
} stream;

/* The child's output: scanned line by line for OOM signatures, the last
 * lines of each stream kept for the report, optionally copied to our
 * stderr. */
typedef struct output {
    stream err; /* first: its lines come first when the order is unknown */
    stream out;
    unsigned long stamp; /* the current wakeup of the watch loop */
    char oom_source[96];
    char oom_line[256];
    uint64_t tried_bytes; /* from "tried to allocate N" in an OOM message */
} output;

/* The size an OOM message says was asked for: "tried to allocate 2.00 GiB",
 * "you tried to allocate 8589934592 bytes", "failed to allocate 512.00 MiB",
 * "allocation of 24 bytes failed", NumPy's "Unable to allocate 206. MiB for
 * an array" (a MemoryError read the 20 MiB held when the request failed as
 * the need), XLA's "while trying to allocate 1073741824 bytes". */
static uint64_t tried_to_allocate(const char *line)
{
    static const char *const phrases[] = {"ried to allocate ", "ailed to allocate ",
                                          "allocation of ", "nable to allocate ",
                                          "rying to allocate "};
    const char *p = NULL;
    for (size_t i = 0; !p && i < sizeof phrases / sizeof phrases[0]; i++)
        if ((p = strstr(line, phrases[i])) != NULL)
            p += strlen(phrases[i]);
    if (!p)
        return 0;
    char text[64];
    size_t n = 0;
    while (n < sizeof text - 1 && p[n] && (p[n] == '.' || (p[n] >= '0' && p[n] <= '9')))
        n++;
    if (n == 0)
        return 0;
    memcpy(text, p, n);
    const char *unit = p + n;
    while (*unit == ' ')
        unit++;
    size_t ulen = 0;
    while (ulen < 5 && unit[ulen] && unit[ulen] != ' ' && unit[ulen] != '.' && unit[ulen] != ')')
        ulen++;
    if (ulen == 5 && strncmp(unit, "bytes", 5) == 0)
        ulen = 0;
    if (n + ulen >= sizeof text)
        return 0;
    memcpy(text + n, unit, ulen);
    text[n + ulen] = '\0';
    uint64_t bytes = 0;
    return batchfit__parse_size(text, NULL, &bytes, NULL, 0) == BATCHFIT_OK ? bytes : 0;
}

/* Scans the window of a stream's current line for a signature. */
static void output_scan(const batchfit__runner *r, output *o, stream *st)
{
    st->line[st->line_len] = '\0';
    if (!o->oom_source[0]) {
        size_t at = 0;
        const char *source = batchfit__oom_match_at(r->oom, st->line, &at);
        if (source) {
            batchfit__copy(o->oom_source, sizeof o->oom_source, source);
            /* The quote holds the match: a long line (a logger's prefix, a
             * path) is quoted from a little before it. */
            const char *from = st->line;
            if (at + 64 > sizeof o->oom_line && strlen(st->line) >= sizeof o->oom_line) {
                from = st->line + at - 32;
                while (from > st->line && ((unsigned char)*from & 0xC0) == 0x80)
                    from--;
            }
            snprintf(o->oom_line, sizeof o->oom_line, "%s", from == st->line ? "" : "...");
            size_t used = strlen(o->oom_line);
            batchfit__copy(o->oom_line + used, sizeof o->oom_line - used, from);
        }
    }
    if (!o->tried_bytes && o->oom_source[0])
        o->tried_bytes = tried_to_allocate(st->line);
}

/* Keeps the start of the current line as the stream's newest tail line. */
static void tail_push(const output *o, stream *st)
{
    batchfit__copy(st->tail[st->tail_next], sizeof st->tail[st->tail_next], st->line);
    st->tail_stamp[st->tail_next] = o->stamp;
    st->tail_next = (st->tail_next + 1) % TAIL_LINES;
    if (st->tail_count < TAIL_LINES)
        st->tail_count++;
}

/* A full window of a line that goes on: scanned, its start kept for the
 * tail, and its last LINE_OVERLAP bytes carried into the next window. */
static void output_window(const batchfit__runner *r, output *o, stream *st)
{
    output_scan(r, o, st);
    if (!st->line_continued)
        tail_push(o, st);
    memmove(st->line, st->line + st->line_len - LINE_OVERLAP, LINE_OVERLAP);
    st->line_len = LINE_OVERLAP;
    st->line_continued = 1;
}

static void output_line(const batchfit__runner *r, output *o, stream *st)
{
    output_scan(r, o, st);
    if (!st->line_continued)
        tail_push(o, st);
    st->line_len = 0;
    st->line_continued = 0;
}

/* --show-output's copy of the trial's output to our stderr. It never waits
 * long: a reader that stopped reading (a full pipe, a pager left open, a
 * stalled terminal) must not hold up the watchdog, the timeout or an
 * interruption. A pipe or terminal is written through a descriptor of its
 * own opened non-blocking (fd 2's own flags, shared with other processes,
 * stay as they are); a chunk waits at most one sample interval for room;
 * after a wait in vain only what fits at once is written until the reader
 * takes some again. What is not written is counted, and said after the
 * trial. */
static void show_output(batchfit__runner *r, const char *buf, size_t n)
{
    int fd = r->show_fd >= 0 ? r->show_fd : 2;
    double interval = r->opts.sample_interval < 1.0 ? r->opts.sample_interval : 1.0;
    while (n > 0 && !batchfit__interrupt_pending()) {
        struct pollfd p = {fd, POLLOUT, 0};
        int ready = poll(&p, 1, r->show_stalled ? 0 : (int)(interval * 1000.0) + 1);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0 || !(p.revents & POLLOUT)) {
            r->show_stalled = 1;
            break;
        }
        /* Up to PIPE_BUF bytes go into a pipe that polls writable at once. */
        ssize_t w = write(fd, buf, n < PIPE_BUF ? n : PIPE_BUF);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            r->show_stalled = 1;
            break;
        }
        r->show_stalled = 0;
        buf += w;
        n -= (size_t)w;
    }
    r->show_dropped += n;
}

static void output_feed(batchfit__runner *r, output *o, stream *st, const char *buf, size_t n)
{
    if (r->opts.show_output)
        show_output(r, buf, n);
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            output_line(r, o, st);
            continue;
        }
        if (st->line_len == LINE_MAX_KEEP - 1)
            output_window(r, o, st);
        /* A carriage return (a progress bar's) or a NUL byte (which would
         * end the line as text, hiding what follows) reads as a blank. */
        st->line[st->line_len++] = buf[i] == '\r' || buf[i] == '\0' ? ' ' : buf[i];
    }
}

/* The k-th oldest of a stream's tail lines. */
static unsigned tail_index(const stream *st, unsigned k)
{
    return (st->tail_next + TAIL_LINES - st->tail_count + k) % TAIL_LINES;
}

/* How many of a stream's newest lines fit in room bytes (each with its
 * newline); *used gets their size. */
static unsigned tail_fit(const stream *st, size_t room, size_t *used)
{
    unsigned n = 0;
    *used = 0;
    while (n < st->tail_count) {
        size_t cost = strlen(st->tail[tail_index(st, st->tail_count - 1 - n)]) + 1;
        if (*used + cost > room)
            break;
        *used += cost;
        n++;
    }
    return n;
}

/* The last lines of both streams in the order they were read; lines read
 * in the same wakeup cannot be ordered, and stderr's come first. Each
 * stream gets half the room, and what one leaves to the other. */
static void output_tail(const output *o, char *out, size_t len)
{
    size_t used_err, used_out, room = len - 1;
    tail_fit(&o->err, room / 2, &used_err);
    unsigned n_out = tail_fit(&o->out, room - used_err, &used_out);
    unsigned n_err = tail_fit(&o->err, room - used_out, &used_err);
    unsigned k_err = o->err.tail_count - n_err, k_out = o->out.tail_count - n_out;
    size_t n = 0;
    out[0] = '\0';
    while (k_err < o->err.tail_count || k_out < o->out.tail_count) {
        unsigned ie = tail_index(&o->err, k_err), io = tail_index(&o->out, k_out);
        int take_err = k_out == o->out.tail_count ||
                       (k_err < o->err.tail_count && o->err.tail_stamp[ie] <= o->out.tail_stamp[io]);
        const char *line = take_err ? o->err.tail[ie] : o->out.tail[io];
        if (take_err)
            k_err++;
        else
            k_out++;
        int w = snprintf(out + n, len - n, "%s\n", line);
        if (w < 0 || (size_t)w >= len - n)
            break;
        n += (size_t)w;
    }
}

/* Reads what is available, up to 1 MiB a wakeup (a trial that writes
 * without pause must not keep the watch loop from its samples); returns 0
 * at end of file. */
static int drain(batchfit__runner *r, output *o, stream *st, int fd)
{
    char buf[8192];
    for (int chunk = 0; chunk < 128; chunk++) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            output_feed(r, o, st, buf, (size_t)n);
            continue;
        }
        if (n == 0)
            return 0;
        return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK ? 1 : 0;
    }
    return 1; /* more next wakeup */
}

/* The signal's name (SIGUSR1, not "signal 10"); buf holds a real-time
 * signal's (SIGRTMIN+n). */
static const char *signal_name(int sig, char *buf, size_t len)
{
#define NAMED(s)                                                                                   \
    case s:                                                                                        \
        return #s;
    switch (sig) {
        NAMED(SIGHUP) NAMED(SIGINT) NAMED(SIGQUIT) NAMED(SIGILL) NAMED(SIGTRAP) NAMED(SIGABRT)
        NAMED(SIGBUS) NAMED(SIGFPE) NAMED(SIGKILL) NAMED(SIGUSR1) NAMED(SIGSEGV) NAMED(SIGUSR2)
        NAMED(SIGPIPE) NAMED(SIGALRM) NAMED(SIGTERM) NAMED(SIGCHLD) NAMED(SIGCONT) NAMED(SIGSTOP)
        NAMED(SIGTSTP) NAMED(SIGTTIN) NAMED(SIGTTOU) NAMED(SIGURG) NAMED(SIGXCPU) NAMED(SIGXFSZ)
        NAMED(SIGVTALRM) NAMED(SIGPROF) NAMED(SIGWINCH) NAMED(SIGIO) NAMED(SIGSYS)
#ifdef SIGSTKFLT
        NAMED(SIGSTKFLT)
#endif
#ifdef SIGPWR
        NAMED(SIGPWR)
#endif
    }
#undef NAMED
    if (sig >= SIGRTMIN && sig <= SIGRTMAX) {
        snprintf(buf, len, "SIGRTMIN+%d", sig - SIGRTMIN);
        return buf;
    }
    return "a signal";
}

/* Stops the trial at once: its process group, every descendant seen
 * (checked by start time against pid reuse: one that left the group with
 * setsid() ran on to two and a half times the budget after the watchdog
 * stopped the group), and everything in its cgroup. */
static void stop_trial(batchfit__runner *r, pid_t pgid)
{
    kill(-pgid, SIGKILL);
    const batchfit__proc_tree *tree = &r->tree;
    for (unsigned i = 0; i < tree->count; i++)
        if (batchfit__proc_alive(tree->member[i].pid, tree->member[i].start))
            kill((pid_t)tree->member[i].pid, SIGKILL);
    batchfit__cgroup_kill(&r->cg);
}

/* Reaps what became our children of a stopped trial (stop_trial first: a
 * wait for one still running would block), raising *hwm (when not NULL) to
 * the largest high-water RSS among those that began at or after since (the trial's
 * main process's start): a process whose parent exited before it did (a
 * daemonised worker, a forkserver's) was reparented to us, and what it
 * held shows in no wait4 of the trial's own. One that began before is not
 * the trial's (a child of the caller's own in a session of its own, done
 * and not yet waited for, read as one of the trial's orphans). */
static void reap_trial(batchfit__runner *r, pid_t pgid, unsigned long long since, uint64_t *hwm)
{
    const batchfit__proc_tree *tree = &r->tree;
    /* Those that were reparented to us are our children now: reap them
     * (wait4 fails at once with ECHILD for any that are not), while their
     * pid is still theirs (a reused one may be the caller's child, whom a
     * wait would block on and rob of its status). */
    for (unsigned i = 0; i < tree->count; i++)
        if (tree->member[i].pid != pgid &&
            batchfit__proc_alive(tree->member[i].pid, tree->member[i].start))
            batchfit__proc_reap(tree->member[i].pid, tree->member[i].start >= since ? hwm : NULL);
    /* Descendants no sample saw (born and orphaned between two samples, or
     * past a walk that could not grow) are orphans reparented to us: kill
     * them, and their children become ours in turn. */
    for (int round = 0;
         round < 64 && batchfit__proc_reap_children(r->spare, r->spare_count, hwm, since) > 0;
         round++)
        ;
}

/* Kills and reaps whatever of the trial is left and removes its cgroup. */
static void kill_everything(batchfit__runner *r, pid_t pgid)
{
    stop_trial(r, pgid);
    batchfit__cgroup_destroy(&r->cg);
    reap_trial(r, pgid, 0, NULL);
}

typedef struct watch {
    /* Each GPU's: per-process usage was read, its peak; its free memory. */
    int device_known[BATCHFIT_MAX_GPUS];
    uint64_t device_peak[BATCHFIT_MAX_GPUS];
    int free_known[BATCHFIT_MAX_GPUS];
    uint64_t free_start[BATCHFIT_MAX_GPUS];
    uint64_t free_min[BATCHFIT_MAX_GPUS];
    int watchdog_gpu;         /* the GPU that passed its budget, -1: none or the host */
    uint64_t watchdog_gpu_seen;
    double start;
    double term_sent;
    int timed_out;
    int watchdog_stopped;
    int interrupted;
    int done;
    int status;
    struct rusage usage;
    uint64_t sampled_peak;
    uint64_t main_hwm;    /* the main process's VmHWM at its last sample */
    uint64_t reaped_hwm;  /* the largest high-water RSS of the others, as reaped */
    unsigned long long began; /* the main process's start (clock ticks); 0: unknown */
    uint64_t rss_at_fork; /* ours, the most its image held before exec */
    uint64_t watchdog_seen;  /* the sample that passed its threshold */
    uint64_t watchdog_limit; /* that threshold: the budget, or the --enforce cap */
    int watchdog_is_cap;     /* the cap, enforced by sampling where no cgroup is */
    int failed;             /* BATCHFIT_E_NO_MEMORY: the watch could not grow */
    int host_oom_known;      /* the host's oom_kill count when the trial began */
    uint64_t host_oom_start;
    int shmem_known;         /* without a cgroup: the host's lowest Shmem since the trial began */
    uint64_t shmem_low;
    unsigned left_running;   /* the trial's processes still running when its main one exited */
    char left_name[16];      /* the first of them's command name */
} watch;

uint64_t batchfit__scale_to_budget(uint64_t peak, uint64_t budget, uint64_t reference)
{
    if (budget == 0 || reference == 0 || budget == reference)
        return peak;
#ifdef __SIZEOF_INT128__
    unsigned __int128 scaled = ((unsigned __int128)peak * reference + budget - 1) / budget;
    return scaled > UINT64_MAX ? UINT64_MAX : (uint64_t)scaled;
#else
    long double scaled = (long double)peak * reference / budget;
    if (scaled >= 18446744073709551615.0L)
        return UINT64_MAX;
    uint64_t whole = (uint64_t)scaled;
    return (long double)whole < scaled ? whole + 1 : whole;
#endif
}

/* The trial's memory on its GPUs: on each, what NVML says the processes of
 * its tree use, and the drop in the GPU's free memory since the trial
 * began. *now is the worst GPU's, scaled to the reference budget; *worst
 * says which GPU that is and *worst_bytes its own figure. */
static int sample_device(batchfit__runner *r, pid_t pid, watch *w, uint64_t *now, int *worst,
                         uint64_t *worst_bytes)
{
    const batchfit__proc_tree *tree = &r->tree;
    if (tree->count + 1 > r->device_pids_capacity) {
        unsigned capacity = tree->capacity + 1;
        long *grown = batchfit__realloc(&r->ctx->allocator, r->device_pids,
                                        capacity * sizeof *grown);
        if (!grown)
            return BATCHFIT_E_NO_MEMORY;
        r->device_pids = grown;
        r->device_pids_capacity = capacity;
    }
    long *pids = r->device_pids;
    unsigned n = 0;
    pids[n++] = (long)pid;
    for (unsigned i = 0; i < tree->count; i++)
        if (tree->member[i].pid != (long)pid)
            pids[n++] = tree->member[i].pid;
    *worst = -1;
    for (unsigned g = 0; g < r->gpu_count; g++) {
        batchfit_device *dev = r->gpu[g];
        uint64_t used = 0, total = 0, free_bytes = 0, here = 0;
        int known = 0;
        if (dev->ops->process_usage &&
            dev->ops->process_usage(dev, pids, n, &used) == BATCHFIT_OK) {
            w->device_known[g] = 1;
            if (used > w->device_peak[g])
                w->device_peak[g] = used;
            here = used;
            known = 1;
        }
        if (dev->ops->memory(dev, &total, &free_bytes) == BATCHFIT_OK) {
            if (!w->free_known[g]) {
                w->free_known[g] = 1;
                w->free_start[g] = w->free_min[g] = free_bytes;
            } else if (free_bytes < w->free_min[g]) {
                w->free_min[g] = free_bytes;
            }
            if (!w->device_known[g]) {
                here = w->free_start[g] - w->free_min[g];
                known = 1;
            }
        }
        uint64_t scaled = batchfit__scale_to_budget(here, r->gpu_budget[g], r->opts.budget_bytes);
        if (known && (*worst < 0 || scaled > *now)) {
            *worst = (int)g;
            *now = scaled;
            *worst_bytes = here;
        }
    }
    return 0;
}

/* Whether a launcher started several processes of this job on this host
 * (mpirun -n 2 on one node, torchrun, srun): each may run a trial at the
 * same moment, and the host's shared memory grows by all of theirs. */
static int job_shares_host(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                        "LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE",
                                        "PMI_LOCAL_SIZE"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v && strtol(v, NULL, 10) > 1)
            return 1;
    }
    return 0;
}

/* Without a cgroup, the shared memory the trial made that none of its
 * processes maps (a file written to /dev/shm or another tmpfs, kept open or
 * left there): in no process's RSS, and as unreclaimable as its heap (with
 * no swap, not at all). The host's Shmem grew by it, less what the tree
 * maps (counted in its RSS already). Grown from its lowest point since
 * the trial began: a file of the same name rewritten (an earlier trial's,
 * truncated first) fell and rose again, and read from the start it
 * counted nothing. Another program's shared memory made meanwhile counts
 * too: an over-count, where uncounted a reviewer's program reached 23 GiB
 * of /dev/shm on a 24 GiB host under a 300 MiB budget, the watchdog
 * seeing 2.4 MiB. Not where the tree's own mapped shared memory is
 * unknown (a kernel before 5.3 has no Pss_Shmem: it would count twice),
 * nor across MPI ranks (host_shmem off) or where a launcher started
 * several processes on this host (job_shares_host): their trials run at
 * once, and each read the other's shared memory as its own (two ranks on
 * one node answered half the size). */
static uint64_t unmapped_shmem(const batchfit__runner *r, watch *w)
{
    uint64_t now;
    if (!w->shmem_known || batchfit__meminfo_shmem(&now) != 0)
        return 0;
    if (now < w->shmem_low)
        w->shmem_low = now;
    uint64_t grown = now - w->shmem_low;
    if (!r->tree.shmem_known)
        return 0;
    return grown > r->tree.shmem_bytes ? grown - r->tree.shmem_bytes : 0;
}

/* Samples the trial's memory with the same measure its peak is judged by:
 * on a GPU, the device's; on the host, the cgroup's charge where there is
 * a cgroup (resident shared libraries charged elsewhere do not count), else
 * the process tree's RSS. The tree is walked either way, so every
 * descendant is known for the cleanup. */
static int sample_memory(batchfit__runner *r, pid_t pid, watch *w)
{
    uint64_t now = 0, tree = 0, host = 0, hwm = 0;
    /* With a cgroup its reading is the trial's; the walk only finds the
     * members, and need not walk their page tables. */
    r->tree.proportional = !r->cg.path[0];
    int rc = batchfit__proc_tree_rss(&r->tree, pid, &tree);
    if (rc > 0)
        return rc;
    if (batchfit__proc_hwm((long)pid, &hwm) == 0 && hwm > w->main_hwm)
        w->main_hwm = hwm;
    if (!(r->cg.path[0] && batchfit__cgroup_resident(&r->cg, &host) == 0) && rc == 0)
        host = tree + unmapped_shmem(r, w);
    if (host > w->sampled_peak)
        w->sampled_peak = host;
    now = host;
    int gpu = -1;
    uint64_t gpu_bytes = 0;
    if (r->gpu_count && (rc = sample_device(r, pid, w, &now, &gpu, &gpu_bytes)) != 0)
        return rc;
    if (w->done || w->watchdog_stopped)
        return 0;
    /* --enforce without a cgroup caps what is measured, the resident memory,
     * by stopping the group past it (RLIMIT_AS only when asked for by name). */
    if (r->opts.enforce && r->opts.enforce_bytes && !r->cg.path[0] && host > r->opts.enforce_bytes) {
        w->watchdog_is_cap = 1;
        w->watchdog_limit = r->opts.enforce_bytes;
        w->watchdog_seen = host;
    } else if (r->opts.watchdog && r->opts.budget_bytes && now > r->opts.budget_bytes) {
        w->watchdog_limit = r->opts.budget_bytes;
        w->watchdog_seen = now;
        w->watchdog_gpu = gpu;
        w->watchdog_gpu_seen = gpu_bytes;
    } else {
        return 0;
    }
    w->watchdog_stopped = 1;
    stop_trial(r, pid);
    return 0;
}

/* Runs the poll loop until the main process has ended and its output (on
 * fds[0], stderr, and fds[1], stdout) is read. */
static void supervise(batchfit__runner *r, pid_t pid, const int fds[2], output *o, watch *w)
{
    int open_fd[2] = {1, 1};
    stream *streams[2] = {&o->err, &o->out};
    double drain_deadline = 0.0;
    for (;;) {
        double t = batchfit__now();
        double wait_s = r->opts.sample_interval;
        if (r->opts.timeout_seconds > 0.0 && !w->timed_out) {
            double left = w->start + r->opts.timeout_seconds - t;
            if (left < wait_s)
                wait_s = left > 0.0 ? left : 0.0;
        }
        o->stamp = ++r->wakeups;
        struct pollfd pfd[2];
        nfds_t n = 0;
        for (int i = 0; i < 2; i++)
            if (open_fd[i])
                pfd[n++] = (struct pollfd){fds[i], POLLIN, 0};
        int wait_ms = wait_s < 86400.0 ? (int)(wait_s * 1000.0) + 1 : 86400000;
        if (n && poll(pfd, n, wait_ms) > 0) {
            /* stderr first: what both had ready cannot be ordered. */
            for (int i = 0; i < 2; i++)
                if (open_fd[i])
                    open_fd[i] = drain(r, o, streams[i], fds[i]);
        } else if (!n) {
            struct timespec ts;
            batchfit__timespec_from_seconds(wait_s, &ts);
            nanosleep(&ts, NULL);
        }
        if (!w->done && !w->failed && (w->failed = sample_memory(r, pid, w)) != 0)
            stop_trial(r, pid); /* a trial that cannot be watched must not run on */
        batchfit__guard_tell(&r->guard, &r->tree);
        if (!w->done) {
            pid_t got = wait4(pid, &w->status, WNOHANG, &w->usage);
            if (got == pid) {
                w->done = 1;
                /* The trial is its main process: whatever it left behind
                 * goes now, so the pipes close and nothing is orphaned.
                 * Where it exited on its own, what still ran is counted
                 * first (one more walk finds the orphans its exit handed
                 * to us; membership only, no page-table walk): a command
                 * that leaves its work to a process running on (`sh -c
                 * 'train &'`, a daemon) is measured without that work, and
                 * every size fits (see batchfit_trial_process.left_running).
                 * Not after the watchdog, a timeout or an interrupt stopped
                 * the group: a killed process still shows in /proc while it
                 * frees its memory. */
                if (!w->watchdog_stopped && !w->timed_out && !w->interrupted && !w->failed) {
                    uint64_t unused;
                    r->tree.proportional = 0;
                    (void)batchfit__proc_tree_rss(&r->tree, pid, &unused);
                    w->left_running = batchfit__proc_tree_running(&r->tree, pid, w->left_name,
                                                                  sizeof w->left_name);
                }
                stop_trial(r, pid);
                drain_deadline = batchfit__now() + 1.0;
            }
        }
        t = batchfit__now();
        if (batchfit__interrupt_pending() && !w->interrupted) {
            w->interrupted = 1;
            stop_trial(r, pid);
        }
        if (!w->done && r->opts.timeout_seconds > 0.0 && !w->timed_out &&
            t >= w->start + r->opts.timeout_seconds) {
            w->timed_out = 1;
            w->term_sent = t;
            kill(-pid, SIGTERM);
        }
        if (!w->done && w->timed_out && t >= w->term_sent + r->opts.kill_grace_seconds)
            stop_trial(r, pid);
        if (w->done && ((!open_fd[0] && !open_fd[1]) || t >= drain_deadline))
            break;
    }
    /* A last line without a newline still counts. */
    for (int i = 0; i < 2; i++)
        if (streams[i]->line_len)
            output_line(r, o, streams[i]);
}

/* The trial's host memory peak, never counting page cache it did not map:
 * the larger of
 * - the largest sample of what the watchdog judges: the cgroup's anonymous
 *   + shared memory, else the tree's RSS; a sample, so a spike shorter
 *   than the interval can be missed;
 * - the main process's kernel-tracked high-water RSS: VmHWM at its last
 *   sample, and ru_maxrss where it exceeds our own RSS at fork (ru_maxrss
 *   also counts the copy of batchfit forked before exec, which can be no
 *   larger than that, and the descendants the main process waited for);
 * - the high-water RSS of every other process of the trial, as reaped:
 *   one orphaned to us (its parent exited first) is in no wait4 of the
 *   main process's, and a spike of its own between two samples was read
 *   as nothing (a grandchild touching 183 MiB for a few milliseconds under
 *   a 172 MiB threshold: accepted at 126 MiB).
 *   These count the files mapped but no cache only read or written; with
 *   a cgroup they are capped by the cgroup's own high-water mark.
 * The kernel mark less the file pages left at the end was not used: it is
 * wrong both ways (a deleted temporary file leaves none; a file read after
 * the anonymous peak leaves more than there were at the peak). */
static uint64_t host_peak(const batchfit__runner *r, const watch *w, batchfit_trial_process *d)
{
    uint64_t cg_peak = 0, exact = w->main_hwm;
    int rusage_usable = d->rusage_peak_bytes > w->rss_at_fork;
    if (rusage_usable && d->rusage_peak_bytes > exact)
        exact = d->rusage_peak_bytes;
    if (w->reaped_hwm > exact)
        exact = w->reaped_hwm;
    d->peak_source = !r->cg.path[0]       ? "rusage+sampling"
                     : r->cg.version == 2 ? "cgroup-v2 anon+shmem sampling, high-water RSS"
                                          : "cgroup-v1 rss+shmem sampling, high-water RSS";
    int have_cg = r->cg.path[0] && batchfit__cgroup_peak(&r->cg, &cg_peak) == 0;
    if (have_cg && cg_peak < exact)
        exact = cg_peak;
    /* A trial that ended before its first sample, from a batchfit whose own
     * image is larger than the trial (an embedding program, a sanitized
     * build), has no usable high-water RSS: the cgroup's high-water mark is
     * then all there is (it may hold page cache, but it is not the 0 that
     * would read as "memory does not grow"). */
    if (!w->main_hwm && !rusage_usable && have_cg && cg_peak > exact) {
        exact = cg_peak;
        d->peak_source = r->cg.version == 2 ? "cgroup-v2 memory.peak (ended before sampling)"
                                            : "cgroup-v1 max_usage (ended before sampling)";
    }
    return w->sampled_peak > exact ? w->sampled_peak : exact;
}

/* What the command's own end says, for a message. */
static void describe_end(const batchfit_trial_process *d, char *out, size_t len)
{
    char rt[32];
    if (d->signal)
        snprintf(out, len, "killed by signal %d (%s, status %d)", d->signal,
                 signal_name(d->signal, rt, sizeof rt), 128 + d->signal);
    else
        snprintf(out, len, "exited with status %d", d->exit_code);
}

/* The kernel killed a process of the trial for memory: the command itself
 * (SIGKILL) or one under a wrapper (a shell then exits 137 or whatever it
 * likes). Either way the trial did not fit. */
static void classify_oom_kill(const batchfit__runner *r, const watch *w, uint64_t kills,
                              batchfit_trial *trial)
{
    const batchfit_trial_process *d = &trial->process;
    uint64_t cap = r->opts.enforce ? r->opts.enforce_bytes : 0;
    char limit[32], end[96];
    trial->outcome = BATCHFIT_OOM;
    /* Under a cap the kernel kills only when the charge cannot stay under it
     * after reclaim: the trial needed more than the cap. */
    trial->peak_bytes = w->sampled_peak > cap ? w->sampled_peak : cap;
    trial->peak_known = trial->peak_bytes > 0;
    batchfit_format_bytes((double)cap, limit, sizeof limit);
    describe_end(d, end, sizeof end);
    if (d->signal == SIGKILL && cap)
        snprintf(trial->message, sizeof trial->message,
                 "killed by SIGKILL (status 137): the kernel killed it at the cgroup's memory "
                 "limit of %s", limit);
    else if (cap)
        snprintf(trial->message, sizeof trial->message,
                 "the kernel killed %llu of its processes at the cgroup's memory limit of %s; "
                 "the command then %s", (unsigned long long)kills, limit, end);
    else if (r->cg.path[0])
        snprintf(trial->message, sizeof trial->message,
                 "the kernel's out-of-memory killer killed %llu of its processes; the command "
                 "then %s", (unsigned long long)kills, end);
    else
        snprintf(trial->message, sizeof trial->message,
                 "the out-of-memory killer killed %llu process%s on this host during the "
                 "trial (no cgroup tells whose); the command then %s",
                 (unsigned long long)kills, kills == 1 ? "" : "es", end);
}

static void classify_stopped(const batchfit__runner *r, const watch *w, batchfit_trial *trial)
{
    char peak[32], limit[32];
    trial->outcome = BATCHFIT_OOM;
    trial->peak_bytes = w->watchdog_seen;
    trial->peak_known = 1;
    trial->process.watchdog_overshoot_bytes = w->watchdog_seen - w->watchdog_limit;
    batchfit_format_bytes((double)w->watchdog_seen, peak, sizeof peak);
    batchfit_format_bytes((double)w->watchdog_limit, limit, sizeof limit);
    if (w->watchdog_is_cap) {
        snprintf(trial->message, sizeof trial->message,
                 "stopped at the --enforce cap: its resident memory reached %s, past the cap of "
                 "%s (no cgroup: the cap is enforced by sampling every %.0f ms)",
                 peak, limit, r->opts.sample_interval * 1000.0);
    } else if (r->gpu_count > 1 && w->watchdog_gpu >= 0) {
        /* Several GPUs: the one that passed its own budget, in its own bytes. */
        uint64_t own = r->gpu_budget[w->watchdog_gpu];
        trial->process.watchdog_overshoot_bytes =
            w->watchdog_gpu_seen > own ? w->watchdog_gpu_seen - own : 0;
        batchfit_format_bytes((double)w->watchdog_gpu_seen, peak, sizeof peak);
        batchfit_format_bytes((double)own, limit, sizeof limit);
        snprintf(trial->message, sizeof trial->message,
                 "stopped by the watchdog: its memory on %s reached %s, past that GPU's budget "
                 "of %s", batchfit_device_spec(r->gpu[w->watchdog_gpu]), peak, limit);
    } else
        snprintf(trial->message, sizeof trial->message,
                 "stopped by the watchdog: its memory reached %s, past the budget of %s", peak,
                 limit);
}

/* Lists this process's children into r->spare, with room for one more (the
 * guard), growing it until every child fits. 0, or BATCHFIT_E_NO_MEMORY. */
static int list_spare(batchfit__runner *r)
{
    for (;;) {
        if (r->spare_capacity >= 16) {
            unsigned n = batchfit__proc_children(r->spare, r->spare_capacity - 1);
            if (n < r->spare_capacity - 1) {
                r->spare_count = n;
                return 0;
            }
        }
        unsigned capacity = r->spare_capacity < 16 ? 16 : 2 * r->spare_capacity;
        long *grown = batchfit__realloc(&r->ctx->allocator, r->spare, capacity * sizeof *grown);
        if (!grown)
            return BATCHFIT_E_NO_MEMORY;
        r->spare = grown;
        r->spare_capacity = capacity;
    }
}

/* What a trial that ran out of memory on a GPU needed at least, scaled as
 * its peak is: on one GPU what it held plus what it asked for; on several
 * (the message does not say which ran out) at least its worst GPU's peak,
 * and at least the smallest of that sum on any GPU. */
static uint64_t gpu_need(const batchfit__runner *r, uint64_t worst, uint64_t tried)
{
    uint64_t least = UINT64_MAX;
    for (unsigned g = 0; g < r->gpu_count; g++) {
        uint64_t need = batchfit__scale_to_budget(r->gpu_peak[g].peak_bytes + tried,
                                                  r->gpu_budget[g], r->opts.budget_bytes);
        if (need < least)
            least = need;
    }
    return least > worst ? least : worst;
}

static void classify(batchfit__runner *r, const watch *w, const output *o, batchfit_trial *trial)
{
    batchfit_trial_process *d = &trial->process;
    uint64_t peak_bytes;
    int peak_known;
    d->ran = 1;
    char peak[32], limit[32];
    d->exited = WIFEXITED(w->status);
    d->exit_code = d->exited ? WEXITSTATUS(w->status) : 128 + WTERMSIG(w->status);
    d->signal = WIFSIGNALED(w->status) ? WTERMSIG(w->status) : 0;
    d->timed_out = w->timed_out;
    d->watchdog_stopped = w->watchdog_stopped;
    d->sampled_peak_bytes = w->sampled_peak;
    d->rusage_peak_bytes = (uint64_t)w->usage.ru_maxrss * 1024;
    peak_bytes = host_peak(r, w, d);
    d->host_peak_bytes = peak_bytes;
    if (r->gpu_count) {
        /* On GPUs the trial is judged by its GPU memory: on several, by the
         * worst GPU against its own budget, scaled to the reference one. */
        int all_nvml = 1;
        peak_known = 1;
        peak_bytes = 0;
        d->device_peak_known = d->device_free_drop_known = 1;
        for (unsigned g = 0; g < r->gpu_count; g++) {
            uint64_t drop = w->free_known[g] ? w->free_start[g] - w->free_min[g] : 0;
            batchfit_gpu_peak *p = &r->gpu_peak[g];
            p->peak_known = w->device_known[g] || w->free_known[g];
            p->peak_bytes = w->device_known[g] ? w->device_peak[g] : drop;
            uint64_t budget = r->gpu_budget[g], ref = r->opts.budget_bytes;
            all_nvml = all_nvml && w->device_known[g];
            peak_known = peak_known && p->peak_known;
            d->device_peak_known = d->device_peak_known && w->device_known[g];
            d->device_free_drop_known = d->device_free_drop_known && w->free_known[g];
            uint64_t scaled = batchfit__scale_to_budget(p->peak_bytes, budget, ref);
            uint64_t scaled_peak = batchfit__scale_to_budget(w->device_peak[g], budget, ref);
            uint64_t scaled_drop = batchfit__scale_to_budget(drop, budget, ref);
            if (scaled > peak_bytes)
                peak_bytes = scaled;
            if (scaled_peak > d->device_peak_bytes)
                d->device_peak_bytes = scaled_peak;
            if (scaled_drop > d->device_free_drop_bytes)
                d->device_free_drop_bytes = scaled_drop;
        }
        if (!d->device_peak_known)
            d->device_peak_bytes = 0;
        if (!d->device_free_drop_known)
            d->device_free_drop_bytes = 0;
        if (r->gpu_count == 1)
            d->peak_source = all_nvml ? "nvml per-process sampling" : "device free memory";
        else
            d->peak_source = all_nvml ? "nvml per-process sampling, worst GPU against its own "
                                        "budget"
                                      : "device free memory, worst GPU against its own budget";
    } else {
        peak_known = peak_bytes > 0;
    }
    /* The cgroup's OOM-kill count is read for every trial: a process killed
     * under a wrapper leaves the wrapper's own exit status, not SIGKILL. */
    uint64_t kills = 0;
    int kills_read = r->cg.path[0] && batchfit__cgroup_oom_kills(&r->cg, &kills) == 0;
    if (kills_read && kills > 0)
        d->oom_killed = 1;
    /* Without a cgroup only the host's count is there: a trial that ended
     * badly while the out-of-memory killer killed on this host most likely
     * lost one of its processes to it (a wrapper reports its own status). */
    uint64_t host_now = 0;
    int ended_badly = d->signal || (d->exited && d->exit_code != 0);
    if (!r->cg.path[0] && ended_badly && w->host_oom_known &&
        batchfit__vmstat_oom_kills(&host_now) == 0) {
        kills_read = 1;
        if (host_now > w->host_oom_start) {
            d->oom_killed = 1;
            kills = host_now - w->host_oom_start;
        }
    }
    batchfit__copy(d->oom_signature, sizeof d->oom_signature, o->oom_source);
    output_tail(o, d->tail, sizeof d->tail);

    trial->peak_known = peak_known;
    trial->peak_bytes = peak_bytes;
    batchfit_format_bytes((double)peak_bytes, peak, sizeof peak);
    if (w->timed_out) {
        trial->outcome = BATCHFIT_ERROR;
        snprintf(trial->message, sizeof trial->message,
                 "timed out after %g s (--timeout); its process group got SIGTERM, then SIGKILL",
                 r->opts.timeout_seconds);
        return;
    }
    if (w->watchdog_stopped) {
        classify_stopped(r, w, trial);
        return;
    }
    if (o->oom_source[0]) {
        trial->outcome = BATCHFIT_OOM;
        /* What it had plus what it asked for is a lower bound on its need,
         * in the memory it was asked of: on the host, what a GPU's allocator
         * asked for is not host memory (a CUDA "Tried to allocate 2.00 GiB"
         * read as 2 GiB of a 95 MiB host budget), nor on a GPU a host
         * allocator's request device memory. */
        int elsewhere = r->gpu_count ? batchfit__oom_on_host(o->oom_source)
                                     : batchfit__oom_on_device(o->oom_source);
        uint64_t tried = elsewhere ? 0 : o->tried_bytes;
        trial->peak_bytes = r->gpu_count ? gpu_need(r, peak_bytes, tried)
                                         : w->sampled_peak + tried;
        /* It needed at least what it held at its peak, too (a trial that
         * ended between two samples held more than they saw). */
        if (!r->gpu_count && peak_bytes > trial->peak_bytes)
            trial->peak_bytes = peak_bytes;
        trial->peak_known = trial->peak_bytes > 0;
        int room = (int)sizeof trial->message - 20 - (int)strlen(o->oom_source);
        snprintf(trial->message, sizeof trial->message, "out of memory (%s): %.*s",
                 o->oom_source, room > 0 ? room : 0, o->oom_line);
        return;
    }
    if (d->oom_killed) {
        classify_oom_kill(r, w, kills, trial);
        return;
    }
    /* A wrapper (sh -c 'trainer; exit $?') whose process was killed by
     * SIGKILL exits 128 + 9 itself, and the shell says "Killed": the same
     * kill, classified the same (it was an error under the wrapper and out
     * of memory without it). */
    int wrapped_kill = d->exited && d->exit_code == 128 + SIGKILL;
    if (d->signal == SIGKILL || wrapped_kill) {
        trial->outcome = BATCHFIT_OOM;
        /* It needed at least what it held: the peak above, in the budget's
         * terms (on GPUs the device's peak; on the host the kernel's
         * high-water marks included). Not the host samples alone: a
         * cgroup's memory.stat trails by the per-CPU charges not yet folded
         * in (12 KiB short of a 48 MiB block held for a second, seen under
         * load), and a killed trial is read at its bound, where that
         * matters. */
        /* Where the kernel's count was read and shows no kill of its own,
         * the SIGKILL came from outside: a memory limit another tool
         * enforces (a scheduler's), or someone's kill -9. Still taken as
         * out of memory, but said. */
        snprintf(trial->message, sizeof trial->message, "%s%s%s",
                 wrapped_kill ? "exited with status 137, as a wrapper whose process was "
                                "killed by SIGKILL does; "
                              : "killed by SIGKILL (status 137)",
                 wrapped_kill ? "" : kills_read ? ", with " : ": ",
                 kills_read ? "no out-of-memory kill recorded by the kernel: a memory limit "
                              "enforced from outside (a scheduler's), a time limit that kills "
                              "(timeout -s KILL) or a kill by hand"
                            : "the out-of-memory killer or a memory limit");
        return;
    }
    if (d->signal) {
        /* Near a resident cap, the peak says the trial was at its limit.
         * Under the virtual-memory cap the resident peak says nothing (the
         * address space is far larger); a crash that a failed allocation
         * causes - SIGSEGV on its NULL, SIGABRT from a checking allocator,
         * SIGBUS - is then the likely reading. */
        int near_rss_cap = r->opts.enforce && r->opts.enforce_bytes &&
                           (double)peak_bytes >= 0.9 * (double)r->opts.enforce_bytes;
        int vm_crash = r->opts.enforce_address_space && r->opts.enforce_bytes &&
                       (d->signal == SIGSEGV || d->signal == SIGABRT || d->signal == SIGBUS);
        int near_cap = near_rss_cap || vm_crash;
        trial->outcome = near_cap && r->opts.crash_is_oom ? BATCHFIT_OOM : BATCHFIT_ERROR;
        if (near_cap) {
            batchfit_format_bytes((double)r->opts.enforce_bytes, limit, sizeof limit);
            char reason[112], end[48];
            if (near_rss_cap)
                snprintf(reason, sizeof reason,
                         "its peak %s was within 10%% of the --enforce cap of %s", peak, limit);
            else
                snprintf(reason, sizeof reason, "it ran under the virtual-memory cap of %s",
                         limit);
            describe_end(d, end, sizeof end);
            snprintf(trial->message, sizeof trial->message,
                     "%s; %s: this looks like an unchecked allocation failing%s", end, reason,
                     r->opts.crash_is_oom ? " (counted as out of memory: --crash-is-oom)"
                                          : " (--crash-is-oom counts it as out of memory)");
        } else {
            describe_end(d, trial->message, sizeof trial->message);
        }
        return;
    }
    if (d->exit_code == 0) {
        trial->outcome = BATCHFIT_FITS;
        return;
    }
    trial->outcome = BATCHFIT_ERROR;
    /* Under the virtual-memory cap, frameworks that reserve address space
     * far beyond what they touch fail as they start ("failed to map
     * segment"), not at the batch: say where to look. */
    if (r->opts.enforce_address_space && r->opts.enforce_bytes)
        snprintf(trial->message, sizeof trial->message,
                 "exited with status %d under the virtual-memory cap (--enforce-address-space), "
                 "which programs that reserve address space, as PyTorch and JAX do, may fail "
                 "under at any batch size; try --enforce alone",
                 d->exit_code);
    else
        snprintf(trial->message, sizeof trial->message, "exited with status %d", d->exit_code);
}

static void close_all(const int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

static int pipe_cloexec(int fds[2])
{
    if (pipe(fds) != 0)
        return -1;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    return 0;
}

/* Under a cgroup's memory limit above batchfit (a container's, a job's,
 * a systemd slice's), a trial that outgrows it makes the kernel pick a
 * process to kill among all of that cgroup's, batchfit included; and for
 * a few milliseconds after it killed the trial (its memory not yet
 * uncharged), any page batchfit touches sets it choosing again, among
 * batchfit and its guard only: a program too large for batch 1 under a
 * 20 MiB limit killed batchfit in about one probe of five (exit 137,
 * nothing said). The trial's own cgroup is therefore capped at the room
 * left under the tightest enclosing limit once reclaim has done its work
 * (shared memory alone held: a trial's own cgroup cannot reclaim what is
 * charged outside it, dirty pages a trial before it wrote included), less
 * a reserve of a hundredth of that limit (2 to 64 MiB) for batchfit: the
 * trial then runs out of memory in its own cgroup, the kernel chooses
 * among its processes only. Never under a host trial's budget: a size within
 * it is the search's to judge, and a room that shrank below it since the
 * probe began (another process of the container at a peak) is no reading
 * of the program. Swap stays as the enclosing cgroup has it (only
 * --enforce, a hard cap, turns it off). 0: no cap (no enclosing limit, or
 * no room for one and no budget). */
static uint64_t room_cap(const batchfit__runner *r)
{
    batchfit__memory_limit lim;
    if (batchfit__cgroup_memory_limit(&lim) != 0 || !lim.limit)
        return 0;
    uint64_t reserve = lim.limit / 100;
    if (reserve < ((uint64_t)2 << 20))
        reserve = (uint64_t)2 << 20;
    if (reserve > ((uint64_t)64 << 20))
        reserve = (uint64_t)64 << 20;
    uint64_t cap = lim.reclaimable > reserve ? lim.reclaimable - reserve : 0;
    /* A GPU's trials have a GPU's budget: host memory is no part of it. */
    uint64_t floor = r->gpu_count ? 0 : r->opts.budget_bytes;
    return cap > floor ? cap : floor;
}

int batchfit__runner_trial(batchfit__runner *runner, uint64_t batch, batchfit_trial *trial)
{
    if (!runner || !trial || batch == 0)
        return BATCHFIT_E_INVALID_ARGUMENT;
    batchfit__runner *r = runner;
    memset(trial, 0, sizeof *trial);
    trial->batch = batch;
    if (batchfit__interrupt_pending())
        return batchfit__fail(r->ctx, BATCHFIT_E_ABORTED, "interrupted");

    launch l;
    memset(&l, 0, sizeof l);
    int rc = launch_build(r, batch, &l);
    if (rc)
        return rc;
    /* The caller's own children are not the trial's (nor to be killed
     * after it), however many; the guard after them. */
    if (list_spare(r) != 0) {
        launch_free(&r->ctx->allocator, &l);
        return batchfit__fail(r->ctx, BATCHFIT_E_NO_MEMORY,
                              "out of memory listing this process's children");
    }
    uint64_t enforced = r->opts.enforce ? r->opts.enforce_bytes : 0;
    uint64_t room = room_cap(r);
    uint64_t cap = room && (!enforced || room < enforced) ? room : enforced;
    /* A cgroup whose limit cannot be written still measures the trial:
     * the room's cap is a safeguard, not the trial's setting. */
    if (r->cg.version && (batchfit__cgroup_create(&r->cg, cap, r->opts.enforce) == 0 ||
                          (cap != enforced &&
                           batchfit__cgroup_create(&r->cg, enforced, r->opts.enforce) == 0)))
        batchfit__cgroup_file(&r->cg, "cgroup.procs", l.procs_file, sizeof l.procs_file);
    /* Started before the trial and its pipes, so its fork delays none of
     * the trial's samples and it holds none of the trial's descriptors.
     * Without a guard the trial still runs, watched as before; only our own
     * death would then leave its descendants behind. */
    if (batchfit__guard_start(&r->guard, &r->cg) != 0)
        batchfit__log(r->ctx, BATCHFIT_LOG_INFO,
                      "no guard for the trial (%s): if batchfit is killed, its descendants "
                      "outlive it", strerror(errno));
    /* fds: the child's stderr pipe, its stdout pipe (read ends first), and
     * the pipe on which it reports a failure before exec. */
    int fds[6] = {-1, -1, -1, -1, -1, -1};
    for (int i = 0; i < 6; i += 2) {
        if (pipe_cloexec(fds + i) != 0) {
            int e = errno;
            close_all(fds, 6);
            batchfit__guard_stop(&r->guard);
            launch_free(&r->ctx->allocator, &l);
            batchfit__cgroup_destroy(&r->cg);
            return batchfit__fail(r->ctx, BATCHFIT_E_TRIAL_ERROR, "cannot create pipe: %s",
                                  strerror(e));
        }
    }
    int read_fds[2] = {fds[0], fds[2]};
    batchfit__proc_tree_clear(&r->tree);
    if (r->guard.pid > 0)
        r->spare[r->spare_count++] = (long)r->guard.pid; /* its memory is not the trial's */
    r->tree.spare = r->spare;
    r->tree.spare_count = r->spare_count;
    r->wakeups = 0;
    r->show_stalled = 0;
    r->show_dropped = 0;
    watch w;
    memset(&w, 0, sizeof w);
    w.watchdog_gpu = -1;
    w.start = batchfit__now();
    w.host_oom_known = batchfit__vmstat_oom_kills(&w.host_oom_start) == 0;
    w.shmem_known = r->opts.host_shmem && !r->cg.path[0] && !job_shares_host() &&
                    batchfit__meminfo_shmem(&w.shmem_low) == 0;
    if (batchfit__self_rss(&w.rss_at_fork) != 0)
        w.rss_at_fork = UINT64_MAX; /* unknown: ru_maxrss cannot be told from our copy */
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        child_exec(r, &l, parent, fds[3], fds[1], fds[5]);
    close_all((int[]){fds[1], fds[3], fds[5]}, 3);
    if (pid < 0) {
        int e = errno;
        batchfit__guard_stop(&r->guard);
        close_all((int[]){fds[0], fds[2], fds[4]}, 3);
        launch_free(&r->ctx->allocator, &l);
        batchfit__cgroup_destroy(&r->cg);
        return batchfit__fail(r->ctx, BATCHFIT_E_TRIAL_ERROR, "cannot fork: %s", strerror(e));
    }
    batchfit__guard_group(&r->guard, pid);
    /* Until it is waited for, its /proc entry stands, an exited one's too;
     * unknown (0), the orphans' high-water RSS counts for none. */
    if (batchfit__proc_start(pid, &w.began) != 0)
        w.began = 0;
    int report[2] = {0, 0};
    ssize_t got = read(fds[4], report, sizeof report);
    close(fds[4]);
    if (got == (ssize_t)sizeof report) {
        char interp[256];
        waitpid(pid, NULL, 0);
        batchfit__guard_stop(&r->guard);
        close_all(read_fds, 2);
        batchfit__cgroup_destroy(&r->cg);
        if (report[0] == STAGE_CGROUP)
            rc = batchfit__fail(r->ctx, BATCHFIT_E_TRIAL_ERROR,
                                "cannot move the trial into its cgroup (%s): %s", l.procs_file,
                                strerror(report[1]));
        else if ((report[1] == ENOENT || report[1] == EACCES) && strchr(l.argv[0], '/') &&
                 batchfit__missing_interpreter(l.argv[0], interp, sizeof interp))
            rc = batchfit__fail(r->ctx, BATCHFIT_E_TRIAL_ERROR,
                                "cannot run \"%s\": its interpreter %s (its #! line) is not "
                                "found or not executable",
                                l.argv[0], interp);
        else
            rc = batchfit__fail(r->ctx, BATCHFIT_E_TRIAL_ERROR, "cannot run \"%s\": %s",
                                l.argv[0], strerror(report[1]));
        trial->outcome = BATCHFIT_ERROR;
        batchfit__copy(trial->message, sizeof trial->message, batchfit_ctx_last_error(r->ctx));
        launch_free(&r->ctx->allocator, &l);
        return rc;
    }
    for (int i = 0; i < 2; i++)
        fcntl(read_fds[i], F_SETFL, fcntl(read_fds[i], F_GETFL) | O_NONBLOCK);
    output *o = batchfit__calloc(&r->ctx->allocator, 1, sizeof *o);
    if (!o) {
        kill(-pid, SIGKILL);
        waitpid(pid, NULL, 0);
        kill_everything(r, pid);
        batchfit__guard_stop(&r->guard);
        close_all(read_fds, 2);
        launch_free(&r->ctx->allocator, &l);
        return batchfit__fail(r->ctx, BATCHFIT_E_NO_MEMORY, "out of memory watching a trial");
    }
    struct stat err_stat;
    if (r->opts.show_output && fstat(2, &err_stat) == 0 &&
        (S_ISFIFO(err_stat.st_mode) || S_ISCHR(err_stat.st_mode)))
        r->show_fd = open("/proc/self/fd/2", O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    supervise(r, pid, read_fds, o, &w);
    close_all(read_fds, 2);
    if (r->show_fd >= 0)
        close(r->show_fd);
    r->show_fd = -1;
    if (r->show_dropped)
        batchfit__log(r->ctx, BATCHFIT_LOG_WARN,
                      "--show-output: %llu bytes of the trial's output at batch size %llu were "
                      "not shown: stderr was not taking them (not being read, full or closed), "
                      "or the probe was interrupted",
                      (unsigned long long)r->show_dropped, (unsigned long long)batch);
    trial->seconds = batchfit__now() - w.start;
    stop_trial(r, pid);
    reap_trial(r, pid, w.began ? w.began : ~0ULL, &w.reaped_hwm);
    classify(r, &w, o, trial);
    trial->process.left_running = w.left_running;
    batchfit__copy(trial->process.left_running_name, sizeof trial->process.left_running_name,
                   w.left_name);
    kill_everything(r, pid);
    batchfit__guard_stop(&r->guard);
    batchfit__free(&r->ctx->allocator, o);
    launch_free(&r->ctx->allocator, &l);
    if (w.failed)
        return batchfit__fail(r->ctx, BATCHFIT_E_NO_MEMORY,
                              "out of memory watching the trial at batch size %llu",
                              (unsigned long long)batch);
    if (w.interrupted)
        return batchfit__fail(r->ctx, BATCHFIT_E_ABORTED,
                              "interrupted during the trial at batch size %llu",
                              (unsigned long long)batch);
    return BATCHFIT_OK;
}
