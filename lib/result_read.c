/* Reading a result back from its JSON (schema_version 1), for programs that
 * report or draw a probe after the fact (batchfit plot). The reader accepts
 * exactly what json_write.c writes: a field of the wrong type is an error
 * that names it; absent optional fields stay zero. */
#include "json_tree.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

typedef struct reader {
    batchfit_ctx *ctx;
    batchfit_result *result;
    char path[96]; /* the field being read, for messages */
    int code;
} reader;

static int bad(reader *r, const char *field, const char *expected)
{
    if (r->code == BATCHFIT_OK)
        r->code = batchfit__fail(r->ctx, BATCHFIT_E_PARSE, "result JSON: %s%s%s: expected %s",
                                 r->path, r->path[0] ? "." : "", field, expected);
    return r->code;
}

/* A u64 field: absent or null leaves *out (and *known) as they are. */
static int get_u64(reader *r, const jt_value *obj, const char *field, uint64_t *out, int *known)
{
    const jt_value *v = batchfit__jt_get(obj, field);
    if (!v || v->kind == JT_NULL)
        return BATCHFIT_OK;
    if (v->kind != JT_NUMBER || !v->is_u64)
        return bad(r, field, "a whole number of at least 0");
    *out = v->u64;
    if (known)
        *known = 1;
    return BATCHFIT_OK;
}

static int get_double(reader *r, const jt_value *obj, const char *field, double *out)
{
    const jt_value *v = batchfit__jt_get(obj, field);
    if (!v || v->kind == JT_NULL)
        return BATCHFIT_OK;
    if (v->kind != JT_NUMBER)
        return bad(r, field, "a number");
    *out = v->number;
    return BATCHFIT_OK;
}

static int get_bool(reader *r, const jt_value *obj, const char *field, int *out)
{
    const jt_value *v = batchfit__jt_get(obj, field);
    if (!v || v->kind == JT_NULL)
        return BATCHFIT_OK;
    if (v->kind != JT_BOOL)
        return bad(r, field, "true or false");
    *out = v->boolean;
    return BATCHFIT_OK;
}

/* A string field: NULL when absent or null. */
static int get_string(reader *r, const jt_value *obj, const char *field, const char **out)
{
    const jt_value *v = batchfit__jt_get(obj, field);
    *out = NULL;
    if (!v || v->kind == JT_NULL)
        return BATCHFIT_OK;
    if (v->kind != JT_STRING)
        return bad(r, field, "a string");
    *out = v->string;
    return BATCHFIT_OK;
}

/* A string kept by the result (freed with it). */
static int keep(reader *r, const jt_value *obj, const char *field, const char **dest)
{
    const char *text;
    if (get_string(r, obj, field, &text) || !text)
        return r->code;
    if (batchfit__result_keep(r->result, dest, text) != BATCHFIT_OK)
        r->code = batchfit__fail(r->ctx, BATCHFIT_E_NO_MEMORY, "out of memory reading a result");
    return r->code;
}

static int copy_string(reader *r, const jt_value *obj, const char *field, char *dest, size_t len)
{
    const char *text;
    if (get_string(r, obj, field, &text) == BATCHFIT_OK && text)
        batchfit__copy(dest, len, text);
    return r->code;
}

static const jt_value *section(reader *r, const jt_value *root, const char *name)
{
    const jt_value *v = batchfit__jt_get(root, name);
    if (v && v->kind != JT_OBJECT && v->kind != JT_NULL) {
        bad(r, name, "an object");
        return NULL;
    }
    batchfit__copy(r->path, sizeof r->path, name);
    return v && v->kind == JT_OBJECT ? v : NULL;
}

static void read_device(reader *r, const jt_value *root)
{
    batchfit_result *res = r->result;
    const jt_value *d = section(r, root, "device");
    res->device.struct_size = sizeof res->device;
    keep(r, d, "spec", &res->device_spec);
    copy_string(r, d, "kind", res->device.kind, sizeof res->device.kind);
    copy_string(r, d, "name", res->device.name, sizeof res->device.name);
    copy_string(r, d, "uuid", res->device.uuid, sizeof res->device.uuid);
    copy_string(r, d, "pci_bus_id", res->device.pci_bus_id, sizeof res->device.pci_bus_id);
    res->device.available = res->device_spec != NULL;
    get_u64(r, d, "total_bytes", &res->budget.total_bytes, NULL);
    get_u64(r, d, "free_bytes", &res->budget.free_bytes, NULL);
}

