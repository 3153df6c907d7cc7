/* The analytic estimate: model state from the parameter count, precision
 * and optimizer (the ZeRO paper's accounting), activations per sample given
 * or computed for a transformer (Korthikanti et al. 2022), and the largest
 * batch that would fit a device. A first guess, never an answer: the probe
 * still measures. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

void batchfit_estimate_input_init(batchfit_estimate_input *in)
{
    if (!in)
        return;
    *in = (batchfit_estimate_input){0};
    in->struct_size = sizeof *in;
    in->precision = BATCHFIT_PRECISION_MIXED16;
    in->optimizer = BATCHFIT_OPTIMIZER_ADAMW;
    in->margin_fraction = BATCHFIT_DEFAULT_MARGIN_FRACTION;
}

/* Bytes per parameter: weights, gradients, fp32 master weights, optimizer
 * states. Mixed-precision Adam: 2 + 2 + 4 + 4 + 4 = 16 (ZeRO). */
static double bytes_per_param(batchfit_precision p, batchfit_optimizer o)
{
    double states = o == BATCHFIT_OPTIMIZER_ADAM || o == BATCHFIT_OPTIMIZER_ADAMW ? 8.0
                    : o == BATCHFIT_OPTIMIZER_MOMENTUM                           ? 4.0
                                                                                 : 0.0;
    switch (p) {
    case BATCHFIT_PRECISION_FP32:
        return 4.0 + 4.0 + states;
    case BATCHFIT_PRECISION_MIXED16:
        return 2.0 + 2.0 + 4.0 + states;
    case BATCHFIT_PRECISION_INT8:
        return 1.0;
    }
    return 0.0;
}

int batchfit_estimate_memory(batchfit_ctx *ctx, const batchfit_estimate_input *in,
                             batchfit_estimate *out)
{
    if (!ctx || !in || !out || in->struct_size < sizeof *in)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "estimate: input not initialised with batchfit_estimate_input_init()");
    *out = (batchfit_estimate){0};
    if (in->params == 0)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "estimate: --params is required");
    if ((unsigned)in->precision > BATCHFIT_PRECISION_INT8 ||
        (unsigned)in->optimizer > BATCHFIT_OPTIMIZER_ADAFACTOR)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "estimate: unknown precision or optimizer");
    if (!(in->margin_fraction >= 0.0 && in->margin_fraction < 1.0))
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "estimate: margin %g is outside [0, 1)", in->margin_fraction);
    double act = (double)in->activation_bytes_per_sample;
    if (act == 0.0) {
        if (!in->layers || !in->hidden || !in->heads || !in->seq)
            return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                                  "estimate: give --activation-bytes, or --layers, --hidden, "
                                  "--heads and --seq for a transformer");
        double s = in->seq, h = in->hidden, a = in->heads, L = in->layers;
        double layer = s * h * (34.0 + 5.0 * a * s / h);
        act = in->checkpointing ? L * 2.0 * s * h + layer : L * layer;
        if (in->precision == BATCHFIT_PRECISION_FP32)
            act *= 2.0;
        act += 4.0 * s * (double)in->vocab;
    }
    out->bytes_per_param = bytes_per_param(in->precision, in->optimizer);
    /* Byte counts are 64-bit: a figure past 2^63 would wrap or be clamped,
     * and a clamped number is a wrong answer, so it is an error. */
    const double limit = 9223372036854775808.0;
    double state = out->bytes_per_param * (double)in->params;
    double peak_at_one = state + act;
    if (!(state < limit) || !(act < limit) || !(peak_at_one < limit)) {
        *out = (batchfit_estimate){0};
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT,
                              "estimate: %s is beyond 2^63 bytes (model state %.3g bytes, "
                              "activations %.3g bytes per sample); check --params and the shape",
                              !(state < limit) ? "the model state" : "the memory of one sample",
                              state, act);
    }
    out->model_state_bytes = (uint64_t)llround(state);
    out->activation_bytes_per_sample = (uint64_t)llround(act);
    if (in->device_bytes) {
        out->budget_bytes = in->device_bytes - (uint64_t)((double)in->device_bytes * in->margin_fraction);
        if (out->budget_bytes > out->model_state_bytes && act > 0.0)
            out->max_batch = (uint64_t)floor((double)(out->budget_bytes - out->model_state_bytes) / act);
    }
    uint64_t at = out->max_batch ? out->max_batch : 1;
    out->predicted_peak_bytes = out->model_state_bytes + (uint64_t)llround(act * (double)at);
    return BATCHFIT_OK;
}

