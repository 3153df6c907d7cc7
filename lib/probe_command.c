/* The child-process trial source: a command run once per trial (child.c
 * runs and classifies it). Its OOM table and runner are made once the
 * budget is known and freed after the search, on every path. */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct command_source {
    trial_source base; /* first: the orchestration passes the base */
    const batchfit_command_options *copts;
    batchfit__oom_table *oom;
    batchfit__runner *runner;
    batchfit_result *result;
    batchfit_ctx *result_ctx;
    uint64_t gpu_budget[BATCHFIT_MAX_GPUS];
    char vram_text[64];
    /* Trials in parallel (opts->parallel above 1): one runner per GPU of
     * identical GPUs, each showing the command only its own GPU. */
    unsigned parallel;
    int alone; /* no other rank's trials run with ours (see host_shmem) */
    unsigned gpu_runners;
    batchfit__runner *gpu_runner[BATCHFIT_MAX_GPUS];
    batchfit_device *device;
    int left_warned; /* a trial left processes running, and the probe said so */
} command_source;

void batchfit_command_options_init(batchfit_command_options *copts)
{
    if (!copts)
        return;
    *copts = (batchfit_command_options){0};
    copts->struct_size = sizeof *copts;
    copts->kill_grace_seconds = 2.0;
    copts->watchdog = 1;
    copts->sample_interval = 0.02;
    copts->cgroups = BATCHFIT_CGROUPS_AUTO;
}

/* The first trial whose main process exited with processes of its own
 * still running says so: they were stopped then (a trial lasts as long as
 * its main process), so work handed to a process that runs on was not
 * measured, and such a command reads as fitting at every size. Once a
 * probe: it is the command's habit, not the trial's. */
static int warn_left_running(command_source *c, uint64_t batch, const batchfit_trial *t)
{
    const batchfit_trial_process *d = &t->process;
    if (c->left_warned || !d->left_running)
        return BATCHFIT_OK;
    c->left_warned = 1;
    return batchfit__result_warn(
        c->result_ctx, c->result,
        "at batch size %llu the command's main process exited with %u process%s of its own "
        "still running (%s%s), and %s stopped then: a trial lasts as long as its main process, "
        "so work left to a process that runs on (a command ending in '&', a daemon) is not "
        "measured; run that work in the foreground",
        (unsigned long long)batch, d->left_running, d->left_running == 1 ? "" : "es",
        d->left_running_name[0] ? d->left_running_name : "?",
        d->left_running > 1 ? " and others" : "", d->left_running == 1 ? "it was" : "they were");
}

static int command_trial(void *userdata, uint64_t batch, batchfit_trial *trial)
{
    command_source *c = userdata;
    int rc = batchfit__runner_trial(c->runner, batch, trial);
    if (rc == BATCHFIT_OK)
        rc = warn_left_running(c, batch, trial);
    /* Each GPU's peak goes beside the trial the search records next. */
    unsigned count = 0;
    const batchfit_gpu_peak *peaks = batchfit__runner_gpu_peaks(c->runner, &count);
    if (rc == BATCHFIT_OK && c->result->gpu_count &&
        batchfit__result_set_gpu_peaks(c->result, c->result->trial_count, peaks) != BATCHFIT_OK)
        return batchfit__fail(c->result_ctx, BATCHFIT_E_NO_MEMORY,
                              "out of memory recording the trial's GPU peaks");
    return rc;
}

/* What a trial's helper process sends back. */
typedef struct helper_report {
    int rc;
    batchfit_trial trial;
    batchfit_gpu_peak peak;
    char error[BATCHFIT_ERRMSG_MAX];
} helper_report;

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* In a helper: a stop request (the probing process forwards its interrupt,
 * or died) stops the trial as an interrupt stops a single one. */
static void helper_stop(int sig)
{
    batchfit_interrupt(sig);
}

/* Reads what the helpers send until each has closed its pipe. An interrupt
 * of the probing process (a signal, or batchfit_interrupt from another
 * thread) is passed on to every helper once, as SIGTERM. */
