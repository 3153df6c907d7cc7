/* The result's one JSON writer (schema_version 1), used by the CLI's
 * --export-json, by programs that embed batchfit and by bindings, so all
 * of them write the same document. */
#include "internal.h"

#include <math.h>
#include <string.h>

typedef struct writer {
    batchfit__buf *out;
    int depth;
    int need_comma[32];
} writer;

size_t batchfit__utf8_length(const unsigned char *p)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F) || (c == 0xF0 && p[1] < 0x90) ||
        (c == 0xF4 && p[1] > 0x8F))
        return 0;
    return n;
}

/* A JSON string. Arguments and output lines are bytes, not always UTF-8:
 * a byte that is not part of well-formed UTF-8 is written as \u00XX (the
 * byte's value as a code point), so the document stays valid JSON. */
static void put_string(batchfit__buf *b, const char *s)
{
    batchfit__buf_append(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        switch (*p) {
        case '"':
            batchfit__buf_append(b, "\\\"", 2);
            p++;
            continue;
        case '\\':
            batchfit__buf_append(b, "\\\\", 2);
            p++;
            continue;
        case '\n':
            batchfit__buf_append(b, "\\n", 2);
            p++;
            continue;
        case '\r':
            batchfit__buf_append(b, "\\r", 2);
            p++;
            continue;
        case '\t':
            batchfit__buf_append(b, "\\t", 2);
            p++;
            continue;
        }
        size_t n = *p < 0x20 ? 0 : batchfit__utf8_length(p);
        if (n == 0) {
            batchfit__buf_printf(b, "\\u%04x", *p);
            p++;
        } else {
            batchfit__buf_append(b, (const char *)p, n);
            p += n;
        }
    }
    batchfit__buf_append(b, "\"", 1);
}

static void indent(writer *w)
{
    batchfit__buf_append(w->out, "\n", 1);
    for (int i = 0; i < w->depth; i++)
        batchfit__buf_append(w->out, "  ", 2);
}

/* Writes the separator and the key (inside objects) before a value. */
static void prefix(writer *w, const char *key)
{
    if (w->need_comma[w->depth])
        batchfit__buf_append(w->out, ",", 1);
    if (w->depth > 0)
        indent(w);
    w->need_comma[w->depth] = 1;
    if (key) {
        put_string(w->out, key);
        batchfit__buf_append(w->out, ": ", 2);
    }
}

static void open_container(writer *w, const char *key, char c)
{
    prefix(w, key);
    batchfit__buf_append(w->out, &c, 1);
    if (w->depth < 31)
        w->depth++;
    w->need_comma[w->depth] = 0;
}

static void close_container(writer *w, char c)
{
    int had = w->need_comma[w->depth];
    if (w->depth > 0)
        w->depth--;
    if (had)
        indent(w);
    batchfit__buf_append(w->out, &c, 1);
    if (w->depth == 0)
        batchfit__buf_append(w->out, "\n", 1);
}

static void object(writer *w, const char *key)
{
    open_container(w, key, '{');
}

static void array(writer *w, const char *key)
{
    open_container(w, key, '[');
}

static void end_object(writer *w)
{
    close_container(w, '}');
}

static void end_array(writer *w)
{
    close_container(w, ']');
}

static void string(writer *w, const char *key, const char *value)
{
    prefix(w, key);
    if (value)
        put_string(w->out, value);
    else
        batchfit__buf_append(w->out, "null", 4);
}

static void null(writer *w, const char *key)
{
    prefix(w, key);
    batchfit__buf_append(w->out, "null", 4);
}

static void u64(writer *w, const char *key, uint64_t value)
{
    prefix(w, key);
    batchfit__buf_printf(w->out, "%llu", (unsigned long long)value);
}

/* A count or size that is unknown when zero. */
static void u64_or_null(writer *w, const char *key, int known, uint64_t value)
{
    if (known)
        u64(w, key, value);
    else
        null(w, key);
}

static void i64(writer *w, const char *key, long long value)
{
    prefix(w, key);
    batchfit__buf_printf(w->out, "%lld", value);
}

static void number(writer *w, const char *key, double value)
{
    prefix(w, key);
    if (isfinite(value))
        batchfit__buf_printf(w->out, "%.17g", value);
    else
        batchfit__buf_append(w->out, "null", 4);
}

static void boolean(writer *w, const char *key, int value)
{
    prefix(w, key);
    batchfit__buf_append(w->out, value ? "true" : "false", value ? 4 : 5);
}

static const char *lattice_name(batchfit_lattice_kind k)
{
    return k == BATCHFIT_LATTICE_POW2       ? "power_of_two"
           : k == BATCHFIT_LATTICE_MULTIPLE ? "multiple_of"
                                            : "every_integer";
}

