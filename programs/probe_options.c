/* batchfit probe's options: one table says each option's name, argument,
 * kind, limit and destination (curl's tool_getparam), so --help, the man
 * page and the parser cannot drift apart. A bad value exits 2 naming the
 * flag, before anything runs. */
#include "probe.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_TRIALS_LIMIT 10000
#define BATCH_LIMIT (UINT64_C(1) << 62)

typedef enum opt_kind {
    OPT_FLAG,    /* a switch: stores limit into an int */
    OPT_COUNT,   /* a positive whole number up to limit, into a uint64_t */
    OPT_SECONDS, /* a positive number (seconds or milliseconds), into a double */
    OPT_TEXT,    /* the text itself, into a const char * */
    OPT_SPECIAL  /* parsed by its own function */
} opt_kind;

typedef int (*special_fn)(batchfit_ctx *ctx, probe_cli *c, const char *value);

typedef struct option_def {
    const char *name;
    const char *arg; /* NULL: a switch */
    opt_kind kind;
    size_t offset;   /* the destination in probe_cli */
    uint64_t limit;
    special_fn special;
    const char *help;
} option_def;

static int fail_ctx(batchfit_ctx *ctx)
{
    return probe_bad_value(batchfit_ctx_last_error(ctx));
}

char probe_refusal[1024];

int probe_bad_value(const char *message)
{
    snprintf(probe_refusal, sizeof probe_refusal, "%s", message);
    fprintf(stderr, "batchfit probe: %s\n", message);
    return EXIT_USAGE;
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(probe_refusal, sizeof probe_refusal, fmt, ap);
    va_end(ap);
    fprintf(stderr, "batchfit probe: %s\n(see batchfit probe --help)\n", probe_refusal);
    return EXIT_USAGE;
}

static int set_max(batchfit_ctx *ctx, probe_cli *c, const char *value)
{
    if (batchfit_parse_requested_size(ctx, value, "--max", &c->opts.requested_max))
        return fail_ctx(ctx);
    c->max_text = value;
    return 0;
}

static int set_multiple(batchfit_ctx *ctx, probe_cli *c, const char *value)
{
    uint64_t n;
    if (batchfit_parse_count(ctx, value, "--multiple-of", UINT64_C(1) << 40, &n))
        return fail_ctx(ctx);
    if (c->opts.lattice == BATCHFIT_LATTICE_POW2)
        return probe_bad_value("--multiple-of and --power-of-two exclude each other");
    c->opts.lattice = BATCHFIT_LATTICE_MULTIPLE;
    c->opts.lattice_multiple = n;
    return 0;
}

static int set_power_of_two(batchfit_ctx *ctx, probe_cli *c, const char *value)
{
    (void)ctx;
    (void)value;
    if (c->opts.lattice == BATCHFIT_LATTICE_MULTIPLE)
        return probe_bad_value("--multiple-of and --power-of-two exclude each other");
    c->opts.lattice = BATCHFIT_LATTICE_POW2;
    return 0;
}

/* A size the parser read as 1 to 1023 bytes, written with no unit (see
 * cli_bare_small_size): refused (1), as the Python package refuses such a
 * margin. */
static int refuse_bare_small(const char *flag, const char *value, uint64_t bytes, int percent_too)
{
    char msg[256];
    if (!cli_bare_small_size(flag, value, bytes, percent_too, msg, sizeof msg))
        return 0;
    probe_bad_value(msg);
    return 1;
}

static int set_margin(batchfit_ctx *ctx, probe_cli *c, const char *value)
{
    batchfit_options *o = &c->opts;
    char msg[256];
    int share = cli_parse_margin(ctx, value, &o->margin_fraction, &o->margin_bytes, msg,
                                 sizeof msg);
    if (share < 0)
        return probe_bad_value(msg);
    if (share && o->margin_fraction >= 1.0)
        return probe_bad_value("--margin: a margin of 100% leaves nothing to probe");
    if (!share && o->margin_bytes == 0)
        o->margin_fraction = 0.0;
    return 0;
}