static void gather(const pid_t *pid, const int *fd, size_t count, helper_report *reports,
                   size_t *got)
{
    int open_fd[BATCHFIT_MAX_GPUS];
    size_t left = count;
    int forwarded = 0;
    for (size_t j = 0; j < count; j++) {
        open_fd[j] = 1;
        got[j] = 0;
    }
    while (left) {
        if (!forwarded && batchfit__interrupt_pending()) {
            for (size_t j = 0; j < count; j++)
                if (open_fd[j])
                    kill(pid[j], SIGTERM);
            forwarded = 1;
        }
        struct pollfd pf[BATCHFIT_MAX_GPUS];
        size_t map[BATCHFIT_MAX_GPUS], n = 0;
        for (size_t j = 0; j < count; j++)
            if (open_fd[j]) {
                pf[n].fd = fd[j];
                pf[n].events = POLLIN;
                pf[n].revents = 0;
                map[n++] = j;
            }
        int ready = poll(pf, (nfds_t)n, 50);
        if (ready <= 0)
            continue;
        for (size_t i = 0; i < n; i++) {
            if (!pf[i].revents)
                continue;
            size_t j = map[i];
            char *dst = (char *)&reports[j];
            ssize_t r = got[j] < sizeof reports[j]
                            ? read(fd[j], dst + got[j], sizeof reports[j] - got[j])
                            : read(fd[j], dst, 0) /* full: only the end is left */;
            if (r > 0)
                got[j] += (size_t)r;
            else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
                open_fd[j] = 0;
                left--;
            }
        }
    }
}

/* A round on identical GPUs: each trial runs at once in a helper process
 * of its own (forked from this single thread; the helper is the subreaper
 * of its trial's processes), on its own GPU with its own runner, and
 * sends its trial back through a pipe. Every helper is waited for on every
 * path; an interrupt reaches each (the same process group), which stops
 * its trial as a single trial would be stopped. */
static int command_round(void *userdata, const uint64_t *batches, size_t count,
                         batchfit_trial *trials)
{
    command_source *c = userdata;
    pid_t pid[BATCHFIT_MAX_GPUS];
    int fd[BATCHFIT_MAX_GPUS];
    size_t started = 0;
    int rc = BATCHFIT_OK;
    static helper_report reports[BATCHFIT_MAX_GPUS];
    pid_t parent = getpid();
    for (; started < count && started < c->gpu_runners; started++) {
        int p[2];
        if (pipe(p) != 0) {
            rc = batchfit__fail(c->result_ctx, BATCHFIT_E_TRIAL_ERROR,
                                "cannot make a pipe for a parallel trial: %s", strerror(errno));
            break;
        }
        fflush(NULL);
        pid_t h = fork();
        if (h < 0) {
            close(p[0]);
            close(p[1]);
            rc = batchfit__fail(c->result_ctx, BATCHFIT_E_TRIAL_ERROR,
                                "cannot start a parallel trial: %s", strerror(errno));
            break;
        }
        if (h == 0) {
            close(p[0]);
            for (size_t j = 0; j < started; j++)
                close(fd[j]);
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = helper_stop;
            sigemptyset(&sa.sa_mask);
            sigaction(SIGTERM, &sa, NULL);
            sigaction(SIGINT, &sa, NULL);
            signal(SIGPIPE, SIG_IGN);
            prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
            if (getppid() != parent)
                batchfit_interrupt(SIGTERM);
            prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
            helper_report *rep = &reports[started];
            memset(rep, 0, sizeof *rep);
            rep->trial = trials[started];
            rep->rc = batchfit__runner_trial(c->gpu_runner[started], batches[started], &rep->trial);
            unsigned n = 0;
            const batchfit_gpu_peak *peaks = batchfit__runner_gpu_peaks(c->gpu_runner[started], &n);
            if (n)
                rep->peak = peaks[0];
            if (rep->rc)
                batchfit__copy(rep->error, sizeof rep->error,
                               batchfit_ctx_last_error(c->result_ctx));
            _exit(write_all(p[1], rep, sizeof *rep) == 0 ? 0 : 1);
        }
        close(p[1]);
        pid[started] = h;
        fd[started] = p[0];
    }
    size_t got[BATCHFIT_MAX_GPUS];
    gather(pid, fd, started, reports, got);
    for (size_t j = 0; j < started; j++) {
        close(fd[j]);
        while (waitpid(pid[j], NULL, 0) < 0 && errno == EINTR)
            ;
        if (rc)
            continue;
        if (got[j] != sizeof reports[j])
            rc = batchfit__fail(c->result_ctx, BATCHFIT_E_TRIAL_ERROR,
                                "the parallel trial at batch size %llu on %s ended without a "
                                "report",
                                (unsigned long long)batches[j],
                                batchfit_device_spec(c->result->gpu_count
                                                         ? batchfit__device_gpu(c->device, (unsigned)j)
                                                         : c->device));
        else if (reports[j].rc)
            rc = batchfit__fail(c->result_ctx, reports[j].rc, "%s", reports[j].error);
    }
    if (rc)
        return rc;
    size_t first = c->result->trial_count;
    for (size_t j = 0; j < count; j++) {
        trials[j] = reports[j].trial;
        if (warn_left_running(c, batches[j], &trials[j]) != BATCHFIT_OK)
            return BATCHFIT_E_NO_MEMORY;
        /* Against the search's budget (the tightest GPU's): scaled from
         * this GPU's own, as a trial on several GPUs is. */
        if (trials[j].peak_known)
            trials[j].peak_bytes = batchfit__scale_to_budget(
                trials[j].peak_bytes, c->gpu_budget[j], c->result->budget.budget_bytes);
        batchfit_gpu_peak row[BATCHFIT_MAX_GPUS];
        memset(row, 0, sizeof row);
        row[j] = reports[j].peak;
        if (c->result->gpu_count &&
            batchfit__result_set_gpu_peaks(c->result, first + j, row) != BATCHFIT_OK)
            return batchfit__fail(c->result_ctx, BATCHFIT_E_NO_MEMORY,
                                  "out of memory recording the trial's GPU peaks");
    }
    return BATCHFIT_OK;
}