/* A trial on a device of several GPUs: each GPU's peak beside its budget. */
static void write_trial_gpus(writer *w, const batchfit_result *r, size_t trial)
{
    array(w, "gpus");
    for (size_t g = 0; g < r->gpu_count; g++) {
        const batchfit_gpu_peak *p = &r->gpu_peaks[trial * r->gpu_count + g];
        object(w, NULL);
        string(w, "spec", r->gpus[g].spec);
        u64_or_null(w, "peak_bytes", p->peak_known, p->peak_bytes);
        u64(w, "budget_bytes", r->gpus[g].budget_bytes);
        end_object(w);
    }
    end_array(w);
}

static void write_trial(writer *w, const batchfit_result *r, size_t index)
{
    const batchfit_trial *t = &r->trials[index];
    const batchfit_trial_process *d = t->process.ran ? &t->process : NULL;
    object(w, NULL);
    u64(w, "batch", t->batch);
    string(w, "outcome", batchfit_outcome_name(t->outcome));
    boolean(w, "accepted", t->accepted);
    boolean(w, "over_budget", t->over_budget);
    u64_or_null(w, "exit_code", d && d->exited, d ? (uint64_t)d->exit_code : 0);
    u64_or_null(w, "signal", d && d->signal, d ? (uint64_t)d->signal : 0);
    if (t->peak_known)
        u64(w, t->outcome == BATCHFIT_OOM ? "needed_bytes_at_least" : "peak_bytes",
            t->peak_bytes);
    else
        null(w, "peak_bytes");
    if (d) {
        string(w, "peak_source", d->peak_source);
        u64(w, "sampled_peak_bytes", d->sampled_peak_bytes);
        u64(w, "host_peak_bytes", d->host_peak_bytes);
        u64_or_null(w, "device_peak_bytes", d->device_peak_known, d->device_peak_bytes);
        u64_or_null(w, "device_free_drop_bytes", d->device_free_drop_known,
                    d->device_free_drop_bytes);
        string(w, "oom_signature", d->oom_signature[0] ? d->oom_signature : NULL);
        u64_or_null(w, "watchdog_overshoot_bytes", d->watchdog_stopped,
                    d->watchdog_overshoot_bytes);
        u64(w, "left_running", d->left_running);
        string(w, "left_running_name", d->left_running_name[0] ? d->left_running_name : NULL);
    }
    if (r->gpu_count && r->gpu_peaks)
        write_trial_gpus(w, r, index);
    if (r->trial_ranks) {
        /* Trials across ranks: which rank ran it, and on what (once the
         * ranks agreed, their outcomes name each rank's device). */
        int rank = r->trial_ranks[index];
        i64(w, "rank", rank);
        if (rank >= 0 && (size_t)rank < r->rank_count && r->rank_outcomes[rank].device_spec[0])
            string(w, "device", r->rank_outcomes[rank].device_spec);
    }
    number(w, "seconds", t->seconds);
    string(w, "reason", t->message[0] ? t->message : NULL);
    end_object(w);
}

/* The ranks of a job: the verdict every rank reached, and each outcome. */
static void write_agreement(writer *w, const batchfit_result *r)
{
    object(w, "agreement");
    string(w, "mode", r->agree_mode == BATCHFIT_AGREE_MIN ? "min" : "per_rank");
    u64_or_null(w, "batch_size", r->agreed_status == BATCHFIT_OK, r->agreed_batch_size);
    i64(w, "exit_code", batchfit_exit_status(r->agreed_status));
    string(w, "error", r->agreed_error);
    array(w, "ranks");
    for (size_t i = 0; i < r->rank_count; i++) {
        const batchfit_rank_outcome *o = &r->rank_outcomes[i];
        object(w, NULL);
        i64(w, "rank", o->rank);
        string(w, "device", o->device_spec[0] ? o->device_spec : NULL);
        string(w, "name", o->device_spec[0] ? o->device_name : NULL);
        u64_or_null(w, "batch_size", o->status == BATCHFIT_OK, o->batch_size);
        u64(w, "trials", o->trials);
        u64(w, "oom_trials", o->oom_trials);
        i64(w, "exit_code", batchfit_exit_status(o->status));
        string(w, "error", o->status == BATCHFIT_OK ? NULL : o->error);
        end_object(w);
    }
    end_array(w);
    end_object(w);
}

/* A device of several GPUs: each one and the budget it was held to. */
static void write_gpus(writer *w, const batchfit_result *r)
{
    array(w, "gpus");
    for (size_t g = 0; g < r->gpu_count; g++) {
        const batchfit_gpu_budget *b = &r->gpus[g];
        object(w, NULL);
        string(w, "spec", b->spec);
        string(w, "name", b->name);
        string(w, "uuid", b->uuid[0] ? b->uuid : NULL);
        u64(w, "total_bytes", b->total_bytes);
        u64(w, "free_bytes", b->free_bytes);
        u64(w, "usable_bytes", b->usable_bytes);
        u64(w, "margin_bytes", b->margin_bytes);
        u64(w, "budget_bytes", b->budget_bytes);
        u64(w, "held_bytes", b->held_bytes);
        end_object(w);
    }
    end_array(w);
}

