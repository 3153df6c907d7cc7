/* batchfit probe: runs a command (or the sim device's synthetic step) at a
 * few batch sizes and reports the largest that fits. Options are checked
 * before anything runs; a bad value exits 2 naming the flag. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_OOM_PATTERNS 32
#define MAX_TRIALS_LIMIT 10000

typedef struct option_def {
    const char *name;
    const char *arg; /* NULL: a switch */
    const char *help;
} option_def;

/* The single list of options: --help prints it and doc/batchfit.1 mirrors it
 * (a test checks that the two agree). */
static const option_def options[] = {
    {"--min", "N", "the smallest batch size the step can run at all (default 1)"},
    {"--max", "N", "the requested maximum, max_batch_size (0 = the device decides)"},
    {"--samples", "N", "the dataset size: no batch larger than this"},
    {"--multiple-of", "N", "allow only multiples of N"},
    {"--power-of-two", NULL, "allow only powers of two (the requested maximum is one more candidate)"},
    {"--margin", "SIZE|PCT", "memory held back from the budget (default 5%)"},
    {"--vram-limit-gb", "X", BATCHFIT_VRAM_LIMIT_HELP},
    {"--memory-budget", "SIZE", "use SIZE instead of the device's free memory"},
    {"--device", "SPEC", "auto, host, sim:KEY=VALUE,... or cuda:N (default auto: the first NVIDIA "
                         "GPU, else host)"},
    {"--strategy", "NAME", "model, bisect, binsearch, power or halving (default model)"},
    {"--max-trials", "N", "stop after N trials (default 40)"},
    {"--estimate", "N", "a predicted largest batch (from batchfit estimate) to try first"},
    {"--timeout", "SECONDS", "per trial; then the trial's process group gets SIGTERM, then SIGKILL"},
    {"--oom-pattern", "REGEX", "one more out-of-memory signature (repeatable)"},
    {"--show-output", NULL, "copy every trial's output to stderr"},
    {"--export-json", "FILE", "write the results as JSON, rewritten after every trial (- = stdout)"},
    {"--hyperparameters", "FILE", "read max_batch_size (never batch_size) from a JSON file"},
    {"--enforce", NULL, "add a hard memory cap per trial (cgroup limit, else RLIMIT_AS)"},
    {"--crash-is-oom", NULL, "with --enforce, count a crash near the cap as out of memory"},
    {"--no-watchdog", NULL, "let a trial run on after its memory passes the budget"},
    {"--sample-interval", "MS", "milliseconds between memory samples (default 20)"},
    {"--peak-spread", "PCT", "trial-to-trial spread of peaks to guard against (default: the "
                             "device's, 5% on host)"},
    {"--no-cgroup", NULL, "measure with wait4's rusage and sampling only"},
    {"--cache", NULL, "verify a remembered answer in two trials instead of searching (the "
                      "default: it is always verified)"},
    {"--no-cache", NULL, "neither read nor write the cache"},
    {"--cache-key", "KEY", "name the model in the cache key instead of hashing the command"},
    {"--quiet", NULL, "print only the result"},
    {"--style", "auto|basic|none", "progress output: auto (colour on a terminal unless NO_COLOR), "
                                    "basic (plain), none (no progress lines)"},
    {"--help", NULL, "show this help (also -h)"},
    {"--version", NULL, "show the version"},
};

#define OPTION_COUNT (sizeof options / sizeof options[0])

typedef struct probe_cli {
    batchfit_options opts;
    const char *device_spec;
    const char *export_json;
    const char *hyperparameters;
    const char *vram_flag;
    const char *max_text;
    const char *oom_patterns[MAX_OOM_PATTERNS];
    unsigned oom_pattern_count;
    double timeout;
    double sample_interval;
    int enforce, crash_is_oom, watchdog, show_output, quiet, no_cgroup, no_cache;
    const char *cache_key;
    int style; /* 0 none, 1 basic, 2 colour */
    char **command;
    int command_argc;
} probe_cli;

static void print_help(FILE *f)
{
    fprintf(f, "usage: batchfit probe [options] -- COMMAND [ARGS...]\n"
               "       batchfit probe --device sim:SPEC [options]\n\n"
               "Runs COMMAND once per trial with {batch} in ARGS replaced by the batch size (and\n"
               "BATCHFIT_BATCH_SIZE in its environment) and prints the largest batch size that\n"
               "fits, as the last line on stdout: batch_size=N.\n\noptions:\n");
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        char left[64];
        snprintf(left, sizeof left, "%s%s%s", options[i].name, options[i].arg ? " " : "",
                 options[i].arg ? options[i].arg : "");
        fprintf(f, "  %-26s ", left);
        /* Wrap the description at 80 columns under its own column. */
        const char *h = options[i].help;
        while (*h) {
            size_t room = 80 - 29, len = strlen(h);
            if (len > room) {
                len = room;
                while (len > 0 && h[len] != ' ')
                    len--;
                if (len == 0)
                    len = room;
            }
            fprintf(f, "%.*s\n", (int)len, h);
            h += len;
            while (*h == ' ')
                h++;
            if (*h)
                fprintf(f, "%29s", "");
        }
    }
    fprintf(f, "\nexit status: 0 found, 2 bad usage or input (nothing run), 3 even the minimum "
               "does not fit,\n4 a trial failed with an error that is not out-of-memory, 5 no "
               "usable device, 130 interrupted.\n");
}

