/* batchfit estimate: peak memory and the largest batch, predicted before
 * any trial from the model's size, precision, optimizer and activations. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void help(FILE *f)
{
    fprintf(f,
            "usage: batchfit estimate --params N [options]\n\n"
            "Predicts peak training memory and the largest batch that fits, before any trial.\n\n"
            "  --params N              parameter count: 124M, 7.5B, 350000\n"
            "  --precision P           fp32, mixed16 (default) or int8 (frozen 8-bit weights)\n"
            "  --optimizer O           sgd, momentum, adam, adamw (default) or adafactor\n"
            "  --checkpointing         full activation recomputation\n"
            "  --activation-bytes SIZE activation memory per sample, given directly\n"
            "  --layers N --hidden N --heads N --seq N [--vocab N]\n"
            "                          a transformer's shape, for its activations\n"
            "  --device-memory SIZE    the memory to fit into\n"
            "  --device SPEC           or a device's total memory (host, cuda:N, sim:...)\n"
            "  --vram-limit-gb X       fit into at most X GiB (else VRAM_LIMIT_GB, then\n"
            "                          BATCHFIT_VRAM_LIMIT_GB, as probe takes them); without\n"
            "                          a device, the memory to fit into\n"
            "  --margin SIZE|PCT       held back (default 5%%)\n"
            "  --json                  machine-readable output\n\n"
            "Exit status: 0 a prediction, 2 bad input, 3 the model state (or batch 1) does not\n"
            "fit the memory given, 5 no usable --device.\n");
}

static int bad(const char *message)
{
    fprintf(stderr, "batchfit estimate: %s\n", message);
    return EXIT_USAGE;
}

static int parse_unsigned(batchfit_ctx *ctx, const char *flag, const char *text, unsigned *out)
{
    uint64_t v;
    if (batchfit_parse_count(ctx, text, flag, 1u << 30, &v) != BATCHFIT_OK)
        return bad(batchfit_ctx_last_error(ctx));
    *out = (unsigned)v;
    return 0;
}

/* The options that take a value. */
static int takes_value(const char *flag)
{
    static const char *const flags[] = {"--params", "--precision", "--optimizer",
                                        "--activation-bytes", "--layers", "--hidden", "--heads",
                                        "--seq", "--vocab", "--device-memory", "--device",
                                        "--margin", "--vram-limit-gb"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (strcmp(flag, flags[i]) == 0)
            return 1;
    return 0;
}

/* Whether word is one of the options: a flag, or one that takes a value. */
static int is_option(const char *word)
{
    return takes_value(word) || strcmp(word, "--checkpointing") == 0 || strcmp(word, "--json") == 0;
}

/* A size of 0 says nothing is there to fit or to grow (it read as "not
 * given"), and one of 1 to 1023 bytes with no unit is no one's meaning:
 * both refused. 0, or the exit code with the message printed. */
static int check_size(const char *flag, const char *text, uint64_t bytes, const char *example)
{
    char msg[256];
    if (bytes == 0) {
        snprintf(msg, sizeof msg, "%s: \"%s\" is zero bytes; give a size (%s)", flag, text,
                 example);
        return bad(msg);
    }
    return cli_bare_small_size(flag, text, bytes, 0, msg, sizeof msg) ? bad(msg) : 0;
}

/* The VRAM limit, as probe resolves it: the flag, else VRAM_LIMIT_GB, else
 * BATCHFIT_VRAM_LIMIT_GB (0: none). */
typedef struct vram_limit {
    uint64_t bytes;
    const char *source;
} vram_limit;

/* Returns -1 to go on, or an exit code. */
static int parse_args(batchfit_ctx *ctx, int argc, char **argv, batchfit_estimate_input *out,
                      const char **device_out, int *json_out, uint64_t *margin_bytes_out,
                      vram_limit *limit_out)
{
    batchfit_estimate_input in = *out;
    const char *device = NULL, *vram_text = NULL;
    int json = 0;
    char err[512];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        int rc = 0;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            help(stdout);
            return EXIT_FOUND;
        } else if (strcmp(a, "--checkpointing") == 0) {
            in.checkpointing = 1;
            takes = 0;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
            takes = 0;
        } else if (!takes_value(a)) {
            snprintf(err, sizeof err, "unknown option %s (see batchfit estimate --help)", a);
            return bad(err);
        } else if (!v) {
            snprintf(err, sizeof err, "%s needs a value (see batchfit estimate --help)", a);
            return bad(err);
        } else if (is_option(v)) {
            /* The value was left out: "--layers --hidden 4096" read
             * --hidden as the number of layers. */
            snprintf(err, sizeof err, "%s needs a value: the next argument, %.60s, is an option "
                                      "(see batchfit estimate --help)", a, v);
            return bad(err);
        } else if (strcmp(a, "--params") == 0) {
            if (batchfit_parse_params(ctx, v, "--params", &in.params))
                return bad(batchfit_ctx_last_error(ctx));
        } else if (strcmp(a, "--precision") == 0) {
            if (batchfit_parse_precision(ctx, v, "--precision", &in.precision))
                return bad(batchfit_ctx_last_error(ctx));
        } else if (strcmp(a, "--optimizer") == 0) {
            if (batchfit_parse_optimizer(ctx, v, "--optimizer", &in.optimizer))
                return bad(batchfit_ctx_last_error(ctx));
        } else if (strcmp(a, "--activation-bytes") == 0) {
            if (batchfit_parse_size(ctx, v, "--activation-bytes", &in.activation_bytes_per_sample))
                return bad(batchfit_ctx_last_error(ctx));
            rc = check_size(a, v, in.activation_bytes_per_sample, "12MiB");
        } else if (strcmp(a, "--layers") == 0) {
            rc = parse_unsigned(ctx, a, v, &in.layers);
        } else if (strcmp(a, "--hidden") == 0) {
            rc = parse_unsigned(ctx, a, v, &in.hidden);
        } else if (strcmp(a, "--heads") == 0) {
            rc = parse_unsigned(ctx, a, v, &in.heads);
        } else if (strcmp(a, "--seq") == 0) {
            rc = parse_unsigned(ctx, a, v, &in.seq);
        } else if (strcmp(a, "--vocab") == 0) {
            rc = parse_unsigned(ctx, a, v, &in.vocab);
        } else if (strcmp(a, "--device-memory") == 0) {
            if (batchfit_parse_size(ctx, v, "--device-memory", &in.device_bytes))
                return bad(batchfit_ctx_last_error(ctx));
            rc = check_size(a, v, in.device_bytes, "80GiB");
        } else if (strcmp(a, "--device") == 0) {
            device = v;
        } else if (strcmp(a, "--vram-limit-gb") == 0) {
            vram_text = v;
        } else if (strcmp(a, "--margin") == 0) {
            /* A share, or a size held back as probe's --margin takes it. */
            char msg[256];
            int share = cli_parse_margin(ctx, v, &in.margin_fraction, margin_bytes_out, msg,
                                         sizeof msg);
            if (share < 0)
                return bad(msg);
            if (share && in.margin_fraction >= 1.0)
                return bad("--margin: a margin of 100% leaves nothing");
            if (!share)
                in.margin_fraction = 0.0;
        }
        if (rc)
            return rc;
        i += takes;
    }
    if (device && in.device_bytes)
        return bad("--device-memory and --device both say what to fit into: give one");
    /* Given both, one would be dropped unsaid (--activation-bytes won). */
    if (in.activation_bytes_per_sample && (in.layers || in.hidden || in.heads || in.seq || in.vocab))
        return bad("--activation-bytes gives the activations per sample and --layers, --hidden, "
                   "--heads, --seq and --vocab compute them: give one");
    if (batchfit_resolve_vram_limit(ctx, vram_text, BATCHFIT_VRAM_LIMIT_GB_FLAG, &limit_out->bytes,
                                    &limit_out->source) != BATCHFIT_OK)
        return bad(batchfit_ctx_last_error(ctx));
    if (in.hidden && in.heads && in.hidden % in.heads != 0) {
        char why[160];
        snprintf(why, sizeof why,
                 "--hidden %llu is not a multiple of --heads %llu (each head takes hidden/heads)",
                 (unsigned long long)in.hidden, (unsigned long long)in.heads);
        return bad(why);
    }
    *out = in;
    *device_out = device;
    *json_out = json;
    return -1;
}