/* Trials in parallel need GPUs that are the same: the same name and the
 * same total memory. */
static int identical_gpus(batchfit_ctx *ctx, batchfit_device *device, unsigned count)
{
    batchfit_device_info first, one;
    uint64_t first_total = 0;
    for (unsigned i = 0; i < count; i++) {
        batchfit_device *g = batchfit__device_gpu(device, i);
        batchfit_device_info *info = i ? &one : &first;
        memset(info, 0, sizeof *info);
        info->struct_size = sizeof *info;
        uint64_t total = 0, free_bytes = 0;
        if (batchfit_device_describe(g, info) != BATCHFIT_OK ||
            batchfit_device_memory(g, &total, &free_bytes) != BATCHFIT_OK)
            return batchfit__fail(ctx, BATCHFIT_E_DEVICE, "%s: cannot read what it is",
                                  batchfit_device_spec(g));
        if (i == 0)
            first_total = total;
        else if (strcmp(one.name, first.name) != 0 || total != first_total)
            return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                                  "trials in parallel need identical GPUs: %s is %s with %llu "
                                  "bytes, %s is %s with %llu bytes",
                                  batchfit_device_spec(batchfit__device_gpu(device, 0)), first.name,
                                  (unsigned long long)first_total, batchfit_device_spec(g),
                                  one.name, (unsigned long long)total);
    }
    return BATCHFIT_OK;
}

static void free_gpu_runners(command_source *c)
{
    for (unsigned i = 0; i < c->gpu_runners; i++)
        batchfit__runner_free(c->gpu_runner[i]);
    c->gpu_runners = 0;
}

/* One runner per GPU, each with the GPU alone and its own budget. */
static int make_gpu_runners(command_source *c, batchfit_ctx *ctx, batchfit_device *device,
                            const batchfit__runner_options *base, batchfit_result *result)
{
    unsigned count = batchfit__device_gpus(device);
    if (strcmp(device->ops->kind, "cuda") != 0 || count < 2)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "trials in parallel need several identical GPUs (--device "
                              "cuda:all or cuda:0,1,...); %s is one device",
                              batchfit_device_spec(device));
    int rc = identical_gpus(ctx, device, count);
    for (unsigned i = 0; rc == BATCHFIT_OK && i < count; i++) {
        batchfit__runner_options ro = *base;
        ro.device = batchfit__device_gpu(device, i);
        ro.gpu_budget_bytes = NULL;
        ro.budget_bytes = ro.enforce_bytes = c->gpu_budget[i];
        rc = batchfit__runner_create(ctx, &ro, &c->gpu_runner[i]);
        if (rc == BATCHFIT_OK)
            c->gpu_runners = i + 1;
    }
    if (rc) {
        free_gpu_runners(c);
        return rc;
    }
    c->base.round = command_round;
    c->base.round_width = c->parallel < count ? c->parallel : count;
    c->device = device;
    return batchfit__result_warn(ctx, result,
                                 "trials in parallel: up to %u a round, one on each GPU",
                                 c->base.round_width) == BATCHFIT_OK
               ? BATCHFIT_OK
               : BATCHFIT_E_NO_MEMORY;
}