static int usage_error(const char *message)
{
    fprintf(stderr, "batchfit probe: %s\n(see batchfit probe --help)\n", message);
    return EXIT_USAGE;
}

static int usage_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_errorf(const char *fmt, ...)
{
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return usage_error(message);
}

static int bad_value(const char *message)
{
    fprintf(stderr, "batchfit probe: %s\n", message);
    return EXIT_USAGE;
}

/* A positive number of seconds or milliseconds. */
static int parse_positive_real(const char *flag, const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v <= 0.0 || v > 1e9) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s: invalid value \"%s\": expected a positive number", flag,
                 text);
        return bad_value(msg);
    }
    *out = v;
    return 0;
}

static int parse_count_flag(const char *flag, const char *text, uint64_t max, uint64_t *out)
{
    char err[512];
    if (batchfit_parse_count(text, flag, max, out, err, sizeof err) != BATCHFIT_OK)
        return bad_value(err);
    return 0;
}

static int apply_option(probe_cli *c, const char *name, const char *value)
{
    char err[512];
    uint64_t n;
    batchfit_options *o = &c->opts;
    if (strcmp(name, "--min") == 0)
        return parse_count_flag(name, value, UINT64_C(1) << 62, &o->min_batch);
    if (strcmp(name, "--max") == 0) {
        if (batchfit_parse_requested_size(value, "--max", &o->requested_max, err, sizeof err))
            return bad_value(err);
        c->max_text = value;
        return 0;
    }
    if (strcmp(name, "--samples") == 0)
        return parse_count_flag(name, value, UINT64_C(1) << 62, &o->samples);
    if (strcmp(name, "--multiple-of") == 0) {
        if (parse_count_flag(name, value, UINT64_C(1) << 40, &n))
            return EXIT_USAGE;
        if (o->lattice == BATCHFIT_LATTICE_POW2)
            return bad_value("--multiple-of and --power-of-two exclude each other");
        o->lattice = BATCHFIT_LATTICE_MULTIPLE;
        o->lattice_multiple = n;
        return 0;
    }
    if (strcmp(name, "--power-of-two") == 0) {
        if (o->lattice == BATCHFIT_LATTICE_MULTIPLE)
            return bad_value("--multiple-of and --power-of-two exclude each other");
        o->lattice = BATCHFIT_LATTICE_POW2;
        return 0;
    }
    if (strcmp(name, "--margin") == 0) {
        size_t len = strlen(value);
        if (len && value[len - 1] == '%') {
            if (batchfit_parse_percent(value, "--margin", &o->margin_fraction, err, sizeof err))
                return bad_value(err);
            if (o->margin_fraction >= 1.0)
                return bad_value("--margin: a margin of 100% leaves nothing to probe");
            o->margin_bytes = 0;
        } else {
            if (batchfit_parse_size(value, "--margin", &o->margin_bytes, err, sizeof err))
                return bad_value(err);
            if (o->margin_bytes == 0)
                o->margin_fraction = 0.0;
        }
        return 0;
    }
    if (strcmp(name, "--vram-limit-gb") == 0) {
        if (batchfit_resolve_vram_limit(value, "--vram-limit-gb", &o->vram_limit_bytes, NULL, err,
                                        sizeof err))
            return bad_value(err);
        c->vram_flag = value;
        return 0;
    }
    if (strcmp(name, "--memory-budget") == 0) {
        if (batchfit_parse_size(value, "--memory-budget", &o->memory_budget_bytes, err, sizeof err))
            return bad_value(err);
        if (o->memory_budget_bytes == 0)
            return bad_value("--memory-budget: it must be larger than zero");
        return 0;
    }
    if (strcmp(name, "--device") == 0) {
        c->device_spec = value;
        return 0;
    }
    if (strcmp(name, "--strategy") == 0) {
        if (batchfit_parse_strategy(value, "--strategy", &o->strategy, err, sizeof err))
            return bad_value(err);
        return 0;
    }
    if (strcmp(name, "--max-trials") == 0) {
        if (parse_count_flag(name, value, MAX_TRIALS_LIMIT, &n))
            return EXIT_USAGE;
        o->max_trials = (unsigned)n;
        return 0;
    }
    if (strcmp(name, "--estimate") == 0)
        return parse_count_flag(name, value, UINT64_C(1) << 40, &o->first_guess);
    if (strcmp(name, "--timeout") == 0)
        return parse_positive_real(name, value, &c->timeout);
    if (strcmp(name, "--sample-interval") == 0)
        return parse_positive_real(name, value, &c->sample_interval);
    if (strcmp(name, "--oom-pattern") == 0) {
        if (c->oom_pattern_count == MAX_OOM_PATTERNS)
            return bad_value("--oom-pattern: at most 32 patterns");
        c->oom_patterns[c->oom_pattern_count++] = value;
        return 0;
    }
    if (strcmp(name, "--cache-key") == 0) {
        if (!value[0])
            return bad_value("--cache-key: it must not be empty");
        c->cache_key = value;
        return 0;
    }
    if (strcmp(name, "--export-json") == 0) {
        c->export_json = value;
        return 0;
    }
    if (strcmp(name, "--hyperparameters") == 0) {
        c->hyperparameters = value;
        return 0;
    }
    if (strcmp(name, "--peak-spread") == 0) {
        if (batchfit_parse_percent(value, "--peak-spread", &o->peak_spread, err, sizeof err))
            return bad_value(err);
        if (o->peak_spread >= 0.5)
            return bad_value("--peak-spread: it must be below 50%");
        return 0;
    }
    if (strcmp(name, "--style") == 0) {
        if (strcmp(value, "none") == 0)
            c->style = 0;
        else if (strcmp(value, "basic") == 0)
            c->style = 1;
        else if (strcmp(value, "auto") == 0) {
            const char *term = getenv("TERM");
            c->style = isatty(2) && !getenv("NO_COLOR") && !(term && strcmp(term, "dumb") == 0)
                           ? 2
                           : 1;
        } else {
            return usage_errorf("--style: invalid value \"%s\": expected auto, basic or none",
                                value);
        }
        return 0;
    }
    static const struct {
        const char *name;
        size_t offset;
        int value;
    } switches[] = {
        {"--show-output", offsetof(probe_cli, show_output), 1},
        {"--enforce", offsetof(probe_cli, enforce), 1},
        {"--crash-is-oom", offsetof(probe_cli, crash_is_oom), 1},
        {"--no-watchdog", offsetof(probe_cli, watchdog), 0},
        {"--no-cgroup", offsetof(probe_cli, no_cgroup), 1},
        {"--quiet", offsetof(probe_cli, quiet), 1},
        {"--cache", offsetof(probe_cli, no_cache), 0},
        {"--no-cache", offsetof(probe_cli, no_cache), 1},
    };
    for (size_t i = 0; i < sizeof switches / sizeof switches[0]; i++) {
        if (strcmp(name, switches[i].name) == 0) {
            *(int *)((char *)c + switches[i].offset) = switches[i].value;
            return 0;
        }
    }
    return usage_errorf("unknown option %s", name);
}

