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
    /* The JSON and the other ranks learn of it through a result. */
    if (s->export.path || s->mpi)
        batchfit_result_failed(s->ctx, code, message, &s->result);
    return batchfit_exit_status(code);
}

/* Ranks of an MPI job that probe the host on one node share its memory:
 * each judged against all of it, two ranks of the example trainer under a
 * 400 MiB limit each kept 534-700 samples, the job then needed 386-462 MiB
 * and the kernel killed one. Each rank's budget is its share of what is
 * free (the ranks on this node, from the MPI_COMM_TYPE_SHARED split); an
 * explicit --memory-budget is each rank's own, and one above that share is
 * warned of. */
static void share_the_host(session *s)
{
    probe_cli *c = s->cli;
    int ranks = probe_mpi_local_size(s->mpi);
    uint64_t total = 0, free_bytes = 0;
    if (ranks < 2 || strcmp(batchfit_device_kind(s->device), "host") != 0 ||
        batchfit_device_memory(s->device, &total, &free_bytes) != BATCHFIT_OK)
        return;
    uint64_t share = free_bytes / (uint64_t)ranks;
    char share_text[32], free_text[32], asked[32];
    batchfit_format_bytes((double)share, share_text, sizeof share_text);
    batchfit_format_bytes((double)free_bytes, free_text, sizeof free_text);
    if (!c->opts.memory_budget_bytes) {
        c->opts.memory_budget_bytes = share;
        if (!c->quiet && probe_mpi_rank(s->mpi) == 0)
            fprintf(stderr,
                    "batchfit: host memory: %d ranks of this job probe this node's host memory: "
                    "each takes 1/%d of the %s free, %s (--memory-budget sets each rank's)\n",
                    ranks, ranks, free_text, share_text);
    } else if (c->opts.memory_budget_bytes > share && !c->quiet) {
        batchfit_format_bytes((double)c->opts.memory_budget_bytes, asked, sizeof asked);
        fprintf(stderr,
                "batchfit: warning: rank %d: --memory-budget %s is each rank's, and %d ranks "
                "probe this node's host memory: together they may need more than the %s free "
                "(%s each)\n",
                probe_mpi_rank(s->mpi), asked, ranks, free_text, share_text);
    }
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
        if (c->max_text && requested && requested != c->opts.requested_max)
            fprintf(stderr, "batchfit: --max %s overrides max_batch_size from %s\n", c->max_text,
                    c->hyperparameters);
        else if (!c->max_text)
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
    /* One sim device has nothing to run beside, as one GPU has not: its
     * rounds ran BATCHFIT_MAX_GPUS trials one after another (32-40 trials
     * where one at a time takes 3-6), with no width to set. */
    if (sim && c->parallel && !c->mpi)
        return refuse(s, BATCHFIT_E_INVALID_ARGUMENT,
                      "--parallel runs a trial on each of several identical GPUs (--device "
                      "cuda:all) or --mpi ranks; --device %s is one device",
                      c->device_spec);
    if (sim && c->command_argc > 0)
        return refuse(s, BATCHFIT_E_INVALID_ARGUMENT,
                      "--device %s runs the sim device's synthetic step; it takes no COMMAND "
                      "(see batchfit probe --help)",
                      c->device_spec);
    if (sim && (c->oom_pattern_count || c->cmd.enforce || c->cmd.crash_is_oom ||
                c->timeout_seconds > 0 || c->cmd.show_output || !c->cmd.watchdog || c->no_cgroup ||
                c->cmd.enforce_address_space || c->sample_interval_ms > 0))
        return refuse(s, BATCHFIT_E_INVALID_ARGUMENT,
                      "--oom-pattern, --enforce, --enforce-address-space, --crash-is-oom, "
                      "--timeout, --sample-interval, --show-output, --no-watchdog and "
                      "--no-cgroup apply to a COMMAND; --device %s runs the sim device's "
                      "synthetic step in-process",
                      c->device_spec);
    if (!sim && c->command_argc == 0)
        return refuse(s, BATCHFIT_E_INVALID_ARGUMENT,
                      "no COMMAND given: batchfit probe [options] -- COMMAND [ARGS...] (see "
                      "batchfit probe --help)");
    if (!sim && batchfit_command_check(s->ctx, c->command[0]) != BATCHFIT_OK)
        return refuse(s, BATCHFIT_E_INVALID_ARGUMENT, "%s", batchfit_ctx_last_error(s->ctx));
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
    share_the_host(s);
    return -1;
}

