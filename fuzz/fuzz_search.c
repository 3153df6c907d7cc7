/* The search, from both ends of what an oracle can say: the input picks a
 * memory curve (a line, a power of the batch, one that turns, a workspace
 * jump, a pool's flat run, a staircase, one that saturates, one that falls),
 * its wander, the declared spread, how an out-of-memory trial reads (what it
 * needed, nothing, or where a watchdog stopped it), the lattice, the bounds
 * (up to 2^63), the trial limit, a remembered curve or a first guess, and
 * serial or parallel rounds. Whatever it picks, the search ends within its
 * trial limit with every trial on the lattice inside [min, upper bound], and
 * an answer is a size that ran and was accepted; a noise-free curve under no
 * declared spread is never answered past its budget. The sanitizer builds
 * turn any undefined behaviour on the way into a failure. */
#include "fuzz.h"

#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct input {
    const uint8_t *data;
    size_t size, at;
} input;

static uint64_t take(input *in, unsigned bytes)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < bytes; i++)
        v = v << 8 | (in->at < in->size ? in->data[in->at++] : 0);
    return v;
}

/* A share in [0, 1] from one byte. */
static double share(input *in)
{
    return (double)take(in, 1) / 255.0;
}

typedef struct curve {
    unsigned kind;
    double fixed, scale, power, at, ratio, budget, wander;
    int fresh, reads_need;
    uint64_t seed;
    unsigned calls;
} curve;

enum { LINE, POWER, TURNS, JUMP, POOL, STAIRS, SATURATES, FALLS, KINDS };

static double true_peak(const curve *c, double b)
{
    double g = pow(b, c->power);
    switch (c->kind) {
    case TURNS:
        if (b > c->at)
            g = pow(c->at, c->power) + c->ratio * (g - pow(c->at, c->power));
        break;
    case JUMP:
        if (b >= c->at)
            g += c->ratio * pow(c->at, c->power);
        break;
    case POOL:
        g = b > c->at ? pow(b - c->at, c->power) : 0.0;
        break;
    case STAIRS:
        g = pow(ceil(b / (1.0 + c->at)) * (1.0 + c->at), c->power);
        break;
    case SATURATES:
        g = c->at * (1.0 - exp(-b / c->at));
        break;
    case FALLS:
        if (b > c->at)
            g *= c->ratio;
        break;
    default:
        break;
    }
    return c->fixed + c->scale * g;
}

static int oracle(void *userdata, uint64_t batch, batchfit_trial *t)
{
    curve *c = userdata;
    if (++c->calls > 400)
        abort(); /* the search would not end */
    uint64_t h = (c->seed ^ batch * UINT64_C(0x9E3779B97F4A7C15)) +
                 (c->fresh ? c->calls * UINT64_C(0xBF58476D1CE4E5B9) : 0);
    h ^= h >> 31;
    h *= UINT64_C(0x94D049BB133111EB);
    h ^= h >> 29;
    double u = (double)(h >> 11) * 0x1.0p-53 * 2.0 - 1.0;
    double peak = true_peak(c, (double)batch) * (1.0 + c->wander * u);
    if (!(peak >= 0.0))
        peak = 0.0;
    uint64_t bytes = peak >= 18446744073709549568.0 ? UINT64_MAX : (uint64_t)peak;
    if (peak <= c->budget) {
        t->outcome = BATCHFIT_FITS;
        t->peak_known = 1;
        t->peak_bytes = bytes;
        return 0;
    }
    t->outcome = BATCHFIT_OOM;
    if (c->reads_need == 1) {
        t->peak_known = 1;
        t->peak_bytes = bytes;
    } else if (c->reads_need == 2) {
        t->peak_known = 1;
        t->peak_bytes = (uint64_t)c->budget;
        t->process.ran = 1;
        t->process.watchdog_stopped = 1;
    }
    return 0;
}

static int round_of(void *userdata, const uint64_t *batches, size_t count, batchfit_trial *trials)
{
    for (size_t i = 0; i < count; i++) {
        memset(&trials[i], 0, sizeof trials[i]);
        trials[i].batch = batches[i];
        int rc = oracle(userdata, batches[i], &trials[i]);
        if (rc)
            return rc;
    }
    return 0;
}

static int on_lattice(const batchfit_result *r, uint64_t b)
{
    if (b < r->min_batch || b > r->upper_bound)
        return 0;
    if (r->lattice == BATCHFIT_LATTICE_MULTIPLE && r->lattice_multiple && b % r->lattice_multiple)
        return 0;
    if (r->lattice == BATCHFIT_LATTICE_POW2 && (b & (b - 1)) && b != r->upper_bound)
        return 0;
    return 1;
}