/* Returns -1 to go on, or an exit code. */
static int parse_args(probe_cli *c, int argc, char **argv)
{
    batchfit_options_init(&c->opts);
    c->device_spec = "auto";
    c->watchdog = 1;
    c->sample_interval = 20.0;
    apply_option(c, "--style", "auto");
    int i = 1;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            print_help(stdout);
            return EXIT_FOUND;
        }
        if (strcmp(arg, "--version") == 0) {
            printf("batchfit %s\n", batchfit_version_string());
            return EXIT_FOUND;
        }
        if (arg[0] != '-' || arg[1] == '\0')
            break; /* the command starts here */
        char name[64];
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (len >= sizeof name)
            return usage_errorf("unknown option %.60s...", arg);
        memcpy(name, arg, len);
        name[len] = '\0';
        const option_def *def = NULL;
        for (size_t k = 0; k < OPTION_COUNT; k++)
            if (strcmp(options[k].name, name) == 0)
                def = &options[k];
        if (!def)
            return usage_errorf("unknown option %s", name);
        const char *value = NULL;
        if (def->arg) {
            if (eq) {
                value = eq + 1;
            } else if (i + 1 < argc) {
                value = argv[++i];
            } else {
                return usage_errorf("%s needs a value (%s)", name, def->arg);
            }
        } else if (eq) {
            return usage_errorf("%s takes no value", name);
        }
        int rc = apply_option(c, name, value);
        if (rc != 0)
            return rc;
    }
    c->command = argv + i;
    c->command_argc = argc - i;
    return -1;
}

/* Is the program runnable: a path that is executable, or a name on PATH? */
static int command_exists(const char *name)
{
    if (strchr(name, '/'))
        return access(name, X_OK) == 0;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    char buf[4096];
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        snprintf(buf, sizeof buf, "%.*s/%s", (int)len, len ? path : ".", name);
        struct stat st;
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
            return 1;
        path += len;
        if (*path == ':')
            path++;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Running                                                              */
/* ------------------------------------------------------------------ */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
    batchfit_runner_interrupt();
}

typedef struct session {
    probe_cli *cli;
    batchfit_ctx *ctx;
    batchfit_device *device;
    batchfit_runner *runner;
    batchfit_result *result;
    batchfit_child_detail *details; /* one per trial, child mode only */
    size_t detail_count;
    size_t detail_cap;
    size_t warnings_printed;
    const char *vram_source;
    char error[1024];
    int code;
    char cache_dir[4096];
    char cache_key[40];
    char cache_material[4096];
    int cache_hit;
} session;

static void print_new_warnings(session *s)
{
    if (!s->result)
        return;
    for (; s->warnings_printed < s->result->warning_count; s->warnings_printed++)
        if (!s->cli->quiet)
            fprintf(stderr, "batchfit: warning: %s\n", s->result->warnings[s->warnings_printed]);
}

static const char *lattice_name(batchfit_lattice_kind k)
{
    return k == BATCHFIT_LATTICE_POW2 ? "power_of_two"
           : k == BATCHFIT_LATTICE_MULTIPLE ? "multiple_of"
                                            : "every_integer";
}