static int set_vram_limit(batchfit_ctx *ctx, probe_cli *c, const char *value)
{
    if (batchfit_resolve_vram_limit(ctx, value, BATCHFIT_VRAM_LIMIT_GB_FLAG, &c->opts.vram_limit_bytes,
                                    &c->opts.vram_limit_source))
        return fail_ctx(ctx);
    c->vram_flag = value;
    return 0;
}

static int set_memory_budget(batchfit_ctx *ctx, probe_cli *c, const char *value)
{
    if (batchfit_parse_size(ctx, value, "--memory-budget", &c->opts.memory_budget_bytes))
        return fail_ctx(ctx);
    if (refuse_bare_small("--memory-budget", value, c->opts.memory_budget_bytes, 0))
        return EXIT_USAGE;
    if (c->opts.memory_budget_bytes == 0)
        return probe_bad_value("--memory-budget: it must be larger than zero");
    return 0;
}

static int set_strategy(batchfit_ctx *ctx, probe_cli *c, const char *value)
{
    if (batchfit_parse_strategy(ctx, value, "--strategy", &c->opts.strategy))
        return fail_ctx(ctx);
    return 0;
}

static int add_oom_pattern(batchfit_ctx *ctx, probe_cli *c, const char *value)
{
    (void)ctx;
    if (c->oom_pattern_count == MAX_OOM_PATTERNS)
        return probe_bad_value("--oom-pattern: at most 32 patterns");
    c->oom_patterns[c->oom_pattern_count++] = value;
    return 0;
}

static int set_cache_key(batchfit_ctx *ctx, probe_cli *c, const char *value)
{
    (void)ctx;
    if (!value[0])
        return probe_bad_value("--cache-key: it must not be empty");
    c->opts.cache_key = value;
    return 0;
}

static int set_peak_spread(batchfit_ctx *ctx, probe_cli *c, const char *value)
{
    if (batchfit_parse_percent(ctx, value, "--peak-spread", &c->opts.peak_spread))
        return fail_ctx(ctx);
    if (c->opts.peak_spread >= 0.5)
        return probe_bad_value("--peak-spread: it must be below 50%");
    return 0;
}

static int set_agree(batchfit_ctx *ctx, probe_cli *c, const char *value)
{
    (void)ctx;
    if (strcmp(value, "min") == 0)
        c->agree = BATCHFIT_AGREE_MIN;
    else if (strcmp(value, "per-rank") == 0)
        c->agree = BATCHFIT_AGREE_PER_RANK;
    else
        return usage_error("--agree: invalid value \"%s\": expected min or per-rank", value);
    c->agree_given = 1;
    return 0;
}

static int set_style(batchfit_ctx *ctx, probe_cli *c, const char *value)
{
    (void)ctx;
    if (strcmp(value, "none") == 0) {
        c->style = STYLE_NONE;
    } else if (strcmp(value, "basic") == 0) {
        c->style = STYLE_BASIC;
    } else if (strcmp(value, "auto") == 0) {
        const char *term = getenv("TERM");
        c->style = isatty(2) && !getenv("NO_COLOR") && !(term && strcmp(term, "dumb") == 0)
                       ? STYLE_COLOR
                       : STYLE_BASIC;
    } else {
        return usage_error("--style: invalid value \"%s\": expected auto, basic or none", value);
    }
    return 0;
}

#define AT(field) offsetof(probe_cli, field)

/* The single list of options: --help prints it and doc/batchfit.1 mirrors it
 * (a test checks that the two agree). */