int batchfit__parse_params(const char *text, const char *what, uint64_t *out, char *err,
                          size_t err_len)
{
    const char *name = what ? what : "--params";
    double value;
    const char *end;
    if (!text || batchfit__parse_decimal(text, &value, &end) != 0) {
        batchfit__errf(err, err_len,
                       "%s: invalid value \"%s\": expected a count such as 124M, 7.5B or 350000",
                       name, text ? text : "");
        return BATCHFIT_E_PARSE;
    }
    double scale = 1.0;
    if (*end == 'K' || *end == 'k')
        scale = 1e3;
    else if (*end == 'M')
        scale = 1e6;
    else if (*end == 'B' || *end == 'G')
        scale = 1e9;
    else if (*end == 'T')
        scale = 1e12;
    if (scale != 1.0)
        end++;
    if (*end != '\0' || value * scale < 1.0 || value * scale > 1e16) {
        batchfit__errf(err, err_len,
                       "%s: invalid value \"%s\": expected a count such as 124M, 7.5B or 350000",
                       name, text);
        return BATCHFIT_E_PARSE;
    }
    /* A part of a parameter, or a model of a few hundred parameters, is
     * a unit left out: 1.5 read as 2 and 7 as 7 parameters. */
    double count = value * scale;
    double whole = floor(count + 0.5); /* 1.1M is 1100000.0000000002 in binary */
    if (fabs(count - whole) > 1e-6 + 1e-12 * whole) {
        batchfit__errf(err, err_len,
                       "%s: \"%s\" is not a whole number of parameters; give a unit (%sM, %sB)",
                       name, text, text, text);
        return BATCHFIT_E_PARSE;
    }
    if (scale == 1.0 && whole < 1000.0) {
        batchfit__errf(err, err_len,
                       "%s: \"%s\" has no unit and would be %s parameters; give a unit (%sM, "
                       "%sB)",
                       name, text, text, text, text);
        return BATCHFIT_E_PARSE;
    }
    *out = (uint64_t)whole;
    return BATCHFIT_OK;
}

static int parse_name(const char *text, const char *const *names, size_t count, int *out)
{
    for (size_t i = 0; text && i < count; i++)
        if (strcasecmp(text, names[i]) == 0) {
            *out = (int)i;
            return 0;
        }
    return -1;
}

int batchfit__parse_precision(const char *text, const char *what, batchfit_precision *out,
                             char *err, size_t err_len)
{
    static const char *const names[] = {"fp32", "mixed16", "int8"};
    int v;
    if (parse_name(text, names, 3, &v) != 0) {
        batchfit__errf(err, err_len, "%s: unknown precision \"%s\" (fp32, mixed16 or int8)",
                       what ? what : "--precision", text ? text : "");
        return BATCHFIT_E_PARSE;
    }
    *out = (batchfit_precision)v;
    return BATCHFIT_OK;
}

int batchfit__parse_optimizer(const char *text, const char *what, batchfit_optimizer *out,
                             char *err, size_t err_len)
{
    static const char *const names[] = {"sgd", "momentum", "adam", "adamw", "adafactor"};
    int v;
    if (parse_name(text, names, 5, &v) != 0) {
        batchfit__errf(err, err_len,
                       "%s: unknown optimizer \"%s\" (sgd, momentum, adam, adamw or adafactor)",
                       what ? what : "--optimizer", text ? text : "");
        return BATCHFIT_E_PARSE;
    }
    *out = (batchfit_optimizer)v;
    return BATCHFIT_OK;
}

int batchfit_parse_params(batchfit_ctx *ctx, const char *text, const char *what, uint64_t *out)
{
    char err[BATCHFIT_ERRMSG_MAX] = "";
    return batchfit__fail_with(ctx, batchfit__parse_params(text, what, out, err, sizeof err), err);
}

int batchfit_parse_precision(batchfit_ctx *ctx, const char *text, const char *what,
                             batchfit_precision *out)
{
    char err[BATCHFIT_ERRMSG_MAX] = "";
    return batchfit__fail_with(ctx, batchfit__parse_precision(text, what, out, err, sizeof err),
                               err);
}

int batchfit_parse_optimizer(batchfit_ctx *ctx, const char *text, const char *what,
                             batchfit_optimizer *out)
{
    char err[BATCHFIT_ERRMSG_MAX] = "";
    return batchfit__fail_with(ctx, batchfit__parse_optimizer(text, what, out, err, sizeof err),
                               err);
}