static void write_json(session *s, FILE *f)
{
    const batchfit_result *r = s->result;
    json_writer w;
    jw_begin(&w, f);
    jw_object(&w, NULL);
    jw_u64(&w, "schema_version", 1);
    jw_string(&w, "batchfit_version", batchfit_version_string());
    jw_array(&w, "command");
    for (int i = 0; i < s->cli->command_argc; i++)
        jw_string(&w, NULL, s->cli->command[i]);
    jw_end_array(&w);
    jw_object(&w, "device");
    jw_string(&w, "spec", s->cli->device_spec);
    jw_string(&w, "kind", s->device ? batchfit_device_kind(s->device) : NULL);
    batchfit_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (s->device && batchfit_device_describe(s->device, &info) == BATCHFIT_OK) {
        jw_string(&w, "name", info.name);
        jw_string(&w, "uuid", info.uuid[0] ? info.uuid : NULL);
        jw_string(&w, "pci_bus_id", info.pci_bus_id[0] ? info.pci_bus_id : NULL);
    }
    if (r && r->budget.known) {
        jw_u64(&w, "total_bytes", r->budget.total_bytes);
        jw_u64(&w, "free_bytes", r->budget.free_bytes);
    } else {
        jw_null(&w, "total_bytes");
        jw_null(&w, "free_bytes");
    }
    jw_end_object(&w);
    jw_object(&w, "budget");
    if (r && r->budget.known) {
        jw_u64(&w, "usable_bytes", r->budget.usable_bytes);
        jw_u64(&w, "margin_bytes", r->budget.margin_bytes);
        jw_u64(&w, "budget_bytes", r->budget.budget_bytes);
        jw_u64(&w, "held_bytes", r->budget.held_bytes);
        jw_double(&w, "peak_spread", r->budget.peak_spread);
    } else {
        jw_null(&w, "usable_bytes");
        jw_null(&w, "margin_bytes");
        jw_null(&w, "budget_bytes");
        jw_null(&w, "held_bytes");
        jw_null(&w, "peak_spread");
    }
    if (s->cli->opts.memory_budget_bytes)
        jw_u64(&w, "memory_budget_bytes", s->cli->opts.memory_budget_bytes);
    else
        jw_null(&w, "memory_budget_bytes");
    jw_end_object(&w);
    jw_object(&w, "vram_limit");
    if (s->cli->opts.vram_limit_bytes)
        jw_u64(&w, "bytes", s->cli->opts.vram_limit_bytes);
    else
        jw_null(&w, "bytes");
    jw_string(&w, "source", s->vram_source);
    jw_end_object(&w);
    jw_object(&w, "lattice");
    jw_string(&w, "kind", lattice_name(s->cli->opts.lattice));
    jw_u64(&w, "multiple", s->cli->opts.lattice == BATCHFIT_LATTICE_MULTIPLE
                               ? s->cli->opts.lattice_multiple
                               : 1);
    if (r && r->min_batch) {
        jw_u64(&w, "min", r->min_batch);
        jw_u64(&w, "max", r->upper_bound);
    } else {
        jw_null(&w, "min");
        jw_null(&w, "max");
    }
    if (s->cli->opts.requested_max)
        jw_u64(&w, "requested_max", s->cli->opts.requested_max);
    else
        jw_null(&w, "requested_max");
    jw_end_object(&w);
    jw_string(&w, "strategy", batchfit_strategy_name(s->cli->opts.strategy));
    jw_object(&w, "cache");
    jw_string(&w, "key", s->cache_dir[0] ? s->cache_key : NULL);
    jw_bool(&w, "hit", s->cache_hit);
    if (s->cache_hit)
        jw_u64(&w, "remembered_batch_size", s->cli->opts.cached_batch);
    else
        jw_null(&w, "remembered_batch_size");
    jw_end_object(&w);
    jw_string(&w, "mechanisms", s->runner ? batchfit_runner_mechanisms(s->runner)
                                          : "in-process trials on the device");
    jw_double(&w, "sample_interval_ms", s->cli->sample_interval);
    jw_array(&w, "trials");
    for (size_t i = 0; r && i < r->trial_count; i++) {
        const batchfit_trial *t = &r->trials[i];
        const batchfit_child_detail *d = i < s->detail_count ? &s->details[i] : NULL;
        jw_object(&w, NULL);
        jw_u64(&w, "batch", t->batch);
        jw_string(&w, "outcome", batchfit_outcome_name(t->outcome));
        jw_bool(&w, "accepted", t->accepted);
        if (d && d->exited)
            jw_i64(&w, "exit_code", d->exit_code);
        else
            jw_null(&w, "exit_code");
        if (d && d->signal)
            jw_i64(&w, "signal", d->signal);
        else
            jw_null(&w, "signal");
        if (t->peak_known)
            jw_u64(&w, t->outcome == BATCHFIT_FITS ? "peak_bytes" : "needed_bytes_at_least",
                   t->peak_bytes);
        else
            jw_null(&w, "peak_bytes");
        if (d) {
            jw_string(&w, "peak_source", d->peak_source);
            jw_u64(&w, "sampled_peak_bytes", d->sampled_peak_bytes);
            jw_u64(&w, "host_peak_bytes", d->host_peak_bytes);
            if (d->device_peak_known)
                jw_u64(&w, "device_peak_bytes", d->device_peak_bytes);
            else
                jw_null(&w, "device_peak_bytes");
            if (d->device_free_drop_known)
                jw_u64(&w, "device_free_drop_bytes", d->device_free_drop_bytes);
            else
                jw_null(&w, "device_free_drop_bytes");
            jw_string(&w, "oom_signature", d->oom_signature[0] ? d->oom_signature : NULL);
        }
        jw_double(&w, "seconds", t->seconds);
        jw_string(&w, "reason", t->message[0] ? t->message : NULL);
        jw_end_object(&w);
    }
    jw_end_array(&w);
    if (r && r->fit.valid) {
        jw_object(&w, "fit");
        jw_double(&w, "intercept_bytes", r->fit.intercept_bytes);
        jw_double(&w, "bytes_per_sample", r->fit.bytes_per_sample);
        jw_double(&w, "max_residual_bytes", r->fit.max_residual_bytes);
        jw_u64(&w, "points", r->fit.points);
        jw_end_object(&w);
    } else {
        jw_null(&w, "fit");
    }
    jw_object(&w, "result");
    if (r && r->batch_size)
        jw_u64(&w, "batch_size", r->batch_size);
    else
        jw_null(&w, "batch_size");
    jw_u64(&w, "trials", r ? r->trial_count : 0);
    jw_u64(&w, "oom_trials", r ? r->oom_trials : 0);
    if (r && r->smallest_failure)
        jw_u64(&w, "smallest_failure", r->smallest_failure);
    else
        jw_null(&w, "smallest_failure");
    if (s->cli->opts.first_guess)
        jw_u64(&w, "estimate", s->cli->opts.first_guess);
    else
        jw_null(&w, "estimate");
    jw_i64(&w, "exit_code", cli_exit_code(s->code, interrupted));
    jw_string(&w, "error", s->error[0] ? s->error : NULL);
    jw_bool(&w, "interrupted", interrupted);
    jw_end_object(&w);
    jw_array(&w, "warnings");
    for (size_t i = 0; r && i < r->warning_count; i++)
        jw_string(&w, NULL, r->warnings[i]);
    jw_end_array(&w);
    jw_end_object(&w);
}