static int command_begin(trial_source *src, batchfit_ctx *ctx, batchfit_device *device,
                         batchfit_result *result)
{
    command_source *c = (command_source *)src;
    const batchfit_command_options *co = c->copts;
    int rc = batchfit__oom_table_create(ctx, &c->oom);
    for (size_t i = 0; rc == BATCHFIT_OK && co->oom_patterns && co->oom_patterns[i]; i++)
        rc = batchfit__oom_table_add(c->oom, co->oom_patterns[i]);
    if (rc) {
        batchfit__oom_table_free(c->oom);
        return rc;
    }
    batchfit__runner_options ro;
    batchfit__runner_options_init(&ro);
    ro.argv = co->argv;
    ro.timeout_seconds = co->timeout_seconds;
    ro.kill_grace_seconds = co->kill_grace_seconds;
    ro.budget_bytes = result->budget.budget_bytes;
    ro.watchdog = co->watchdog;
    ro.enforce = co->enforce;
    ro.enforce_address_space = co->enforce_address_space;
    ro.enforce_bytes = result->budget.budget_bytes;
    if (co->enforce_address_space)
        batchfit__result_set_address_space_cap(result, ro.enforce_bytes);
    ro.crash_is_oom = co->crash_is_oom;
    ro.sample_interval = co->sample_interval;
    ro.show_output = co->show_output;
    ro.cgroups = co->cgroups;
    ro.host_shmem = c->alone;
    ro.oom = c->oom;
    /* A GPU's trials are judged by their GPU memory (each GPU of several
     * against its own budget); the host's by RSS. */
    if (strcmp(device->ops->kind, "cuda") == 0)
        ro.device = device;
    c->result = result;
    c->result_ctx = ctx;
    for (size_t i = 0; i < result->gpu_count; i++)
        c->gpu_budget[i] = result->gpus[i].budget_bytes;
    if (result->gpu_count)
        ro.gpu_budget_bytes = c->gpu_budget;
    ro.vram_limit_gb = co->vram_limit_text;
    if (!ro.vram_limit_gb && result->budget.vram_limit_bytes) {
        snprintf(c->vram_text, sizeof c->vram_text, "%.9g",
                 (double)result->budget.vram_limit_bytes / 1073741824.0);
        ro.vram_limit_gb = c->vram_text;
    }
    rc = batchfit__runner_create(ctx, &ro, &c->runner);
    if (rc == BATCHFIT_OK && c->parallel > 1) {
        rc = make_gpu_runners(c, ctx, device, &ro, result);
        if (rc)
            batchfit__runner_free(c->runner);
        if (rc)
            c->runner = NULL;
    }
    if (rc == BATCHFIT_OK)
        rc = batchfit__result_keep(result, &result->mechanisms,
                                   batchfit__runner_mechanisms(c->parallel > 1 ? c->gpu_runner[0]
                                                                               : c->runner));
    if (rc) {
        free_gpu_runners(c);
        batchfit__runner_free(c->runner);
        batchfit__oom_table_free(c->oom);
        return rc == BATCHFIT_E_NO_MEMORY
                   ? batchfit__fail(ctx, rc, "out of memory preparing the command")
                   : rc;
    }
    result->sample_interval = co->sample_interval;
    if (!batchfit__runner_has_placeholder(c->runner))
        rc = batchfit__result_warn(ctx, result,
                                   "no {batch} in the command; the batch size reaches it only "
                                   "through BATCHFIT_BATCH_SIZE");
    if (rc) {
        free_gpu_runners(c);
        batchfit__runner_free(c->runner);
        batchfit__oom_table_free(c->oom);
    }
    return rc;
}

static void command_end(trial_source *src)
{
    command_source *c = (command_source *)src;
    free_gpu_runners(c);
    batchfit__runner_free(c->runner);
    batchfit__oom_table_free(c->oom);
    c->runner = NULL;
    c->oom = NULL;
}