/* The device a rank of an MPI job probes by default: its GPU by node-local
 * rank when that is usable, else the host. */
static void choose_rank_device(session *s, char *spec, size_t len)
{
    snprintf(spec, len, "cuda:%d", probe_mpi_local_rank(s->mpi));
    batchfit_device *gpu = NULL;
    int usable = batchfit_device_open(s->ctx, spec, &gpu) == BATCHFIT_OK &&
                 batchfit_device_available(gpu, NULL);
    batchfit_device_free(gpu);
    if (!usable)
        snprintf(spec, len, "host");
}

/* Joins the ranks' agreement with this rank's outcome: every rank learns
 * every outcome and ends with the job's exit status. */
static int agree(session *s, int code, int exit_code)
{
    probe_cli *c = s->cli;
    if (code != BATCHFIT_OK)
        probe_mpi_announce_failure(s->mpi);
    if (probe_mpi_agree(s->mpi, s->ctx, c->agree, s->result) != BATCHFIT_OK) {
        fprintf(stderr, "batchfit probe: rank %d: %s\n", probe_mpi_rank(s->mpi),
                batchfit_ctx_last_error(s->ctx));
        return EXIT_NO_DEVICE;
    }
    const batchfit_result *r = s->result;
    if (r->agreed_status != BATCHFIT_OK) {
        fprintf(stderr, "batchfit probe: rank %d: the job failed at %s\n", probe_mpi_rank(s->mpi),
                r->agreed_error);
        return batchfit_exit_status(r->agreed_status);
    }
    return exit_code;
}

/* Whether a terminating signal arrived outside the probe's own handling of
 * it; if so, the result and *exit_code say so. */
static int stopped_by_signal(session *s, int *exit_code)
{
    int sig = probe_interrupted;
    if (!sig || *exit_code == 128 + sig)
        return 0;
    if (s->result && !s->result->interrupted) {
        s->result->interrupted = 1;
        s->result->interrupt_signal = sig;
    }
    *exit_code = 128 + sig;
    return 1;
}