static void read_budget(reader *r, const jt_value *root)
{
    batchfit_result *res = r->result;
    batchfit_budget *b = &res->budget;
    const jt_value *j = section(r, root, "budget");
    get_u64(r, j, "usable_bytes", &b->usable_bytes, NULL);
    get_u64(r, j, "margin_bytes", &b->margin_bytes, NULL);
    get_u64(r, j, "budget_bytes", &b->budget_bytes, &b->known);
    get_u64(r, j, "held_bytes", &b->held_bytes, NULL);
    get_double(r, j, "peak_spread", &b->peak_spread);
    get_u64(r, j, "memory_budget_bytes", &res->memory_budget_bytes, NULL);
    keep(r, j, "memory_note", &res->memory_note);
    j = section(r, root, "vram_limit");
    get_u64(r, j, "bytes", &b->vram_limit_bytes, NULL);
    keep(r, j, "source", &res->vram_limit_source);
}

static void read_bounds(reader *r, const jt_value *root)
{
    batchfit_result *res = r->result;
    const jt_value *l = section(r, root, "lattice");
    const char *kind = NULL;
    get_string(r, l, "kind", &kind);
    if (kind && strcmp(kind, "power_of_two") == 0)
        res->lattice = BATCHFIT_LATTICE_POW2;
    else if (kind && strcmp(kind, "multiple_of") == 0)
        res->lattice = BATCHFIT_LATTICE_MULTIPLE;
    else if (kind && strcmp(kind, "every_integer") != 0)
        bad(r, "kind", "every_integer, multiple_of or power_of_two");
    get_u64(r, l, "multiple", &res->lattice_multiple, NULL);
    get_u64(r, l, "min", &res->min_batch, NULL);
    get_u64(r, l, "max", &res->upper_bound, NULL);
    get_u64(r, l, "requested_max", &res->requested_max, NULL);
    r->path[0] = '\0';
    const char *strategy = NULL;
    if (get_string(r, root, "strategy", &strategy) == BATCHFIT_OK && strategy &&
        batchfit_parse_strategy(r->ctx, strategy, "result JSON: strategy", &res->strategy))
        r->code = BATCHFIT_E_PARSE;
    const jt_value *c = section(r, root, "cache");
    keep(r, c, "key", &res->cache_key);
    get_bool(r, c, "hit", &res->cache_hit);
    get_u64(r, c, "remembered_batch_size", &res->cache_remembered, NULL);
    r->path[0] = '\0';
    keep(r, root, "mechanisms", &res->mechanisms);
    double interval_ms = 0.0;
    get_double(r, root, "sample_interval_ms", &interval_ms);
    res->sample_interval = interval_ms / 1000.0;
    const jt_value *cmd = batchfit__jt_get(root, "command");
    if (cmd && cmd->kind == JT_ARRAY && cmd->count > 0 && r->code == BATCHFIT_OK) {
        const char **argv = batchfit__calloc(&r->ctx->allocator, cmd->count + 1, sizeof *argv);
        if (!argv) {
            r->code = batchfit__fail(r->ctx, BATCHFIT_E_NO_MEMORY, "out of memory reading a result");
            return;
        }
        for (size_t i = 0; i < cmd->count && r->code == BATCHFIT_OK; i++) {
            if (cmd->items[i].kind != JT_STRING)
                bad(r, "command", "an array of strings");
            else
                argv[i] = cmd->items[i].string;
        }
        if (r->code == BATCHFIT_OK && batchfit__result_keep_command(res, argv) != BATCHFIT_OK)
            r->code = batchfit__fail(r->ctx, BATCHFIT_E_NO_MEMORY, "out of memory reading a result");
        batchfit__free(&r->ctx->allocator, argv);
    } else if (cmd && cmd->kind != JT_ARRAY) {
        bad(r, "command", "an array");
    }
}