/* Rewrites the JSON file whole (a temporary file renamed over it), so a
 * crash at any point leaves the last complete state. */
static void export_json(session *s, int final)
{
    const char *path = s->cli->export_json;
    if (!path)
        return;
    if (strcmp(path, "-") == 0) {
        if (final)
            write_json(s, stdout);
        return;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "batchfit probe: --export-json %s: %s\n", path, strerror(errno));
        return;
    }
    write_json(s, f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        fprintf(stderr, "batchfit probe: --export-json %s: %s\n", path, strerror(errno));
        remove(tmp);
    }
}

static void bracket(const batchfit_result *r, uint64_t *fit, uint64_t *fail)
{
    *fit = 0;
    *fail = 0;
    for (size_t i = 0; i < r->trial_count; i++) {
        const batchfit_trial *t = &r->trials[i];
        if (t->accepted && t->batch > *fit)
            *fit = t->batch;
        if (!t->accepted && t->outcome != BATCHFIT_ERROR && (!*fail || t->batch < *fail))
            *fail = t->batch;
    }
}

/* Called after every trial: one progress line, and the JSON rewritten. */
static int on_trial(const batchfit_trial *t, void *userdata)
{
    session *s = userdata;
    if (!s->cli->quiet && s->cli->style) {
        char peak[32] = "unknown";
        if (t->peak_known)
            batchfit_format_bytes((double)t->peak_bytes, peak, sizeof peak);
        const char *color = "", *reset = "";
        if (s->cli->style == 2) {
            color = t->accepted ? "\033[32m" : t->outcome == BATCHFIT_ERROR ? "\033[31m" : "\033[33m";
            reset = "\033[0m";
        }
        const char *what = t->accepted ? "fits" : t->outcome == BATCHFIT_FITS ? "too close" :
                                        batchfit_outcome_name(t->outcome);
        fprintf(stderr, "batchfit: trial %zu: batch %llu %s%s%s, %s %s, %.2f s",
                s->result ? s->result->trial_count : 0, (unsigned long long)t->batch, color, what,
                reset, t->outcome == BATCHFIT_FITS ? "peak" : "needed at least", peak, t->seconds);
        if (s->result) {
            uint64_t fit, fail;
            bracket(s->result, &fit, &fail);
            fprintf(stderr, "  [fits <= %llu", (unsigned long long)fit);
            if (fail)
                fprintf(stderr, ", fails >= %llu", (unsigned long long)fail);
            fprintf(stderr, "]");
        }
        if (t->message[0] && !t->accepted)
            fprintf(stderr, "\n          %s", t->message);
        fputc('\n', stderr);
    }
    export_json(s, 0);
    return interrupted ? 1 : 0;
}

static int child_oracle(void *userdata, uint64_t batch, batchfit_trial *trial)
{
    session *s = userdata;
    if (s->detail_count == s->detail_cap) {
        size_t cap = s->detail_cap ? s->detail_cap * 2 : 16;
        batchfit_child_detail *grown = realloc(s->details, cap * sizeof *grown);
        if (!grown)
            return 1;
        s->details = grown;
        s->detail_cap = cap;
    }
    batchfit_child_detail *d = &s->details[s->detail_count];
    int rc = batchfit_runner_trial(s->runner, batch, trial, d);
    if (rc == BATCHFIT_E_ABORTED)
        return 1;
    s->detail_count++;
    return 0;
}