int batchfit__result_write_json(const batchfit_result *r, batchfit__buf *out)
{
    writer w;
    memset(&w, 0, sizeof w);
    w.out = out;
    const batchfit_budget *b = &r->budget;
    object(&w, NULL);
    u64(&w, "schema_version", 1);
    string(&w, "batchfit_version", BATCHFIT_VERSION_STRING);
    array(&w, "command");
    for (size_t i = 0; i < r->command_argc; i++)
        string(&w, NULL, r->command[i]);
    end_array(&w);

    object(&w, "device");
    string(&w, "spec", r->device_spec);
    string(&w, "kind", r->device_spec ? r->device.kind : NULL);
    if (r->device_spec) {
        string(&w, "name", r->device.name);
        string(&w, "uuid", r->device.uuid[0] ? r->device.uuid : NULL);
        string(&w, "pci_bus_id", r->device.pci_bus_id[0] ? r->device.pci_bus_id : NULL);
    }
    u64_or_null(&w, "total_bytes", b->known, b->total_bytes);
    u64_or_null(&w, "free_bytes", b->known, b->free_bytes);
    end_object(&w);

    object(&w, "budget");
    u64_or_null(&w, "usable_bytes", b->known, b->usable_bytes);
    u64_or_null(&w, "margin_bytes", b->known, b->margin_bytes);
    u64_or_null(&w, "budget_bytes", b->known, b->budget_bytes);
    u64_or_null(&w, "held_bytes", b->known, b->held_bytes);
    if (b->known)
        number(&w, "peak_spread", b->peak_spread);
    else
        null(&w, "peak_spread");
    u64_or_null(&w, "memory_budget_bytes", r->memory_budget_bytes != 0, r->memory_budget_bytes);
    string(&w, "memory_note", r->memory_note);
    if (r->gpu_count)
        string(&w, "gpu", r->gpus[r->budget_gpu].spec);
    end_object(&w);
    if (r->gpu_count)
        write_gpus(&w, r);

    object(&w, "vram_limit");
    u64_or_null(&w, "bytes", b->vram_limit_bytes != 0, b->vram_limit_bytes);
    string(&w, "source", r->vram_limit_source ? r->vram_limit_source : "none");
    end_object(&w);

    object(&w, "lattice");
    string(&w, "kind", lattice_name(r->lattice));
    u64(&w, "multiple", r->lattice == BATCHFIT_LATTICE_MULTIPLE ? r->lattice_multiple : 1);
    u64_or_null(&w, "min", r->min_batch != 0, r->min_batch);
    u64_or_null(&w, "max", r->min_batch != 0, r->upper_bound);
    u64_or_null(&w, "requested_max", r->requested_max != 0, r->requested_max);
    end_object(&w);

    string(&w, "strategy", batchfit_strategy_name(r->strategy));
    object(&w, "cache");
    string(&w, "key", r->cache_key);
    boolean(&w, "hit", r->cache_hit);
    u64_or_null(&w, "remembered_batch_size", r->cache_hit, r->cache_remembered);
    end_object(&w);
    string(&w, "mechanisms", r->mechanisms ? r->mechanisms : "in-process trials on the device");
    number(&w, "sample_interval_ms", r->sample_interval * 1000.0);

    array(&w, "trials");
    for (size_t i = 0; i < r->trial_count; i++)
        write_trial(&w, r, i);
    end_array(&w);

    if (r->fit.valid) {
        object(&w, "fit");
        number(&w, "intercept_bytes", r->fit.intercept_bytes);
        number(&w, "bytes_per_sample", r->fit.bytes_per_sample);
        number(&w, "max_residual_bytes", r->fit.max_residual_bytes);
        u64(&w, "points", r->fit.points);
        boolean(&w, "remembered", r->fit_remembered);
        end_object(&w);
    } else {
        null(&w, "fit");
    }

    object(&w, "result");
    u64_or_null(&w, "batch_size", r->batch_size != 0, r->batch_size);
    u64(&w, "trials", r->trial_count);
    u64(&w, "oom_trials", r->oom_trials);
    u64(&w, "rounds", r->rounds);
    u64_or_null(&w, "smallest_failure", r->smallest_failure != 0, r->smallest_failure);
    string(&w, "stop_reason", r->stop_reason);
    u64_or_null(&w, "estimate", r->first_guess != 0, r->first_guess);
    boolean(&w, "complete", r->complete);
    if (!r->complete)
        null(&w, "exit_code");
    else if (r->interrupted)
        i64(&w, "exit_code", 128 + r->interrupt_signal);
    else
        i64(&w, "exit_code", batchfit_exit_status(r->agreed ? r->agreed_status : r->status));
    string(&w, "error", r->error);
    boolean(&w, "interrupted", r->interrupted);
    u64_or_null(&w, "signal", r->interrupted, (uint64_t)r->interrupt_signal);
    end_object(&w);

    if (r->agreed)
        write_agreement(&w, r);
    array(&w, "warnings");
    for (size_t i = 0; i < r->warning_count; i++)
        string(&w, NULL, r->warnings[i]);
    end_array(&w);
    end_object(&w);
    return batchfit__buf_text(out) ? BATCHFIT_OK : BATCHFIT_E_NO_MEMORY;
}