static int run(session *s)
{
    probe_cli *c = s->cli;
    char rank_device[32];
    if (c->mpi) {
        int rc = probe_mpi_start(&s->mpi);
        if (rc >= 0)
            return rc;
        /* Rank 0 speaks for the job; the others only say what went wrong. */
        if (probe_mpi_rank(s->mpi) != 0) {
            c->style = STYLE_NONE;
            c->export_json = NULL;
            c->plot_path = NULL;
        }
        if (!c->device_spec) {
            choose_rank_device(s, rank_device, sizeof rank_device);
            c->device_spec = rank_device;
        }
        /* --parallel: one trial a round on each rank's device. */
        if (c->parallel) {
            int size = probe_mpi_size(s->mpi);
            c->opts.parallel = (unsigned)(size < BATCHFIT_MAX_PARALLEL ? size
                                                                       : BATCHFIT_MAX_PARALLEL);
            c->opts.ranks = probe_mpi_ranks(s->mpi);
        }
    }
    if (!c->device_spec)
        c->device_spec = "auto";
    int exit_code = -1;
    /* The export target first, so every later refusal is reported there. */
    if (c->export_json &&
        cli_output_prepare(&s->export, "batchfit probe", "--export-json", c->export_json) != 0) {
        /* Said already; the other ranks of a job still learn of it. */
        s->export.path = NULL;
        if (s->mpi)
            batchfit_result_failed(s->ctx, BATCHFIT_E_INVALID_ARGUMENT,
                                   "--export-json cannot be written", &s->result);
        exit_code = EXIT_USAGE;
    }
    /* The picture's file too, before any trial: a probe is not run for an
     * answer whose picture cannot be written, nor for two outputs that
     * would overwrite each other (stdout holding JSON and SVG parses as
     * neither). */
    const char *plot_refused = NULL;
    if (exit_code < 0 && c->plot_path) {
        if (cli_output_prepare(&s->plot, "batchfit probe", "--plot", c->plot_path) != 0) {
            plot_refused = "--plot cannot be written";
        } else if (cli_output_same(&s->export, &s->plot)) {
            fprintf(stderr, "batchfit probe: --export-json %s and --plot %s name the same %s: "
                            "one would overwrite the other\n",
                    c->export_json, c->plot_path,
                    s->plot.kind == EXPORT_STDOUT ? "output (stdout)" : "file");
            plot_refused = "--export-json and --plot name the same file";
        }
        if (plot_refused) {
            s->plot.path = NULL;
            batchfit_result_failed(s->ctx, BATCHFIT_E_INVALID_ARGUMENT, plot_refused, &s->result);
            exit_code = EXIT_USAGE;
        }
    }
    handle_signals();
    if (exit_code < 0)
        exit_code = check_input(s);
    int code = s->result ? s->result->status : BATCHFIT_E_INVALID_ARGUMENT;
    if (exit_code < 0) {
        c->opts.progress = probe_on_trial;
        c->opts.progress_userdata = s;
        if (c->command_argc == 0)
            code = batchfit_probe(s->ctx, &c->opts, s->device, batchfit_sim_step(), NULL,
                                  &s->result);
        else
            code = batchfit_probe_command(s->ctx, &c->opts, s->device, &c->cmd, &s->result);
        /* A rank out of memory before the ranks' first exchange: the
         * others wait for it there. */
        if (s->mpi && c->opts.ranks && code == BATCHFIT_E_NO_MEMORY &&
            (!s->result || !s->result->ranks_joined))
            probe_mpi_abort(s->mpi, s->ctx);
        exit_code = s->result && s->result->interrupted ? 128 + s->result->interrupt_signal
                                                        : batchfit_exit_status(code);
        /* Under --mpi a rank stopped because another failed says nothing of
         * its own: the agreement names the rank that did. */
        if (code != BATCHFIT_OK && !(s->mpi && code == BATCHFIT_E_ABORTED))
            probe_print_failure(s);
    } else if (c->opts.ranks) {
        /* The other ranks wait at the probe's first exchange: tell them. */
        int refused = batchfit_ranks_refuse(s->ctx, c->opts.ranks, code,
                                            s->result && s->result->error ? s->result->error
                                                                          : "bad input");
        /* A failed exchange is reported; anything else but this rank's
         * own code means it could not take part, and the others wait. */
        if (refused == BATCHFIT_E_DEVICE)
            fprintf(stderr, "batchfit probe: rank %d: %s\n", probe_mpi_rank(s->mpi),
                    batchfit_ctx_last_error(s->ctx));
        else if (refused != code)
            probe_mpi_abort(s->mpi, s->ctx);
    }
    if (s->mpi)
        exit_code = agree(s, code, exit_code);
    /* A signal that came outside the trials (while reading input, after
     * the search) still ends batchfit as that signal, and the JSON says so. */
    if (stopped_by_signal(s, &exit_code))
        fprintf(stderr, "batchfit probe: interrupted\n");
    /* An answer whose JSON or picture could not be written is still
     * printed (exit 6 says what was lost): the trials that found it are not
     * run again for a full disk. The JSON goes last, so that what it says
     * of the end (exit_code, error) is the end: a picture or an answer on
     * stdout that could not be written is exit 6 there too. */
    int found = exit_code == EXIT_FOUND;
    static char lost[320];
    lost[0] = '\0';
    if (probe_export_svg(s) != 0 && found)
        snprintf(lost, sizeof lost, "the picture could not be written to --plot %s",
                 s->plot.path);
    if (found && probe_mpi_rank(s->mpi) == 0) {
        probe_print_summary(s);
        /* With --export-json - the JSON is the answer on stdout; with
         * --plot - the picture is, and a line after it made the SVG
         * unreadable ("Extra content at the end of the document"). */
        int answer_here = !probe_stdout_is_a_document(s);
        if (s->mpi)
            probe_print_agreement(s);
        else if (answer_here)
            printf("batch_size=%llu\n", (unsigned long long)s->result->batch_size);
        /* The answer is the output: if it could not be written, say so;
         * a reader that went away (EPIPE, as with | head) chose not to read. */
        errno = 0;
        const char *why = NULL;
        if (cli_stdout_closed && answer_here)
            why = "it is closed";
        else if ((fflush(stdout) != 0 || ferror(stdout)) && errno != EPIPE)
            why = strerror(errno ? errno : EIO);
        if (why) {
            fprintf(stderr, "batchfit probe: cannot write the result to stdout: %s\n", why);
            size_t used = strlen(lost);
            snprintf(lost + used, sizeof lost - used, "%scannot write the result to stdout: %s",
                     used ? "; " : "", why);
        }
    }
    if (lost[0]) {
        exit_code = EXIT_EXPORT_FAILED;
        s->result->status = BATCHFIT_E_OUTPUT;
        if (s->result->agreed)
            s->result->agreed_status = BATCHFIT_E_OUTPUT;
        s->result->error = lost;
    }
    if (probe_export_json(s, 1) != 0 && found)
        exit_code = EXIT_EXPORT_FAILED;
    if (stopped_by_signal(s, &exit_code) && exit_code == EXIT_EXPORT_FAILED)
        exit_code = 128 + probe_interrupted;
    probe_mpi_finish(s->mpi);
    return exit_code;
}