static int open_device(session *s)
{
    probe_cli *c = s->cli;
    const char *spec = c->device_spec;
    if (strcmp(spec, "auto") == 0) {
        batchfit_device *gpu = NULL;
        const char *why = "";
        if (batchfit_device_open(s->ctx, "cuda:0", &gpu) == BATCHFIT_OK &&
            batchfit_device_available(gpu, &why)) {
            s->device = gpu;
            c->device_spec = "cuda:0";
            batchfit_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
            batchfit_device_describe(gpu, &info);
            if (!c->quiet)
                fprintf(stderr, "batchfit: device cuda:0 (auto: %s %s)\n", info.name, info.uuid);
            return 0;
        }
        if (!c->quiet)
            fprintf(stderr, "batchfit: warning: no usable NVIDIA GPU (%s); --device auto uses "
                            "the host's memory\n",
                    why);
        batchfit_device_free(gpu);
        spec = "host";
        c->device_spec = "host";
    }
    int rc = batchfit_device_open(s->ctx, spec, &s->device);
    if (rc) {
        fprintf(stderr, "batchfit probe: --device: %s\n", batchfit_ctx_last_error(s->ctx));
        return EXIT_USAGE;
    }
    const char *why = "";
    if (!batchfit_device_available(s->device, &why)) {
        snprintf(s->error, sizeof s->error, "no usable device: --device %s: %s", spec, why);
        fprintf(stderr, "batchfit probe: %s\n", s->error);
        s->code = BATCHFIT_E_NO_DEVICE;
        return EXIT_NO_DEVICE;
    }
    return 0;
}

static void print_summary(session *s)
{
    const batchfit_result *r = s->result;
    if (s->cli->quiet || !r || !r->batch_size)
        return;
    char budget[32], usable[32], margin[32];
    batchfit_format_bytes((double)r->budget.budget_bytes, budget, sizeof budget);
    batchfit_format_bytes((double)r->budget.usable_bytes, usable, sizeof usable);
    batchfit_format_bytes((double)r->budget.margin_bytes, margin, sizeof margin);
    fprintf(stderr, "batchfit: batch size %llu, found in %zu trials (%zu out of memory) with the %s "
                    "strategy\n",
            (unsigned long long)r->batch_size, r->trial_count, r->oom_trials,
            batchfit_strategy_name(s->cli->opts.strategy));
    fprintf(stderr, "  budget %s of %s usable (margin %s held back)\n", budget, usable, margin);
    for (size_t i = r->trial_count; i-- > 0;) {
        const batchfit_trial *t = &r->trials[i];
        if (t->batch == r->batch_size && t->accepted && t->peak_known) {
            char peak[32], headroom[32];
            batchfit_format_bytes((double)t->peak_bytes, peak, sizeof peak);
            batchfit_format_bytes((double)r->budget.budget_bytes - (double)t->peak_bytes, headroom,
                             sizeof headroom);
            fprintf(stderr, "  peak at batch %llu: %s, headroom %s\n",
                    (unsigned long long)t->batch, peak, headroom);
            break;
        }
    }
    if (s->cli->opts.first_guess)
        fprintf(stderr, "  the estimate of %llu was %.0f%% of the measured %llu\n",
                (unsigned long long)s->cli->opts.first_guess,
                100.0 * (double)s->cli->opts.first_guess / (double)r->batch_size,
                (unsigned long long)r->batch_size);
    if (r->fit.valid) {
        char fixed[32], per[32];
        batchfit_format_bytes(r->fit.intercept_bytes > 0 ? r->fit.intercept_bytes : 0, fixed,
                         sizeof fixed);
        batchfit_format_bytes(r->fit.bytes_per_sample, per, sizeof per);
        fprintf(stderr, "  fitted memory: %s + %s per sample\n", fixed, per);
    }
}

static void print_failure(session *s)
{
    fprintf(stderr, "batchfit probe: %s\n", s->error);
    if (s->code == BATCHFIT_E_TRIAL_ERROR && s->detail_count) {
        const batchfit_child_detail *d = &s->details[s->detail_count - 1];
        if (d->tail[0]) {
            fprintf(stderr, "last lines of its output:\n");
            const char *p = d->tail;
            while (*p) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t)(nl - p) : strlen(p);
                fprintf(stderr, "  | %.*s\n", (int)len, p);
                p += len + (nl != NULL);
            }
        }
        if (!s->cli->show_output)
            fprintf(stderr, "(--show-output shows the whole output of every trial)\n");
    }
}