static const option_def options[] = {
    {"--min", "N", OPT_COUNT, AT(opts.min_batch), BATCH_LIMIT, NULL,
     "the smallest batch size the step can run at all (default 1)"},
    {"--max", "N", OPT_SPECIAL, 0, 0, set_max,
     "the requested maximum, max_batch_size (0 = the device decides)"},
    {"--samples", "N", OPT_COUNT, AT(opts.samples), BATCH_LIMIT, NULL,
     "the dataset size: no batch larger than this"},
    {"--multiple-of", "N", OPT_SPECIAL, 0, 0, set_multiple, "allow only multiples of N"},
    {"--power-of-two", NULL, OPT_SPECIAL, 0, 0, set_power_of_two,
     "allow only powers of two (the requested maximum is one more candidate)"},
    {"--margin", "SIZE|PCT", OPT_SPECIAL, 0, 0, set_margin,
     "memory held back from the budget (default 5%)"},
    {BATCHFIT_VRAM_LIMIT_GB_FLAG, "X", OPT_SPECIAL, 0, 0, set_vram_limit,
     BATCHFIT_VRAM_LIMIT_GB_HELP},
    {"--memory-budget", "SIZE", OPT_SPECIAL, 0, 0, set_memory_budget,
     "use SIZE instead of the device's free memory"},
    {"--device", "SPEC", OPT_TEXT, AT(device_spec), 0, NULL,
     "auto, host, sim:KEY=VALUE,..., cuda:N, or several GPUs at once for a command that "
     "uses them all: cuda:N,M,... (in that order) or cuda:all; each GPU gets its own budget "
     "and a trial fits only if it fits on every one (default auto: the first NVIDIA GPU, "
     "else host)"},
    {"--strategy", "NAME", OPT_SPECIAL, 0, 0, set_strategy,
     "model, bisect, binsearch, power or halving (default model)"},
    {"--max-trials", "N", OPT_COUNT, AT(max_trials), MAX_TRIALS_LIMIT, NULL,
     "stop after N trials (default 40)"},
    {"--estimate", "N", OPT_COUNT, AT(opts.first_guess), UINT64_C(1) << 40, NULL,
     "a predicted largest batch (from batchfit estimate) to try first"},
    {"--timeout", "SECONDS", OPT_SECONDS, AT(timeout_seconds), 0, NULL,
     "per trial; then the trial's process group gets SIGTERM, then SIGKILL"},
    {"--oom-pattern", "REGEX", OPT_SPECIAL, 0, 0, add_oom_pattern,
     "one more out-of-memory signature (repeatable)"},
    {"--show-output", NULL, OPT_FLAG, AT(cmd.show_output), 1, NULL,
     "copy every trial's output to stderr"},
    {"--export-json", "FILE", OPT_TEXT, AT(export_json), 0, NULL,
     "write the results as JSON, rewritten after every trial (- = stdout)"},
    {"--plot", "FILE", OPT_TEXT, AT(plot_path), 0, NULL,
     "draw the probe as an SVG picture at the end (- = stdout)"},
    {"--hyperparameters", "FILE", OPT_TEXT, AT(hyperparameters), 0, NULL,
     "read max_batch_size (never batch_size) from a JSON file"},
    {"--enforce", NULL, OPT_FLAG, AT(cmd.enforce), 1, NULL,
     "add a hard memory cap per trial (the cgroup's limit, else the trial's group is stopped "
     "when its resident memory passes the budget)"},
    {"--enforce-address-space", NULL, OPT_FLAG, AT(cmd.enforce_address_space), 1, NULL,
     "also cap each trial's virtual memory at the budget (RLIMIT_AS; frameworks reserve far "
     "more address space than they use)"},
    {"--crash-is-oom", NULL, OPT_FLAG, AT(cmd.crash_is_oom), 1, NULL,
     "count a crash near the cap of --enforce or --enforce-address-space as out of memory "
     "(refused without either)"},
    {"--no-watchdog", NULL, OPT_FLAG, AT(cmd.watchdog), 0, NULL,
     "let a trial run on after its memory passes the budget"},
    {"--sample-interval", "MS", OPT_SECONDS, AT(sample_interval_ms), 0, NULL,
     "milliseconds between memory samples (default 20)"},
    {"--peak-spread", "PCT", OPT_SPECIAL, 0, 0, set_peak_spread,
     "trial-to-trial spread of peaks to guard against (default: the device's, 5% on host)"},
    {"--no-cgroup", NULL, OPT_FLAG, AT(no_cgroup), 1, NULL,
     "measure with wait4's rusage and sampling only (the process tree's RSS and unmapped "
     "shared memory)"},
    {"--cache", NULL, OPT_FLAG, AT(no_cache), 0, NULL,
     "verify a remembered answer in one or two trials instead of searching (the default: "
     "it is always verified; where it no longer holds, the search goes on from it)"},
    {"--no-cache", NULL, OPT_FLAG, AT(no_cache), 1, NULL, "neither read nor write the cache"},
    {"--cache-key", "KEY", OPT_SPECIAL, 0, 0, set_cache_key,
     "name the model in the cache key instead of hashing the command"},
    {"--mpi", NULL, OPT_FLAG, AT(mpi), 1, NULL,
     "run as one rank of an MPI job (mpirun -n N batchfit probe --mpi ...): each rank probes "
     "its device (default cuda:LOCAL_RANK, else the host), then the ranks agree; rank 0 "
     "prints and exports"},
    {"--agree", "min|per-rank", OPT_SPECIAL, 0, 0, set_agree,
     "with --mpi: every rank uses the smallest answer (min, the default) or its own"},
    {"--parallel", NULL, OPT_FLAG, AT(parallel), 1, NULL,
     "with several identical GPUs (--device cuda:all or cuda:N,M,...) and a command that uses "
     "one GPU: run up to one trial on each GPU at once, the search proposing a size for each "
     "(fewer rounds, the same answer); with --mpi, one trial on each rank's device (the ranks' "
     "devices must be identical)"},
    {"--quiet", NULL, OPT_FLAG, AT(quiet), 1, NULL, "print only the result"},
    {"--style", "auto|basic|none", OPT_SPECIAL, 0, 0, set_style,
     "progress output: auto (colour on a terminal unless NO_COLOR), basic (plain), none (no "
     "progress lines)"},
    {"--help", NULL, OPT_SPECIAL, 0, 0, NULL, "show this help (also -h)"},
    {"--version", NULL, OPT_SPECIAL, 0, 0, NULL, "show the version"},
};

