/* batchfit probe: runs a command (or the sim device's synthetic step) at a
 * few batch sizes and reports the largest that fits. The probe itself is
 * the library's (batchfit_probe_command, batchfit_probe); this file checks
 * the input before anything runs, opens the device, and reports. */
#include "probe.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A file that execvp would run: a regular file we may execute (a directory
 * has execute permission too, but cannot be run). */
static int runnable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Is the program runnable: a path, or a name on PATH, searched as execvp
 * does (an empty entry is the current directory)? */
static int command_exists(const char *name)
{
    if (strchr(name, '/'))
        return runnable(name);
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    char buf[4096];
    for (;;) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        int n = len ? snprintf(buf, sizeof buf, "%.*s/%s", (int)len, path, name)
                    : snprintf(buf, sizeof buf, "./%s", name);
        if (n > 0 && (size_t)n < sizeof buf && runnable(buf))
            return 1;
        if (!colon)
            return 0;
        path = colon + 1;
    }
}

static void on_signal(int sig)
{
    probe_interrupted = sig;
    batchfit_interrupt(sig);
}

/* Every signal that would end batchfit stops the probe instead: the trial's
 * group is killed, its cgroup removed, the JSON written, and batchfit exits
 * 128 + the signal. A closed pipe on our output is not a reason to stop
 * (writes fail with EPIPE instead). */
static void handle_signals(void)
{
    static const int fatal[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        sigaction(fatal[i], &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
}

/* Warnings reach the user as they happen (the library logs every warning
 * it adds to the result); other levels are the CLI's own lines. */
static void on_log(batchfit_log_level level, const char *message, void *userdata)
{
    const probe_cli *c = userdata;
    if (level == BATCHFIT_LOG_WARN && !c->quiet)
        fprintf(stderr, "batchfit: warning: %s\n", message);
}

/* Bad input found before the probe ran: the message names the input, the
 * JSON (when asked for) records the same failure, nothing runs. */
static int refuse(session *s, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int refuse(session *s, int code, const char *fmt, ...)
{
    char message[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    fprintf(stderr, "batchfit probe: %s\n", message);
    if (s->export.path && batchfit_result_failed(s->ctx, code, message, &s->result) == BATCHFIT_OK)
        probe_export_json(s, 1);
    return batchfit_exit_status(code);
}

/* Everything that can be checked without running anything: the
 * hyperparameters file, the VRAM limit's environment, the command, the
 * device. Returns -1 to go on, or an exit code. */
static int check_input(session *s)
{
    probe_cli *c = s->cli;
    if (c->hyperparameters) {
        uint64_t requested = 0;
        if (batchfit_read_hyperparameters(s->ctx, c->hyperparameters, &requested))
            return refuse(s, BATCHFIT_E_PARSE, "%s", batchfit_ctx_last_error(s->ctx));
        if (c->max_text && requested != c->opts.requested_max)
            fprintf(stderr, "batchfit: --max %s overrides max_batch_size from %s\n", c->max_text,
                    c->hyperparameters);
        else
            c->opts.requested_max = requested;
    }
    if (!c->vram_flag) {
        if (batchfit_resolve_vram_limit(s->ctx, NULL, NULL, &c->opts.vram_limit_bytes,
                                        &c->opts.vram_limit_source))
            return refuse(s, BATCHFIT_E_PARSE, "%s", batchfit_ctx_last_error(s->ctx));
        /* The child gets the user's own text, not a rounded copy. */
        if (c->opts.vram_limit_bytes)
            c->cmd.vram_limit_text = getenv(strcmp(c->opts.vram_limit_source,
                                                   "environment variable VRAM_LIMIT_GB") == 0
                                                ? "VRAM_LIMIT_GB"
                                                : "BATCHFIT_VRAM_LIMIT_GB");
    } else {
        c->cmd.vram_limit_text = c->vram_flag;
    }
    int sim = strncmp(c->device_spec, "sim", 3) == 0;
    if (sim && c->command_argc > 0)
        return refuse(s, BATCHFIT_E_INVALID_ARGUMENT,
                      "--device %s runs the sim device's synthetic step; it takes no COMMAND "
                      "(see batchfit probe --help)",
                      c->device_spec);
    if (!sim && c->command_argc == 0)
        return refuse(s, BATCHFIT_E_INVALID_ARGUMENT,
                      "no COMMAND given: batchfit probe [options] -- COMMAND [ARGS...] (see "
                      "batchfit probe --help)");
    if (!sim && !command_exists(c->command[0]))
        return refuse(s, BATCHFIT_E_INVALID_ARGUMENT,
                      "command not found or not executable: %s", c->command[0]);
    if (batchfit_device_open(s->ctx, c->device_spec, &s->device) != BATCHFIT_OK)
        return refuse(s, BATCHFIT_E_INVALID_ARGUMENT, "--device: %s",
                      batchfit_ctx_last_error(s->ctx));
    if (strcmp(c->device_spec, "auto") == 0 && !c->quiet &&
        strcmp(batchfit_device_kind(s->device), "cuda") == 0) {
        batchfit_device_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        batchfit_device_describe(s->device, &info);
        fprintf(stderr, "batchfit: device %s (auto: %s %s)\n", batchfit_device_spec(s->device),
                info.name, info.uuid);
    }
    return -1;
}

static int run(session *s)
{
    probe_cli *c = s->cli;
    /* The export target first, so every later refusal is reported there. */
    if (c->export_json && probe_export_prepare(&s->export, c->export_json) != 0)
        return EXIT_USAGE;
    handle_signals();
    int rc = check_input(s);
    if (rc >= 0)
        return rc;
    c->opts.progress = probe_on_trial;
    c->opts.progress_userdata = s;
    int code;
    if (c->command_argc == 0)
        code = batchfit_probe(s->ctx, &c->opts, s->device, batchfit_sim_step(), NULL, &s->result);
    else
        code = batchfit_probe_command(s->ctx, &c->opts, s->device, &c->cmd, &s->result);
    int exit_code = s->result && s->result->interrupted ? 128 + s->result->interrupt_signal
                                                        : batchfit_exit_status(code);
    if (code != BATCHFIT_OK)
        probe_print_failure(s);
    if (probe_export_json(s, 1) != 0 && exit_code == EXIT_FOUND)
        exit_code = EXIT_EXPORT_FAILED;
    if (c->plot_path && s->result && plot_write(s->ctx, s->result, c->plot_path) != 0 &&
        exit_code == EXIT_FOUND)
        exit_code = EXIT_EXPORT_FAILED;
    if (code == BATCHFIT_OK) {
        probe_print_summary(s);
        if (s->export.kind != EXPORT_STDOUT || !s->export.path)
            printf("batch_size=%llu\n", (unsigned long long)s->result->batch_size);
    }
    return exit_code;
}
int cli_probe(int argc, char **argv)
{
    probe_cli c;
    session s;
    memset(&s, 0, sizeof s);
    s.cli = &c;
    if (batchfit_ctx_create(NULL, &s.ctx) != BATCHFIT_OK)
        return EXIT_INTERNAL;
    int exit_code = probe_parse_args(s.ctx, &c, argc, argv);
    if (exit_code < 0) {
        batchfit_ctx_set_log(s.ctx, on_log, &c, BATCHFIT_LOG_WARN);
        exit_code = run(&s);
    }
    batchfit_result_free(s.result);
    batchfit_device_free(s.device);
    batchfit_ctx_free(s.ctx);
    return exit_code;
}