static int run_child_probe(session *s)
{
    probe_cli *c = s->cli;
    batchfit_oom_table *oom = NULL;
    int rc = batchfit_oom_table_create(s->ctx, &oom);
    for (unsigned i = 0; rc == BATCHFIT_OK && i < c->oom_pattern_count; i++)
        rc = batchfit_oom_table_add(oom, c->oom_patterns[i]);
    if (rc) {
        fprintf(stderr, "batchfit probe: %s\n", batchfit_ctx_last_error(s->ctx));
        batchfit_oom_table_free(oom);
        return cli_exit_code(rc, 0);
    }
    char vram_text[64];
    batchfit_runner_options ro;
    batchfit_runner_options_init(&ro);
    ro.argv = (const char *const *)c->command;
    ro.timeout_seconds = c->timeout;
    ro.budget_bytes = s->result->budget.budget_bytes;
    ro.watchdog = c->watchdog;
    ro.enforce = c->enforce;
    ro.enforce_bytes = s->result->budget.budget_bytes;
    ro.crash_is_oom = c->crash_is_oom;
    ro.sample_interval = c->sample_interval / 1000.0;
    ro.show_output = c->show_output;
    ro.cgroups = c->no_cgroup ? BATCHFIT_CGROUPS_OFF : BATCHFIT_CGROUPS_AUTO;
    ro.oom = oom;
    int gpu = strcmp(batchfit_device_kind(s->device), "cuda") == 0;
    if (gpu)
        ro.device = s->device;
    if (c->opts.vram_limit_bytes) {
        snprintf(vram_text, sizeof vram_text, "%.9g", (double)c->opts.vram_limit_bytes / 1073741824.0);
        ro.vram_limit_gb = vram_text;
    }
    rc = batchfit_runner_create(s->ctx, &ro, &s->runner);
    if (rc) {
        fprintf(stderr, "batchfit probe: %s\n", batchfit_ctx_last_error(s->ctx));
        batchfit_oom_table_free(oom);
        return cli_exit_code(rc, 0);
    }
    if (!batchfit_runner_has_placeholder(s->runner) && !c->quiet)
        fprintf(stderr, "batchfit: warning: no {batch} in the command; the batch size reaches it "
                        "only through BATCHFIT_BATCH_SIZE\n");
    if (!c->quiet && c->style)
        fprintf(stderr, "batchfit: %s\n", batchfit_runner_mechanisms(s->runner));
    /* On a GPU the margin and the VRAM limit become real: what the trials
     * must not use is held as ballast while they run. */
    batchfit_budget *b = &s->result->budget;
    if (gpu && b->free_bytes > b->budget_bytes) {
        rc = batchfit_device_hold(s->device, b->free_bytes - b->budget_bytes, &b->held_bytes);
        if (rc) {
            snprintf(s->error, sizeof s->error, "%s", batchfit_ctx_last_error(s->ctx));
            fprintf(stderr, "batchfit probe: %s\n", s->error);
            batchfit_oom_table_free(oom);
            s->code = rc;
            return cli_exit_code(rc, 0);
        }
        if (!c->quiet && c->style) {
            char held[32];
            batchfit_format_bytes((double)b->held_bytes, held, sizeof held);
            fprintf(stderr, "batchfit: holding %s of ballast on %s while trials run\n", held,
                    c->device_spec);
        }
    }
    export_json(s, 0);
    s->code = batchfit_search(s->ctx, &c->opts, child_oracle, s, s->result);
    batchfit_device_release(s->device);
    batchfit_oom_table_free(oom);
    return 0;
}

/* Everything that changes the answer goes into the cache key. */
static void cache_prepare(session *s)
{
    probe_cli *c = s->cli;
    const batchfit_options *o = &c->opts;
    char err[512];
    if (c->no_cache || batchfit_cache_dir(s->cache_dir, sizeof s->cache_dir, err, sizeof err)) {
        s->cache_dir[0] = '\0';
        return;
    }
    batchfit_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    batchfit_device_describe(s->device, &info);
    uint64_t total = 0, free_bytes = 0;
    batchfit_device_memory(s->device, &total, &free_bytes);
    int n = snprintf(s->cache_material, sizeof s->cache_material,
                     "batchfit %s\ndevice %s %s %s %s %llu\n", batchfit_version_string(),
                     c->device_spec, info.kind, info.name, info.uuid, (unsigned long long)total);
    if (c->cache_key)
        n += snprintf(s->cache_material + n, sizeof s->cache_material - (size_t)n, "key %s\n",
                      c->cache_key);
    else
        for (int i = 0; i < c->command_argc && (size_t)n < sizeof s->cache_material; i++)
            n += snprintf(s->cache_material + n, sizeof s->cache_material - (size_t)n,
                          "arg %s\n", c->command[i]);
    if ((size_t)n < sizeof s->cache_material)
        snprintf(s->cache_material + n, sizeof s->cache_material - (size_t)n,
                 "settings margin=%.6f/%llu vram=%llu budget=%llu lattice=%d/%llu min=%llu "
                 "max=%llu samples=%llu spread=%.6f strategy=%s\n",
                 o->margin_fraction, (unsigned long long)o->margin_bytes,
                 (unsigned long long)o->vram_limit_bytes,
                 (unsigned long long)o->memory_budget_bytes, (int)o->lattice,
                 (unsigned long long)o->lattice_multiple, (unsigned long long)o->min_batch,
                 (unsigned long long)o->requested_max, (unsigned long long)o->samples,
                 o->peak_spread, batchfit_strategy_name(o->strategy));
    batchfit_cache_key(s->cache_material, s->cache_key);
    batchfit_cache_entry e;
    int found = batchfit_cache_load(s->cache_dir, s->cache_key, &e, err, sizeof err);
    if (found == 1) {
        s->cache_hit = 1;
        c->opts.cached_batch = e.batch_size;
        c->opts.cached_fit = e.fit;
        if (!c->quiet)
            fprintf(stderr, "batchfit: cache: %s remembers batch size %llu; verifying it\n",
                    s->cache_key, (unsigned long long)e.batch_size);
    } else if (found != 0 && !c->quiet) {
        fprintf(stderr, "batchfit: warning: %s\n", err);
    }
}