#define OPTION_COUNT (sizeof options / sizeof options[0])

/* The option named by the first len characters of name; NULL if none. */
static const option_def *find_option(const char *name, size_t len)
{
    for (size_t k = 0; k < OPTION_COUNT; k++)
        if (strlen(options[k].name) == len && strncmp(options[k].name, name, len) == 0)
            return &options[k];
    return NULL;
}

/* The option a word names, up to any "=VALUE"; *eq, when given, is set to
 * that '=' (NULL without one). NULL if it names none. */
static const option_def *option_named(const char *word, const char **eq)
{
    const char *at = strchr(word, '=');
    if (eq)
        *eq = at;
    return find_option(word, at ? (size_t)(at - word) : strlen(word));
}

static void print_help(FILE *f)
{
    fprintf(f, "usage: batchfit probe [options] -- COMMAND [ARGS...]\n"
               "       batchfit probe --device sim:SPEC [options]\n\n"
               "Runs COMMAND once per trial with {batch} in ARGS replaced by the batch size (and\n"
               "BATCHFIT_BATCH_SIZE in its environment) and prints the largest batch size that\n"
               "fits, as the last line on stdout: batch_size=N.\n\noptions:\n");
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        int width = fprintf(f, "  %s%s%s", options[i].name, options[i].arg ? " " : "",
                            options[i].arg ? options[i].arg : "");
        fprintf(f, "%*s", width < 29 ? 29 - width : 1, "");
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
    fprintf(f, "\nexit status: 0 found, 2 bad usage or input (nothing run), 3 no size fitted "
               "(even the minimum\ndoes not fit, or none did within --max-trials), 4 a trial "
               "failed with an error that is not\nout-of-memory, 5 no usable device, 6 the "
               "--export-json or --plot file, or standard\noutput, could not be written, 1 anything "
               "else (batchfit itself out of memory),\n128+N stopped by signal N (130: Ctrl-C).\n");
}