static int run(batchfit_ctx *ctx, batchfit_estimate_input in, const char *device, int json,
               uint64_t margin_bytes, vram_limit limit)
{
    if (device && !in.device_bytes) {
        batchfit_device *d = NULL;
        uint64_t total = 0, free_bytes = 0;
        const char *why = "";
        if (batchfit_device_open(ctx, device, &d) != BATCHFIT_OK) {
            fprintf(stderr, "batchfit estimate: --device: %s\n", batchfit_ctx_last_error(ctx));
            return EXIT_USAGE;
        }
        if (!batchfit_device_available(d, &why) ||
            batchfit_device_memory(d, &total, &free_bytes) != BATCHFIT_OK) {
            fprintf(stderr, "batchfit estimate: no usable device: --device %s: %s\n", device,
                    why[0] ? why : batchfit_ctx_last_error(ctx));
            batchfit_device_free(d);
            return EXIT_NO_DEVICE;
        }
        in.device_bytes = total;
        batchfit_device_free(d);
    }
    /* The limit caps the memory to fit into, as it caps probe's budget;
     * with nothing else given it is that memory. */
    uint64_t unlimited = in.device_bytes;
    int limited = limit.bytes && (!in.device_bytes || limit.bytes < in.device_bytes);
    if (limited)
        in.device_bytes = limit.bytes;
    /* A margin given as a size is that share of the memory to fit into. */
    if (margin_bytes && in.device_bytes) {
        if (margin_bytes >= in.device_bytes) {
            char margin[32], total[32], msg[200];
            batchfit_format_bytes((double)margin_bytes, margin, sizeof margin);
            batchfit_format_bytes((double)in.device_bytes, total, sizeof total);
            /* Two sizes that print alike are said in bytes. */
            if (strcmp(margin, total) == 0) {
                snprintf(margin, sizeof margin, "%llu bytes", (unsigned long long)margin_bytes);
                snprintf(total, sizeof total, "%llu bytes", (unsigned long long)in.device_bytes);
            }
            snprintf(msg, sizeof msg, "--margin: a margin of %s leaves nothing of the %s usable",
                     margin, total);
            return bad(msg);
        }
        /* The library holds back device * fraction, rounded down: the
         * fraction that gives back the very bytes asked for. */
        double f = (double)margin_bytes / (double)in.device_bytes;
        for (int k = 0; k < 64 && (uint64_t)((double)in.device_bytes * f) < margin_bytes; k++)
            f = nextafter(f, 1.0);
        for (int k = 0; k < 64 && (uint64_t)((double)in.device_bytes * f) > margin_bytes; k++)
            f = nextafter(f, 0.0);
        in.margin_fraction = f;
    }
    /* Without activations the model state is still worth knowing: it is
     * what no batch size can shrink. The batch needs the activations. */
    int state_only = in.activation_bytes_per_sample == 0 &&
                     !(in.layers && in.hidden && in.heads && in.seq);
    if (state_only)
        in.activation_bytes_per_sample = 1;
    batchfit_estimate e;
    int rc = batchfit_estimate_memory(ctx, &in, &e);
    if (rc) {
        /* The library's message names its own subject ("estimate: ..."). */
        fprintf(stderr, "batchfit: %s\n", batchfit_ctx_last_error(ctx));
        return EXIT_USAGE;
    }
    if (json) {
        json_writer w;
        jw_begin(&w, stdout);
        jw_object(&w, NULL);
        jw_u64(&w, "schema_version", 1);
        jw_u64(&w, "params", in.params);
        jw_double(&w, "bytes_per_param", e.bytes_per_param);
        jw_u64(&w, "model_state_bytes", e.model_state_bytes);
        if (state_only)
            jw_null(&w, "activation_bytes_per_sample");
        else
            jw_u64(&w, "activation_bytes_per_sample", e.activation_bytes_per_sample);
        /* device_bytes stays the device's (or the given) memory; the limit
         * that capped it, and what was fitted into, beside it. */
        if (limited) {
            jw_u64(&w, "vram_limit_bytes", limit.bytes);
            jw_string(&w, "vram_limit_source", limit.source);
        } else {
            jw_null(&w, "vram_limit_bytes");
            jw_null(&w, "vram_limit_source");
        }
        if (unlimited)
            jw_u64(&w, "device_bytes", unlimited);
        else
            jw_null(&w, "device_bytes");
        if (in.device_bytes) {
            jw_u64(&w, "memory_bytes", in.device_bytes);
            jw_u64(&w, "budget_bytes", e.budget_bytes);
            if (state_only && e.model_state_bytes <= e.budget_bytes)
                jw_null(&w, "max_batch");
            else
                jw_u64(&w, "max_batch", e.max_batch);
        } else {
            jw_null(&w, "memory_bytes");
            jw_null(&w, "budget_bytes");
            jw_null(&w, "max_batch");
        }
        if (state_only)
            jw_null(&w, "predicted_peak_bytes");
        else
            jw_u64(&w, "predicted_peak_bytes", e.predicted_peak_bytes);
        jw_end_object(&w);
    } else {
        char state[32], act[32], peak[32], budget[32];
        batchfit_format_bytes((double)e.model_state_bytes, state, sizeof state);
        batchfit_format_bytes((double)e.activation_bytes_per_sample, act, sizeof act);
        batchfit_format_bytes((double)e.predicted_peak_bytes, peak, sizeof peak);
        batchfit_format_bytes((double)e.budget_bytes, budget, sizeof budget);
        printf("model state        %s (%.0f bytes per parameter)\n", state, e.bytes_per_param);
        if (limited) {
            char cap[32], whole[32];
            batchfit_format_bytes((double)limit.bytes, cap, sizeof cap);
            batchfit_format_bytes((double)unlimited, whole, sizeof whole);
            printf("memory             %s, the VRAM limit (%s)%s%s%s\n", cap, limit.source,
                   unlimited ? " of the " : "", unlimited ? whole : "",
                   unlimited ? (device ? " the device has" : " given") : "");
        }
        if (state_only) {
            printf("activations        unknown: give --activation-bytes, or --layers, --hidden, "
                   "--heads and --seq for a transformer, to predict a batch size\n");
            if (in.device_bytes)
                printf("budget             %s; the model state alone %s\n", budget,
                       e.model_state_bytes <= e.budget_bytes ? "fits" : "does not fit");
        } else {
            printf("activations        %s per sample\n", act);
        }
        if (in.device_bytes && !state_only) {
            printf("budget             %s\n", budget);
            printf("predicted peak     %s at batch %llu\n", peak,
                   (unsigned long long)(e.max_batch ? e.max_batch : 1));
            printf("max_batch=%llu\n", (unsigned long long)e.max_batch);
        }
    }
    /* Exit 3 says why on stderr too (max_batch=0 alone read as a result). */
    int too_big = in.device_bytes && (state_only ? e.model_state_bytes > e.budget_bytes
                                                 : e.max_batch == 0);
    if (too_big) {
        char need[32], budget[32];
        batchfit_format_bytes((double)(state_only ? e.model_state_bytes : e.predicted_peak_bytes),
                              need, sizeof need);
        batchfit_format_bytes((double)e.budget_bytes, budget, sizeof budget);
        fprintf(stderr, "batchfit estimate: %s needs %s, more than the budget of %s\n",
                state_only ? "the model state alone" : "batch 1", need, budget);
    }
    return too_big ? EXIT_MIN_DOES_NOT_FIT : EXIT_FOUND;
}

int cli_estimate(int argc, char **argv)
{
    batchfit_ctx *ctx = NULL;
    if (batchfit_ctx_create(NULL, &ctx) != BATCHFIT_OK)
        return EXIT_INTERNAL;
    /* --device auto without a usable GPU is the host's memory, said as a
     * probe says it (an estimate for a GPU was quietly one for host RAM). */
    batchfit_ctx_set_log(ctx, cli_log_warnings, NULL, BATCHFIT_LOG_WARN);
    batchfit_estimate_input in;
    batchfit_estimate_input_init(&in);
    const char *device = NULL;
    int json = 0;
    uint64_t margin_bytes = 0;
    vram_limit limit = {0, NULL};
    int rc = parse_args(ctx, argc, argv, &in, &device, &json, &margin_bytes, &limit);
    if (rc < 0)
        rc = run(ctx, in, device, json, margin_bytes, limit);
    batchfit_ctx_free(ctx);
    return rc;
}