static void cache_save(session *s)
{
    if (!s->cache_dir[0] || !s->result || s->code != BATCHFIT_OK || !s->result->batch_size)
        return;
    batchfit_cache_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.key, sizeof e.key, "%s", s->cache_key);
    e.batch_size = s->result->batch_size;
    e.budget_bytes = s->result->budget.budget_bytes;
    e.fit = s->result->fit;
    /* A one-line summary for batchfit cache list. */
    int n = snprintf(e.description, sizeof e.description, "%s:", s->cli->device_spec);
    if (s->cli->cache_key)
        snprintf(e.description + n, sizeof e.description - (size_t)n, " %s", s->cli->cache_key);
    for (int i = 0; !s->cli->cache_key && i < s->cli->command_argc && (size_t)n < sizeof e.description;
         i++)
        n += snprintf(e.description + n, sizeof e.description - (size_t)n, " %s",
                      s->cli->command[i]);
    char err[512];
    if (batchfit_cache_store(s->cache_dir, &e, err, sizeof err) != BATCHFIT_OK && !s->cli->quiet)
        fprintf(stderr, "batchfit: warning: %s\n", err);
}

int cli_probe(int argc, char **argv)
{
    probe_cli c;
    memset(&c, 0, sizeof c);
    int rc = parse_args(&c, argc, argv);
    if (rc >= 0)
        return rc;
    char err[1024];
    if (c.hyperparameters) {
        batchfit_ctx *tmp = NULL;
        uint64_t requested = 0;
        if (batchfit_ctx_create(NULL, &tmp) != BATCHFIT_OK)
            return EXIT_INTERNAL;
        int hrc = batchfit_read_hyperparameters(tmp, c.hyperparameters, &requested, err, sizeof err);
        batchfit_ctx_free(tmp);
        if (hrc)
            return bad_value(err);
        if (c.max_text && requested != c.opts.requested_max)
            fprintf(stderr, "batchfit: --max %s overrides max_batch_size from %s\n", c.max_text,
                    c.hyperparameters);
        else
            c.opts.requested_max = requested;
    }
    const char *vram_source = "none";
    if (!c.vram_flag) {
        if (batchfit_resolve_vram_limit(NULL, NULL, &c.opts.vram_limit_bytes, &vram_source, err,
                                        sizeof err))
            return bad_value(err);
    } else {
        vram_source = "--vram-limit-gb";
    }
    int sim = strncmp(c.device_spec, "sim", 3) == 0;
    if (sim && c.command_argc > 0)
        return usage_errorf("--device %s runs the sim device's synthetic step; it takes no "
                            "COMMAND",
                            c.device_spec);
    if (!sim && c.command_argc == 0)
        return usage_error("no COMMAND given: batchfit probe [options] -- COMMAND [ARGS...]");
    if (!sim && !command_exists(c.command[0])) {
        fprintf(stderr, "batchfit probe: command not found or not executable: %s\n", c.command[0]);
        return EXIT_USAGE;
    }

    if (c.export_json && strcmp(c.export_json, "-") != 0) {
        /* Find out now, before anything runs, that the file can be written. */
        FILE *f = fopen(c.export_json, "a");
        if (!f) {
            fprintf(stderr, "batchfit probe: --export-json %s: %s\n", c.export_json,
                    strerror(errno));
            return EXIT_USAGE;
        }
        fclose(f);
    }
    session s;
    memset(&s, 0, sizeof s);
    s.cli = &c;
    s.vram_source = vram_source;
    c.opts.progress = on_trial;
    c.opts.progress_userdata = &s;
    if (batchfit_ctx_create(NULL, &s.ctx) != BATCHFIT_OK)
        return EXIT_INTERNAL;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    int exit_code = open_device(&s);
    if (exit_code == 0)
        cache_prepare(&s);
    if (exit_code == 0 && !sim) {
        s.code = batchfit_decide(s.ctx, &c.opts, 0, &s.result);
        if (s.code == BATCHFIT_OK)
            s.code = batchfit_settle_budget(s.ctx, &c.opts, s.device, s.result);
        print_new_warnings(&s);
        if (s.code == BATCHFIT_OK)
            exit_code = run_child_probe(&s);
    } else if (exit_code == 0) {
        /* The in-process probe decides and settles the budget itself. */
        s.code = batchfit_probe(s.ctx, &c.opts, s.device, batchfit_sim_step(), NULL, &s.result);
    }
    if (exit_code == 0) {
        print_new_warnings(&s);
        exit_code = cli_exit_code(s.code, interrupted);
        if (s.code != BATCHFIT_OK) {
            snprintf(s.error, sizeof s.error, "%s",
                     interrupted ? "interrupted" : batchfit_ctx_last_error(s.ctx));
            print_failure(&s);
        }
    }
    if (exit_code == EXIT_FOUND)
        cache_save(&s);
    export_json(&s, 1);
    if (exit_code == EXIT_FOUND) {
        print_summary(&s);
        if (!(c.export_json && strcmp(c.export_json, "-") == 0))
            printf("batch_size=%llu\n", (unsigned long long)s.result->batch_size);
    }
    batchfit_runner_free(s.runner);
    batchfit_result_free(s.result);
    batchfit_device_free(s.device);
    batchfit_ctx_free(s.ctx);
    free(s.details);
    return exit_code;
}