int FUZZ_ENTRY(fuzz_search)(const uint8_t *data, size_t size)
{
    static batchfit_ctx *ctx;
    if (!ctx && batchfit_ctx_create(NULL, &ctx) != BATCHFIT_OK)
        return 0;
    input in = {data, size, 0};
    curve c;
    memset(&c, 0, sizeof c);
    c.kind = (unsigned)(take(&in, 1) % KINDS);
    c.budget = (double)(take(&in, 5) + 1) * 4096.0;
    c.fixed = share(&in) * 0.9 * c.budget;
    double answer = exp(share(&in) * log(100000.0)); /* where the curve would cross */
    c.power = 0.3 + 2.7 * share(&in);
    c.scale = (c.budget - c.fixed) / pow(answer, c.power);
    c.at = 1.0 + share(&in) * 2.0 * answer;
    c.ratio = 4.0 * share(&in);
    c.wander = share(&in) * share(&in) * 0.2;
    c.fresh = (int)(take(&in, 1) & 1);
    c.reads_need = (int)(take(&in, 1) % 3);
    c.seed = take(&in, 4);

    batchfit_options o;
    batchfit_options_init(&o);
    o.strategy = BATCHFIT_STRATEGY_MODEL;
    unsigned lattice = (unsigned)(take(&in, 1) % 4);
    if (lattice == 1)
        o.lattice = BATCHFIT_LATTICE_POW2;
    else if (lattice == 2) {
        o.lattice = BATCHFIT_LATTICE_MULTIPLE;
        o.lattice_multiple = 1 + take(&in, 1) % 64;
    }
    unsigned bound = (unsigned)(take(&in, 1) % 4);
    if (bound == 1)
        o.requested_max = 1 + take(&in, 3);
    else if (bound == 2)
        o.upper_limit = INT64_MAX - take(&in, 1);
    o.min_batch = take(&in, 1) % 4 == 0 ? 1 + take(&in, 1) : 0;
    unsigned trials = (unsigned)(take(&in, 1) % 8);
    if (trials)
        o.max_trials = 1 + trials;
    unsigned hint = (unsigned)(take(&in, 1) % 4);
    if (hint == 1)
        o.first_guess = 1 + take(&in, 3);
    else if (hint >= 2) {
        o.cached_batch = 1 + take(&in, 3);
        if (hint == 3) {
            o.cached_fit.valid = 1;
            o.cached_fit.intercept_bytes = c.fixed * 2.0 * share(&in);
            o.cached_fit.bytes_per_sample = c.scale * 2.0 * share(&in);
            o.cached_fit.max_residual_bytes = 0.05 * c.budget * share(&in);
            o.cached_fit.points = 3;
        }
    }
    static const double spreads[4] = {0.0, 0.01, 0.05, 0.2};
    double spread = spreads[take(&in, 1) % 4];
    unsigned parallel = (unsigned)(take(&in, 1) % 4);
    int host = (int)(take(&in, 1) & 1);

    batchfit_result *r = NULL;
    if (batchfit_decide(ctx, &o, 0, &r) != BATCHFIT_OK) {
        batchfit_result_free(r);
        return 0;
    }
    r->budget.known = 1;
    r->budget.budget_bytes = (uint64_t)c.budget;
    r->budget.peak_spread = spread;
    if (host && batchfit__result_keep(r, &r->device_spec, "host") != BATCHFIT_OK) {
        batchfit_result_free(r);
        return 0;
    }
    int rc = parallel > 1 ? batchfit_search_parallel(ctx, &o, parallel, round_of, &c, r)
                          : batchfit_search(ctx, &o, oracle, &c, r);
    if (r->trial_count > o.max_trials)
        abort();
    for (size_t i = 0; i < r->trial_count; i++)
        if (!on_lattice(r, r->trials[i].batch))
            abort();
    if (rc == BATCHFIT_OK) {
        int ran = 0;
        for (size_t i = 0; i < r->trial_count; i++)
            ran |= r->trials[i].batch == r->batch_size && r->trials[i].accepted;
        if (!ran)
            abort();
        if (c.wander == 0.0 && spread == 0.0 && true_peak(&c, (double)r->batch_size) > c.budget)
            abort();
    } else if (rc != BATCHFIT_E_MIN_DOES_NOT_FIT && rc != BATCHFIT_E_TRIAL_LIMIT) {
        abort();
    }
    batchfit_result_free(r);
    return 0;
}