static void read_trial(reader *r, const jt_value *t)
{
    batchfit_trial trial;
    memset(&trial, 0, sizeof trial);
    if (t->kind != JT_OBJECT) {
        bad(r, "trials", "an array of objects");
        return;
    }
    int known = 0;
    get_u64(r, t, "batch", &trial.batch, &known);
    if (!known)
        bad(r, "batch", "a batch size in every trial");
    const char *outcome = NULL;
    get_string(r, t, "outcome", &outcome);
    if (outcome && strcmp(outcome, "oom") == 0)
        trial.outcome = BATCHFIT_OOM;
    else if (outcome && strcmp(outcome, "error") == 0)
        trial.outcome = BATCHFIT_ERROR;
    else if (!outcome || strcmp(outcome, "fits") != 0)
        bad(r, "outcome", "fits, oom or error");
    get_bool(r, t, "accepted", &trial.accepted);
    get_bool(r, t, "over_budget", &trial.over_budget);
    get_u64(r, t, trial.outcome == BATCHFIT_OOM ? "needed_bytes_at_least" : "peak_bytes",
            &trial.peak_bytes, &trial.peak_known);
    /* Older results named a failed trial's peak needed_bytes_at_least. */
    if (trial.outcome == BATCHFIT_ERROR && !trial.peak_known)
        get_u64(r, t, "needed_bytes_at_least", &trial.peak_bytes, &trial.peak_known);
    get_double(r, t, "seconds", &trial.seconds);
    copy_string(r, t, "reason", trial.message, sizeof trial.message);
    /* Child-process details, when the trial was one. */
    batchfit_trial_process *d = &trial.process;
    uint64_t value = 0;
    const char *peak_source = NULL;
    get_string(r, t, "peak_source", &peak_source);
    if (peak_source) {
        d->ran = 1;
        if (batchfit__result_keep(r->result, &d->peak_source, peak_source) != BATCHFIT_OK) {
            r->code = batchfit__fail(r->ctx, BATCHFIT_E_NO_MEMORY, "out of memory reading a result");
            return;
        }
        if (get_u64(r, t, "exit_code", &value, &d->exited) == BATCHFIT_OK)
            d->exit_code = (int)value;
        value = 0;
        if (get_u64(r, t, "signal", &value, NULL) == BATCHFIT_OK)
            d->signal = (int)value;
        get_u64(r, t, "sampled_peak_bytes", &d->sampled_peak_bytes, NULL);
        get_u64(r, t, "host_peak_bytes", &d->host_peak_bytes, NULL);
        get_u64(r, t, "device_peak_bytes", &d->device_peak_bytes, &d->device_peak_known);
        get_u64(r, t, "device_free_drop_bytes", &d->device_free_drop_bytes,
                &d->device_free_drop_known);
        copy_string(r, t, "oom_signature", d->oom_signature, sizeof d->oom_signature);
        value = 0;
        if (get_u64(r, t, "left_running", &value, NULL) == BATCHFIT_OK)
            d->left_running = value > UINT_MAX ? UINT_MAX : (unsigned)value;
        copy_string(r, t, "left_running_name", d->left_running_name,
                    sizeof d->left_running_name);
    }
    /* Trials across ranks: which rank ran it. */
    uint64_t rank = 0;
    int rank_known = 0;
    get_u64(r, t, "rank", &rank, &rank_known);
    if (rank_known && rank > INT_MAX)
        bad(r, "rank", "a rank below 2^31");
    if (r->code == BATCHFIT_OK && batchfit__result_add_trial(r->result, &trial) != BATCHFIT_OK)
        r->code = batchfit__fail(r->ctx, BATCHFIT_E_NO_MEMORY, "out of memory reading a result");
    if (r->code == BATCHFIT_OK && rank_known &&
        batchfit__result_set_trial_rank(r->result, r->result->trial_count - 1, (int)rank) !=
            BATCHFIT_OK)
        r->code = batchfit__fail(r->ctx, BATCHFIT_E_NO_MEMORY, "out of memory reading a result");
}

static void read_outcome(reader *r, const jt_value *root)
{
    batchfit_result *res = r->result;
    const jt_value *f = section(r, root, "fit");
    if (f) {
        res->fit.valid = 1;
        get_double(r, f, "intercept_bytes", &res->fit.intercept_bytes);
        get_double(r, f, "bytes_per_sample", &res->fit.bytes_per_sample);
        get_double(r, f, "max_residual_bytes", &res->fit.max_residual_bytes);
        uint64_t points = 0;
        get_u64(r, f, "points", &points, NULL);
        res->fit.points = (unsigned)points;
        get_bool(r, f, "remembered", &res->fit_remembered);
    }
    const jt_value *o = section(r, root, "result");
    get_u64(r, o, "batch_size", &res->batch_size, NULL);
    get_u64(r, o, "smallest_failure", &res->smallest_failure, NULL);
    get_u64(r, o, "estimate", &res->first_guess, NULL);
    /* Older results have no rounds: one trial a round. */
    uint64_t rounds = 0;
    int rounds_known = 0;
    get_u64(r, o, "rounds", &rounds, &rounds_known);
    res->rounds = rounds_known ? (size_t)rounds : res->trial_count;
    get_bool(r, o, "complete", &res->complete);
    get_bool(r, o, "interrupted", &res->interrupted);
    uint64_t signal_number = 0, exit_code = 0;
    int exit_known = 0;
    get_u64(r, o, "signal", &signal_number, NULL);
    res->interrupt_signal = (int)signal_number;
    get_u64(r, o, "exit_code", &exit_code, &exit_known);
    keep(r, o, "error", &res->error);
    keep(r, o, "stop_reason", &res->stop_reason);
    /* The exit code says which kind of failure it was. */
    static const int codes[] = {[2] = BATCHFIT_E_INVALID_ARGUMENT, [3] = BATCHFIT_E_MIN_DOES_NOT_FIT,
                                [4] = BATCHFIT_E_TRIAL_ERROR, [5] = BATCHFIT_E_NO_DEVICE};
    if (res->interrupted || (exit_known && exit_code > 128))
        res->status = BATCHFIT_E_ABORTED;
    else if (exit_known && exit_code < sizeof codes / sizeof codes[0] && codes[exit_code])
        res->status = codes[exit_code];
    else if (exit_known && exit_code != 0)
        res->status = BATCHFIT_E_DEVICE;
    if (res->batch_size)
        res->source = res->trial_count ? BATCHFIT_SOURCE_MEASURED : BATCHFIT_SOURCE_FALLBACK;
}