/* The settings of the command that change its outcomes, for the cache key. */
static void command_settings(batchfit__buf *b, const batchfit_command_options *co)
{
    batchfit__buf_printf(b,
                         "command timeout=%.17g watchdog=%d enforce=%d/%d crash_is_oom=%d "
                         "sample_interval=%.17g cgroups=%d vram_text=%s",
                         co->timeout_seconds, co->watchdog, co->enforce,
                         co->enforce_address_space, co->crash_is_oom,
                         co->sample_interval, (int)co->cgroups,
                         co->vram_limit_text ? co->vram_limit_text : "");
    for (size_t i = 0; co->oom_patterns && co->oom_patterns[i]; i++)
        batchfit__buf_printf(b, "\noom_pattern %s", co->oom_patterns[i]);
}

/* A file that execvp would run: a regular file we may execute (a directory
 * has execute permission too, but cannot be run). */
static int runnable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The file execvp would run for name: name itself where it holds a slash,
 * else the first runnable one along PATH (an empty entry is the current
 * directory). 0, or -1 when there is none. */
static int resolve_program(const char *name, char *out, size_t len)
{
    if (strchr(name, '/'))
        return runnable(name) && (size_t)snprintf(out, len, "%s", name) < len ? 0 : -1;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (;;) {
        const char *colon = strchr(path, ':');
        size_t dir = colon ? (size_t)(colon - path) : strlen(path);
        int n = dir ? snprintf(out, len, "%.*s/%s", (int)dir, path, name)
                    : snprintf(out, len, "./%s", name);
        if (n > 0 && (size_t)n < len && runnable(out))
            return 0;
        if (!colon)
            return -1;
        path = colon + 1;
    }
}

int batchfit__missing_interpreter(const char *path, char *interp, size_t len)
{
    char line[512];
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    if (n < 2 || line[0] != '#' || line[1] != '!')
        return 0;
    const char *p = line + 2;
    while (*p == ' ' || *p == '\t')
        p++;
    /* A #! line ending in a carriage return (Windows line endings) runs
     * nothing: the interpreter, or its last argument ("sh\r" after
     * /usr/bin/env), carries it. The whole line is returned, with it. */
    size_t end = strcspn(p, "\n");
    if (p[end] == '\n' && end > 0 && p[end - 1] == '\r' && end < len) {
        memcpy(interp, p, end);
        interp[end] = '\0';
        return 1;
    }
    /* As the kernel reads it: a carriage return is part of the name (a
     * script saved with Windows line endings asks for "/bin/sh\r"). */
    size_t k = strcspn(p, " \t\n");
    if (k == 0 || k >= len || (p[k] != ' ' && p[k] != '\t' && p[k] != '\n'))
        return 0;
    memcpy(interp, p, k);
    interp[k] = '\0';
    if (!runnable(interp))
        return 1;
    /* #!/usr/bin/env NAME: env runs, and fails to find NAME on PATH
     * (exit 127 on every trial, read as a bug). Options (env -S) and
     * assignments are left to env. */
    const char *base = strrchr(interp, '/');
    if (strcmp(base ? base + 1 : interp, "env") != 0 || p[k] == '\n')
        return 0;
    const char *w = p + k;
    while (*w == ' ' || *w == '\t')
        w++;
    size_t wl = strcspn(w, " \t\n");
    if (wl == 0 || wl >= len || w[0] == '-' || memchr(w, '=', wl))
        return 0;
    /* interp now names what env looks for (read only when 1 is returned). */
    char found[4096];
    memcpy(interp, w, wl);
    interp[wl] = '\0';
    return resolve_program(interp, found, sizeof found) != 0;
}