static int apply(batchfit_ctx *ctx, probe_cli *c, const option_def *def, const char *value)
{
    char *dest = (char *)c + def->offset;
    switch (def->kind) {
    case OPT_FLAG:
        *(int *)(void *)dest = (int)def->limit;
        return 0;
    case OPT_COUNT:
        if (batchfit_parse_count(ctx, value, def->name, def->limit, (uint64_t *)(void *)dest))
            return fail_ctx(ctx);
        return 0;
    case OPT_SECONDS: {
        /* Blanks around the number are read past, as the library's
         * parsers read them (--max ' 5' was taken, --timeout ' 5'
         * refused); decimal only: strtod also reads "0x10" and
         * "infinity". */
        const char *s = value;
        while (*s == ' ' || *s == '\t')
            s++;
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        int decimal = (isdigit((unsigned char)s[0]) || s[0] == '.') && !strpbrk(s, "xXpP");
        while (*end == ' ' || *end == '\t')
            end++;
        if (!decimal || errno || end == s || *end || !isfinite(v) || v <= 0.0 || v > 1e9) {
            char message[512];
            snprintf(message, sizeof message,
                     "%s: invalid value \"%.200s\": expected a positive number, at most 1e9",
                     def->name, value);
            return probe_bad_value(message);
        }
        *(double *)(void *)dest = v;
        return 0;
    }
    case OPT_TEXT:
        *(const char **)(void *)dest = value;
        return 0;
    case OPT_SPECIAL:
        return def->special(ctx, c, value);
    }
    return usage_error("unknown option %s", def->name);
}

static void defaults(probe_cli *c)
{
    memset(c, 0, sizeof *c);
    batchfit_options_init(&c->opts);
    batchfit_command_options_init(&c->cmd);
    c->opts.cache = 1;
    /* The CLI measures or fails: a size it did not measure is not an answer. */
    c->opts.no_device = BATCHFIT_NO_DEVICE_ERROR;
    c->device_spec = NULL; /* auto, or under --mpi this rank's GPU */
    c->sample_interval_ms = 0.0; /* not given: 20 ms */
    c->max_trials = BATCHFIT_DEFAULT_MAX_TRIALS;
    set_style(NULL, c, "auto");
}