static void read_result(reader *r, const jt_value *root)
{
    uint64_t schema = 0;
    int known = 0;
    if (root->kind != JT_OBJECT) {
        bad(r, "(top level)", "an object");
        return;
    }
    get_u64(r, root, "schema_version", &schema, &known);
    if (r->code == BATCHFIT_OK && (!known || schema != 1)) {
        r->code = batchfit__fail(r->ctx, BATCHFIT_E_PARSE,
                                 "result JSON: schema_version %llu is not 1 (is this a batchfit "
                                 "result?)",
                                 (unsigned long long)schema);
        return;
    }
    /* Every result batchfit writes has its trials (an empty array for a
     * probe refused before any) and its outcome; batchfit info and
     * estimate write schema_version 1 too, and drew as empty results. */
    const jt_value *trials = batchfit__jt_get(root, "trials");
    const jt_value *outcome = batchfit__jt_get(root, "result");
    if (!trials || !outcome) {
        r->code = batchfit__fail(r->ctx, BATCHFIT_E_PARSE,
                                 "result JSON: no \"%s\" (a probe's result has \"trials\" and "
                                 "\"result\"; is this batchfit info's or estimate's?)",
                                 !trials ? "trials" : "result");
        return;
    }
    read_device(r, root);
    read_budget(r, root);
    read_bounds(r, root);
    r->path[0] = '\0';
    if (trials->kind != JT_ARRAY)
        bad(r, "trials", "an array");
    else
        for (size_t i = 0; i < trials->count && r->code == BATCHFIT_OK; i++) {
            snprintf(r->path, sizeof r->path, "trials[%zu]", i);
            read_trial(r, &trials->items[i]);
        }
    read_outcome(r, root);
    const jt_value *warnings = batchfit__jt_get(root, "warnings");
    r->path[0] = '\0';
    if (warnings && warnings->kind != JT_ARRAY)
        bad(r, "warnings", "an array");
    /* The warnings were logged when the probe ran; reading them back is quiet. */
    batchfit_ctx quiet = *r->ctx;
    quiet.log_fn = NULL;
    for (size_t i = 0; warnings && i < warnings->count && r->code == BATCHFIT_OK; i++) {
        if (warnings->items[i].kind != JT_STRING)
            bad(r, "warnings", "an array of strings");
        else if (batchfit__result_warn(&quiet, r->result, "%s", warnings->items[i].string))
            r->code = batchfit__fail(r->ctx, BATCHFIT_E_NO_MEMORY, "out of memory reading a result");
    }
}

int batchfit_result_from_json(batchfit_ctx *ctx, const char *json, size_t len,
                              batchfit_result **out)
{
    if (!ctx || !out)
        return BATCHFIT_E_INVALID_ARGUMENT;
    *out = NULL;
    if (!json)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "result JSON: no text given");
    char err[BATCHFIT_ERRMSG_MAX] = "";
    jt_value root;
    int rc = batchfit__jt_parse(&ctx->allocator, json, len, &root, err, sizeof err);
    if (rc)
        return batchfit__fail(ctx, rc, "result JSON: %s", err);
    reader r = {.ctx = ctx, .result = batchfit__result_new(ctx)};
    if (!r.result)
        r.code = batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory allocating a result");
    else
        read_result(&r, &root);
    batchfit__jt_free(&ctx->allocator, &root);
    if (r.code != BATCHFIT_OK) {
        batchfit_result_free(r.result);
        return r.code;
    }
    *out = r.result;
    return BATCHFIT_OK;
}