/* The JSON asked for, saying the options were refused (unless its own
 * target is what is wrong). */
static void export_refusal(session *s, const char *path)
{
    if (path && cli_output_prepare(&s->export, "batchfit probe", "--export-json", path) == 0 &&
        (s->result || batchfit_result_failed(s->ctx, BATCHFIT_E_INVALID_ARGUMENT, probe_refusal,
                                             &s->result) == BATCHFIT_OK))
        probe_export_json(s, 1);
}

/* A rank that refused its options still takes part in the job: the
 * others wait for it at their first exchange (--parallel) or at the
 * agreement, and under a launcher that does not end the job when one
 * task exits they waited for ever. It joins both, as a refusal found
 * later does, and every rank ends naming it. */
static int refused_under_mpi(session *s, int parallel, int exit_code, const char *path)
{
    if (probe_mpi_start(&s->mpi) >= 0) {
        export_refusal(s, path); /* no MPI to join: said already */
        return exit_code;
    }
    if (batchfit_result_failed(s->ctx, BATCHFIT_E_INVALID_ARGUMENT, probe_refusal, &s->result) !=
        BATCHFIT_OK) {
        probe_mpi_abort(s->mpi, s->ctx);
        return EXIT_INTERNAL;
    }
    if (parallel) {
        int refused = batchfit_ranks_refuse(s->ctx, probe_mpi_ranks(s->mpi),
                                            BATCHFIT_E_INVALID_ARGUMENT, probe_refusal);
        if (refused != BATCHFIT_E_INVALID_ARGUMENT)
            probe_mpi_abort(s->mpi, s->ctx);
    }
    exit_code = agree(s, BATCHFIT_E_INVALID_ARGUMENT, exit_code);
    /* Rank 0 speaks for the job, once it agreed (as run() has it). */
    if (probe_mpi_rank(s->mpi) == 0)
        export_refusal(s, path);
    probe_mpi_finish(s->mpi);
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
    } else if (exit_code != EXIT_FOUND) {
        /* A refused option: the JSON asked for says so too. */
        const char *path = probe_find_export(argc, argv);
        if (probe_find_flag(argc, argv, "--mpi"))
            exit_code = refused_under_mpi(&s, probe_find_flag(argc, argv, "--parallel"), exit_code,
                                          path);
        else
            export_refusal(&s, path);
    }
    batchfit_result_free(s.result);
    batchfit_device_free(s.device);
    batchfit_ctx_free(s.ctx);
    return exit_code;
}