int batchfit_command_check(batchfit_ctx *ctx, const char *program)
{
    if (!program || !program[0])
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "no command to run");
    char path[4096], interp[256];
    if (resolve_program(program, path, sizeof path) != 0) {
        /* Say which: a path names one file, a bare name is looked up. */
        struct stat st;
        const char *why = "not found or not executable";
        if (!strchr(program, '/'))
            why = "not found on PATH (or not executable there)";
        else if (stat(program, &st) != 0)
            why = errno == ENOENT ? "no such file" : strerror(errno);
        else if (S_ISDIR(st.st_mode))
            why = "a directory, not a program";
        else if (!S_ISREG(st.st_mode))
            why = "not a regular file";
        else
            why = "not executable (no execute permission)";
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "command %.300s%s: %s", program,
                              strlen(program) > 300 ? "..." : "", why);
    }
    if (batchfit__missing_interpreter(path, interp, sizeof interp)) {
        size_t k = strlen(interp);
        if (k > 1 && interp[k - 1] == '\r') {
            interp[k - 1] = '\0';
            return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                                  "command %s: its #! line \"#!%s\\r\" ends in a carriage return, "
                                  "which the interpreter's name or its last argument then carries "
                                  "(the script has Windows line endings: convert it, e.g. "
                                  "sed -i 's/\\r$//' %s)",
                                  program, interp, program);
        }
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "command %s: its interpreter %s (its #! line) is not found or not "
                              "executable",
                              program, interp);
    }
    return BATCHFIT_OK;
}

/* The command options a probe can run with. */
static int check_command(batchfit_ctx *ctx, const batchfit_command_options *copts)
{
    if (!copts || copts->struct_size < sizeof *copts)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "command options: not initialised with "
                              "batchfit_command_options_init()");
    if (!copts->argv)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "no command to run");
    int rc = batchfit_command_check(ctx, copts->argv[0]);
    if (rc)
        return rc;
    /* Every duration is a finite number of seconds that a person could
     * wait for (at most a million): NaN or 1e300 would make a trial
     * unbounded. */
    if (!(copts->sample_interval > 0.0 && copts->sample_interval <= 1e6))
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "command options: sample_interval (%g s) must be in (0, 1e6]",
                              copts->sample_interval);
    if (!(copts->timeout_seconds >= 0.0 && copts->timeout_seconds <= 1e9))
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "command options: timeout_seconds (%g) must be in [0, 1e9]",
                              copts->timeout_seconds);
    if (!(copts->kill_grace_seconds >= 0.0 && copts->kill_grace_seconds <= 1e6))
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "command options: kill_grace_seconds (%g) must be in [0, 1e6]",
                              copts->kill_grace_seconds);
    /* A crash near the cap needs a cap (the CLI's --crash-is-oom). */
    if (copts->crash_is_oom && !copts->enforce && !copts->enforce_address_space)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "command options: crash_is_oom counts a crash near the cap enforce "
                              "or enforce_address_space sets as out of memory; neither is set");
    return BATCHFIT_OK;
}

int batchfit_probe_command(batchfit_ctx *ctx, const batchfit_options *opts,
                           batchfit_device *device, const batchfit_command_options *copts,
                           batchfit_result **out)
{
    if (!ctx || !out)
        return BATCHFIT_E_INVALID_ARGUMENT;
    *out = NULL;
    batchfit_options own;
    int rc = batchfit__options_take(ctx, &opts, &own);
    /* Options read but refused (a bad lattice) under ranks: this rank
     * still joins the first exchange, as any refusal does. */
    if (rc)
        return opts == &own ? batchfit__ranks_refused(ctx, opts, rc, NULL) : rc;
    /* Under opts->ranks, a refusal still joins the job's first exchange. */
    rc = check_command(ctx, copts);
    if (rc)
        return batchfit__ranks_refused(ctx, opts, rc, NULL);
    batchfit__buf settings;
    batchfit__buf_init(&settings, &ctx->allocator);
    command_settings(&settings, copts);
    if (!batchfit__buf_text(&settings))
        return batchfit__ranks_refused(
            ctx, opts,
            batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory preparing the command"),
            NULL);
    command_source src = {
        .base = {.cache_key = opts->cache_key,
                 .argv = copts->argv,
                 .settings = batchfit__buf_text(&settings),
                 .step_min = 0,
                 .begin = command_begin,
                 .trial = command_trial,
                 .end = command_end},
        .copts = copts,
        /* Any job of several ranks: they probe at once, and may share a host. */
        .alone = !(batchfit__ranks_valid(opts->ranks) && opts->ranks->size > 1),
        /* Across ranks each rank runs one trial a round on its one device. */
        .parallel = batchfit__ranks_active(opts) ? 0 : opts->parallel,
    };
    rc = batchfit__probe_run(ctx, opts, device, &src.base, out);
    batchfit__buf_free(&settings);
    return rc;
}