int probe_parse_args(batchfit_ctx *ctx, probe_cli *c, int argc, char **argv)
{
    defaults(c);
    /* The value each option was first given: a second, different one wins
     * as the last does everywhere, but is said (--max 10 ... --max 20 ran
     * 20 without a word). --oom-pattern is meant to repeat. */
    const char *given[OPTION_COUNT] = {NULL};
    char twice[OPTION_COUNT][160];
    size_t twice_count = 0;
    int i = 1;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            print_help(stdout);
            return cli_finish_output("probe", EXIT_FOUND);
        }
        if (strcmp(arg, "--version") == 0) {
            printf("batchfit %s\n", batchfit_version_string());
            return cli_finish_output("probe", EXIT_FOUND);
        }
        if (arg[0] != '-' || arg[1] == '\0') {
            /* The command starts here, unless a "--" follows: then this
             * word stood among the options ("--parallel 2 -- cmd" ran a
             * program named 2). A command whose own arguments hold "--"
             * comes after a "--" of its own. */
            for (int k = i + 1; k < argc; k++)
                if (strcmp(argv[k], "--") == 0) {
                    const char *prev = i > 1 ? argv[i - 1] : "";
                    const option_def *flag = find_option(prev, strlen(prev));
                    if (flag && flag->arg)
                        flag = NULL;
                    return usage_error("unexpected \"%.60s\" before --: options come before "
                                       "--, the command after it%s%s%s",
                                       arg, flag ? " (" : "", flag ? flag->name : "",
                                       flag ? " takes no value)" : "");
                }
            break;
        }
        const char *eq;
        const option_def *def = option_named(arg, &eq);
        if (!def) {
            size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
            return usage_error("unknown option %.*s%s", len > 60 ? 60 : (int)len, arg,
                               len > 60 ? "..." : "");
        }
        const char *value = NULL;
        if (def->arg) {
            if (eq) {
                value = eq + 1;
            } else if (i + 1 < argc) {
                value = argv[++i];
                /* The next argument is one of these options: the value was
                 * left out ("--device --max 5" took --max for a device and
                 * then refused the 5 as a stray word). A value that starts
                 * with "--" can still be given as --option=VALUE. */
                if (option_named(value, NULL))
                    return usage_error("%s needs a value (%s): the next argument, %.60s, is an "
                                       "option (a value that starts with -- is given as %s=VALUE)",
                                       def->name, def->arg, value, def->name);
            } else {
                return usage_error("%s needs a value (%s)", def->name, def->arg);
            }
        } else if (eq) {
            return usage_error("%s takes no value", def->name);
        }
        size_t k = (size_t)(def - options);
        /* Two switches that set one setting opposite ways (--cache
         * --no-cache) are an option given twice too. */
        if (!value && def->kind == OPT_FLAG) {
            for (size_t j = 0; j < OPTION_COUNT; j++)
                if (j != k && given[j] && options[j].kind == OPT_FLAG && !options[j].arg &&
                    options[j].offset == def->offset && options[j].limit != def->limit &&
                    twice_count < OPTION_COUNT) {
                    snprintf(twice[twice_count++], sizeof twice[0],
                             "%s and %s both given; the last, %s, wins", options[j].name,
                             def->name, def->name);
                    given[j] = NULL;
                }
            given[k] = def->name;
        }
        if (value && def->special != add_oom_pattern) {
            if (given[k] && strcmp(given[k], value) != 0 && twice_count < OPTION_COUNT)
                snprintf(twice[twice_count++], sizeof twice[0],
                         "%s given twice (%.50s, then %.50s); the last wins", def->name,
                         given[k], value);
            given[k] = value;
        }
        int rc = apply(ctx, c, def, value);
        if (rc != 0)
            return rc;
    }
    if (c->cmd.crash_is_oom && !c->cmd.enforce && !c->cmd.enforce_address_space)
        return usage_error("--crash-is-oom counts a crash near the cap --enforce or "
                           "--enforce-address-space sets as out of memory; without either there "
                           "is no cap");
    if (c->agree_given && !c->mpi)
        return usage_error("--agree is how the ranks of an --mpi job agree on a size; without "
                           "--mpi there is one answer");
    /* Said once the options are read: --quiet may come after. */
    for (size_t w = 0; w < twice_count && !c->quiet; w++)
        fprintf(stderr, "batchfit: warning: %s\n", twice[w]);
    c->command = argv + i;
    c->command_argc = argc - i;
    c->opts.max_trials = (unsigned)c->max_trials;
    c->opts.cache = !c->no_cache;
    /* Under --mpi the ranks are the devices: probe.c sets the width once
     * the job's size is known. */
    c->opts.parallel = c->parallel ? BATCHFIT_MAX_GPUS : 0;
    c->cmd.timeout_seconds = c->timeout_seconds;
    c->cmd.sample_interval =
        (c->sample_interval_ms > 0.0 ? c->sample_interval_ms : 20.0) / 1000.0;
    c->cmd.cgroups = c->no_cgroup ? BATCHFIT_CGROUPS_OFF : BATCHFIT_CGROUPS_AUTO;
    c->cmd.oom_patterns = c->oom_patterns;
    c->cmd.argv = (const char *const *)c->command;
    return -1;
}

int probe_find_flag(int argc, char **argv, const char *flag)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0 || arg[0] != '-' || arg[1] == '\0')
            return 0;
        if (strcmp(arg, flag) == 0)
            return 1;
        /* Past a value that stands on its own (--cache-key --mpi names a key). */
        const option_def *def = strchr(arg, '=') ? NULL : find_option(arg, strlen(arg));
        if (def && def->arg)
            i++;
    }
    return 0;
}

const char *probe_find_export(int argc, char **argv)
{
    const char *found = NULL;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--export-json") == 0 && i + 1 < argc)
            found = argv[++i];
        else if (strncmp(argv[i], "--export-json=", 14) == 0)
            found = argv[i] + 14;
    }
    return found;
}
