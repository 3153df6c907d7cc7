/* A small real trainer: a convolutional network (3x64x64 input, 3x3
 * convolution to 8 channels, ReLU, 2x2 average pooling, a linear layer to
 * 10 classes, softmax cross-entropy) trained with SGD on generated data
 * whose labels come from a fixed "teacher" rule, so the loss really falls.
 *
 * Activations and gradients are allocated for the batch size, as a
 * framework would; an allocation that fails is reported as
 * "trainer: out of memory ..." with exit status 1.
 *
 * Usage: trainer --batch-size N [--steps S] [--channels C] [--seed K] [--lr X]
 *                [--global-batch G] [--recover] [--memory-limit MIB]
 *                [--shrink-at STEP:MIB] [--grow-after N]
 * (--channels sets the convolution's width, 8 by default: memory and work
 * per sample grow with it.)
 *
 * With --global-batch G each optimizer step sees G samples, in micro-batches
 * of --batch-size with gradient accumulation. --memory-limit caps what the
 * micro-batch's buffers may take, and --shrink-at lowers that cap from an
 * optimizer step on, as another process taking memory would; a step that
 * does not fit runs out of memory. With --recover, libbatchfit's recovery
 * shrinks the micro-batch and raises the accumulation so the effective
 * batch stays G, and the step is retried: no sample is lost or repeated.
 *
 * The batch size may also come from BATCHFIT_BATCH_SIZE. */
#include <batchfit.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IN_C 3
#define IN_H 64
#define IN_W 64
#define POOL_H (IN_H / 2)
#define POOL_W (IN_W / 2)
#define CLASSES 10

static int conv_c = 8; /* CONV_C: the convolution's output channels */
#define CONV_C conv_c
#define FEATURES (conv_c * POOL_H * POOL_W)

static void *checked_alloc(size_t count, size_t size, const char *what)
{
    if (size && count > SIZE_MAX / size) {
        fprintf(stderr, "trainer: out of memory: %s needs more than SIZE_MAX bytes\n", what);
        exit(1);
    }
    void *p = malloc(count * size);
    if (!p) {
        fprintf(stderr, "trainer: out of memory allocating %zu bytes for %s\n", count * size,
                what);
        exit(1);
    }
    return p;
}

static uint64_t rng_state;

static double uniform(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * 0x1.0p-53;
}

/* Parameters and their gradients, laid out flat. */
typedef struct model {
    float *conv_w; /* [CONV_C][IN_C][3][3] */
    float *conv_b; /* [CONV_C] */
    float *fc_w;   /* [CLASSES][FEATURES] */
    float fc_b[CLASSES];
} model;

#define CONV_W(w, o, c, i, j) (w)[(((size_t)(o) * IN_C + (c)) * 3 + (i)) * 3 + (j)]
#define FC_W(w, k, f) (w)[(size_t)(k) * FEATURES + (f)]

typedef struct buffers {
    float *input;   /* B x 3 x 32 x 32 */
    int *labels;    /* B */
    float *conv;    /* B x 8 x 32 x 32, after ReLU */
    float *pooled;  /* B x 2048 */
    float *logits;  /* B x 10 */
    float *dpooled; /* B x 2048 */
    float *dconv;   /* B x 8 x 32 x 32 */
} buffers;

/* The teacher: a fixed linear rule on the mean colour of four quadrants. */
static int teacher_label(const float *img)
{
    double score[CLASSES] = {0};
    for (int c = 0; c < IN_C; c++)
        for (int y = 0; y < IN_H; y++)
            for (int x = 0; x < IN_W; x++) {
                int q = (y >= IN_H / 2) * 2 + (x >= IN_W / 2);
                double v = img[(c * IN_H + y) * IN_W + x];
                for (int k = 0; k < CLASSES; k++)
                    score[k] += v * (((k + c + 3 * q) % 5) - 2.0);
            }
    int best = 0;
    for (int k = 1; k < CLASSES; k++)
        if (score[k] > score[best])
            best = k;
    return best;
}

static uint64_t data_seed;

/* Sample number index of the data stream, the same however it is batched. */
static void make_batch(buffers *b, size_t batch, uint64_t first_index)
{
    size_t per = (size_t)IN_C * IN_H * IN_W;
    for (size_t i = 0; i < batch; i++) {
        rng_state = (data_seed ^ ((first_index + i) * 0x9E3779B97F4A7C15ull)) | 1;
        for (int warm = 0; warm < 4; warm++)
            uniform();
        float *img = b->input + i * per;
        for (size_t k = 0; k < per; k++)
            img[k] = (float)(uniform() * 2.0 - 1.0);
        b->labels[i] = teacher_label(img);
    }
}

static void zero_grads(model *grad)
{
    memset(grad->conv_w, 0, sizeof(float) * CONV_C * IN_C * 9);
    memset(grad->conv_b, 0, sizeof(float) * CONV_C);
    memset(grad->fc_w, 0, sizeof(float) * CLASSES * FEATURES);
    memset(grad->fc_b, 0, sizeof(float) * CLASSES);
}

/* Forward and backward over a micro-batch, adding its share (1/global) of
 * the step's mean gradient; returns the summed loss. */
static double accumulate(const model *m, model *grad, buffers *b, size_t batch, size_t global)
{
    float *dconv_w = grad->conv_w, *dconv_b = grad->conv_b, *dfc_w = grad->fc_w;
    float *dfc_b = grad->fc_b;
    double loss = 0.0;
    for (size_t n = 0; n < batch; n++) {
        const float *in = b->input + n * IN_C * IN_H * IN_W;
        float *conv = b->conv + n * CONV_C * IN_H * IN_W;
        float *pooled = b->pooled + n * FEATURES;
        float *logits = b->logits + n * CLASSES;
        /* Convolution (padding 1) and ReLU. */
        for (int o = 0; o < CONV_C; o++)
            for (int y = 0; y < IN_H; y++)
                for (int x = 0; x < IN_W; x++) {
                    float acc = m->conv_b[o];
                    for (int c = 0; c < IN_C; c++)
                        for (int dy = -1; dy <= 1; dy++)
                            for (int dx = -1; dx <= 1; dx++) {
                                int yy = y + dy, xx = x + dx;
                                if (yy < 0 || yy >= IN_H || xx < 0 || xx >= IN_W)
                                    continue;
                                acc += CONV_W(m->conv_w, o, c, dy + 1, dx + 1) *
                                       in[(c * IN_H + yy) * IN_W + xx];
                            }
                    conv[(o * IN_H + y) * IN_W + x] = acc > 0.0f ? acc : 0.0f;
                }
        /* 2x2 average pooling. */
        for (int o = 0; o < CONV_C; o++)
            for (int y = 0; y < POOL_H; y++)
                for (int x = 0; x < POOL_W; x++) {
                    const float *c0 = conv + (o * IN_H + 2 * y) * IN_W + 2 * x;
                    pooled[(o * POOL_H + y) * POOL_W + x] =
                        0.25f * (c0[0] + c0[1] + c0[IN_W] + c0[IN_W + 1]);
                }
        /* Linear layer and softmax cross-entropy. */
        float max = -1e30f;
        for (int k = 0; k < CLASSES; k++) {
            float acc = m->fc_b[k];
            for (int f = 0; f < FEATURES; f++)
                acc += FC_W(m->fc_w, k, f) * pooled[f];
            logits[k] = acc;
            if (acc > max)
                max = acc;
        }
        double sum = 0.0;
        for (int k = 0; k < CLASSES; k++)
            sum += exp((double)(logits[k] - max));
        loss += -((double)(logits[b->labels[n]] - max) - log(sum));
        float *dpooled = b->dpooled + n * FEATURES;
        memset(dpooled, 0, FEATURES * sizeof *dpooled);
        for (int k = 0; k < CLASSES; k++) {
            float g = (float)(exp((double)(logits[k] - max)) / sum) - (k == b->labels[n]);
            g /= (float)global;
            dfc_b[k] += g;
            for (int f = 0; f < FEATURES; f++) {
                FC_W(dfc_w, k, f) += g * pooled[f];
                dpooled[f] += g * FC_W(m->fc_w, k, f);
            }
        }
        /* Back through pooling and ReLU into the convolution's weights. */
        float *dconv = b->dconv + n * CONV_C * IN_H * IN_W;
        for (int o = 0; o < CONV_C; o++)
            for (int y = 0; y < IN_H; y++)
                for (int x = 0; x < IN_W; x++) {
                    int idx = (o * IN_H + y) * IN_W + x;
                    float g = 0.25f * dpooled[(o * POOL_H + y / 2) * POOL_W + x / 2];
                    dconv[idx] = conv[idx] > 0.0f ? g : 0.0f;
                }
        for (int o = 0; o < CONV_C; o++)
            for (int y = 0; y < IN_H; y++)
                for (int x = 0; x < IN_W; x++) {
                    float g = dconv[(o * IN_H + y) * IN_W + x];
                    if (g == 0.0f)
                        continue;
                    dconv_b[o] += g;
                    for (int c = 0; c < IN_C; c++)
                        for (int dy = -1; dy <= 1; dy++)
                            for (int dx = -1; dx <= 1; dx++) {
                                int yy = y + dy, xx = x + dx;
                                if (yy < 0 || yy >= IN_H || xx < 0 || xx >= IN_W)
                                    continue;
                                CONV_W(dconv_w, o, c, dy + 1, dx + 1) +=
                                    g * in[(c * IN_H + yy) * IN_W + xx];
                            }
                }
    }
    return loss;
}

/* SGD. */
static void update(model *m, const model *grad, float lr)
{
    const float *dconv_w = grad->conv_w, *dconv_b = grad->conv_b, *dfc_w = grad->fc_w;
    const float *dfc_b = grad->fc_b;
    for (int o = 0; o < CONV_C; o++) {
        m->conv_b[o] -= lr * dconv_b[o];
        for (int c = 0; c < IN_C; c++)
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    CONV_W(m->conv_w, o, c, i, j) -= lr * CONV_W(dconv_w, o, c, i, j);
    }
    for (int k = 0; k < CLASSES; k++) {
        m->fc_b[k] -= lr * dfc_b[k];
        for (int f = 0; f < FEATURES; f++)
            FC_W(m->fc_w, k, f) -= lr * FC_W(dfc_w, k, f);
    }
}

static int parse_positive(const char *text, const char *what, long *out)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (end == text || *end || v <= 0) {
        fprintf(stderr, "trainer: %s: invalid value \"%s\": expected a positive integer\n", what,
                text);
        return -1;
    }
    *out = v;
    return 0;
}

/* The buffers of a micro-batch, and what they take. */
static size_t sample_bytes(void)
{
    return sizeof(float) * (IN_C * IN_H * IN_W + 2 * (size_t)CONV_C * IN_H * IN_W +
                            2 * (size_t)FEATURES + CLASSES) +
           sizeof(int);
}

static void alloc_buffers(buffers *b, size_t n)
{
    b->input = checked_alloc(n, sizeof(float) * IN_C * IN_H * IN_W, "the input batch");
    b->labels = checked_alloc(n, sizeof(int), "the labels");
    b->conv = checked_alloc(n, sizeof(float) * CONV_C * IN_H * IN_W, "the convolution activations");
    b->pooled = checked_alloc(n, sizeof(float) * FEATURES, "the pooled activations");
    b->logits = checked_alloc(n, sizeof(float) * CLASSES, "the logits");
    b->dpooled = checked_alloc(n, sizeof(float) * FEATURES, "the pooled gradients");
    b->dconv = checked_alloc(n, sizeof(float) * CONV_C * IN_H * IN_W, "the convolution gradients");
}

static void free_buffers(buffers *b)
{
    free(b->input);
    free(b->labels);
    free(b->conv);
    free(b->pooled);
    free(b->logits);
    free(b->dpooled);
    free(b->dconv);
    memset(b, 0, sizeof *b);
}

typedef struct trainer {
    buffers b;
    size_t micro;
} trainer;

/* The data pipeline, rebuilt for a new micro-batch when recovery asks. */
static int resize(const batchfit_recover_plan *plan, void *userdata)
{
    trainer *t = userdata;
    free_buffers(&t->b);
    t->micro = (size_t)plan->micro_batch;
    alloc_buffers(&t->b, t->micro);
    printf("recover: micro-batch %llu x %u (last %llu), effective batch %llu\n",
           (unsigned long long)plan->micro_batch, plan->accumulation,
           (unsigned long long)plan->last_micro_batch, (unsigned long long)plan->effective_batch);
    return 0;
}

static void print_log(batchfit_log_level level, const char *message, void *userdata)
{
    (void)level;
    (void)userdata;
    fprintf(stderr, "%s\n", message);
}

int main(int argc, char **argv)
{
    long batch = 0, steps = 3, seed = 1, global = 0, grow_after = 0;
    long memory_limit_mib = 0, shrink_step = -1, shrink_mib = 0;
    int recover = 0;
    double lr = 0.0; /* 0: 0.2 / channels, since the gradient grows with the width */
    const char *env = getenv("BATCHFIT_BATCH_SIZE");
    if (env && parse_positive(env, "BATCHFIT_BATCH_SIZE", &batch) != 0)
        return 2;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--batch-size") == 0) {
            if (parse_positive(argv[++i], "--batch-size", &batch) != 0)
                return 2;
        } else if (i + 1 < argc && strcmp(argv[i], "--steps") == 0) {
            if (parse_positive(argv[++i], "--steps", &steps) != 0)
                return 2;
        } else if (i + 1 < argc && strcmp(argv[i], "--channels") == 0) {
            long c;
            if (parse_positive(argv[++i], "--channels", &c) != 0 || c > 1024)
                return 2;
            conv_c = (int)c;
        } else if (i + 1 < argc && strcmp(argv[i], "--seed") == 0) {
            if (parse_positive(argv[++i], "--seed", &seed) != 0)
                return 2;
        } else if (i + 1 < argc && strcmp(argv[i], "--lr") == 0) {
            lr = strtod(argv[++i], NULL);
        } else if (i + 1 < argc && strcmp(argv[i], "--global-batch") == 0) {
            if (parse_positive(argv[++i], "--global-batch", &global) != 0)
                return 2;
        } else if (i + 1 < argc && strcmp(argv[i], "--memory-limit") == 0) {
            if (parse_positive(argv[++i], "--memory-limit", &memory_limit_mib) != 0)
                return 2;
        } else if (i + 1 < argc && strcmp(argv[i], "--grow-after") == 0) {
            if (parse_positive(argv[++i], "--grow-after", &grow_after) != 0)
                return 2;
        } else if (i + 1 < argc && strcmp(argv[i], "--shrink-at") == 0) {
            if (sscanf(argv[++i], "%ld:%ld", &shrink_step, &shrink_mib) != 2 || shrink_step < 1 ||
                shrink_mib < 1) {
                fprintf(stderr, "trainer: --shrink-at: invalid value \"%s\": expected STEP:MIB\n",
                        argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--recover") == 0) {
            recover = 1;
        } else {
            fprintf(stderr, "usage: trainer --batch-size N [--steps S] [--channels C] [--seed K] "
                            "[--lr X] [--global-batch G] [--recover] [--memory-limit MIB] "
                            "[--shrink-at STEP:MIB] [--grow-after N]\n");
            return 2;
        }
    }
    if (batch <= 0) {
        fprintf(stderr, "trainer: no batch size (--batch-size N or BATCHFIT_BATCH_SIZE)\n");
        return 2;
    }
    if (global <= 0)
        global = batch;
    if (lr <= 0.0)
        lr = 0.2 / conv_c;
    rng_state = 0x9E3779B97F4A7C15ull ^ (uint64_t)seed;
    data_seed = rng_state;
    model params, grads;
    model *m = &params;
    model *models[2] = {&params, &grads};
    for (int k = 0; k < 2; k++) {
        models[k]->conv_w = checked_alloc((size_t)CONV_C * IN_C * 9, sizeof(float), "the model");
        models[k]->conv_b = checked_alloc((size_t)CONV_C, sizeof(float), "the model");
        models[k]->fc_w = checked_alloc((size_t)CLASSES * FEATURES, sizeof(float), "the model");
    }
    for (int o = 0; o < CONV_C; o++) {
        m->conv_b[o] = 0.0f;
        for (int c = 0; c < IN_C; c++)
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    CONV_W(m->conv_w, o, c, i, j) = (float)((uniform() - 0.5) * 0.5);
    }
    for (int k = 0; k < CLASSES; k++) {
        m->fc_b[k] = 0.0f;
        for (int f = 0; f < FEATURES; f++)
            FC_W(m->fc_w, k, f) = (float)((uniform() - 0.5) * 0.05);
    }
    batchfit_ctx *ctx = NULL;
    batchfit_recover *rec = NULL;
    trainer t = {{0}, (size_t)batch};
    batchfit_recover_plan plan = {(uint64_t)batch, (unsigned)((global + batch - 1) / batch),
                                  (uint64_t)(global - batch * ((global + batch - 1) / batch - 1)),
                                  (uint64_t)global};
    if (recover) {
        batchfit_recover_options ro;
        batchfit_recover_options_init(&ro);
        ro.global_batch = (uint64_t)global;
        ro.micro_batch = (uint64_t)batch;
        ro.grow_after = (unsigned)grow_after;
        /* This trainer knows its memory curve exactly: no fixed part in
         * what the limit counts, sample_bytes() a sample. */
        ro.fit.valid = 1;
        ro.fit.bytes_per_sample = (double)sample_bytes();
        ro.resize = resize;
        ro.userdata = &t;
        if (batchfit_ctx_create(NULL, &ctx) != BATCHFIT_OK ||
            batchfit_recover_create(ctx, &ro, &rec) != BATCHFIT_OK) {
            fprintf(stderr, "trainer: cannot set up recovery: %s\n", batchfit_ctx_last_error(ctx));
            return 2;
        }
        batchfit_ctx_set_log(ctx, print_log, NULL, BATCHFIT_LOG_INFO);
        plan = *batchfit_recover_get(rec);
        t.micro = (size_t)plan.micro_batch;
    }
    alloc_buffers(&t.b, t.micro);
    double first = 0.0, last = 0.0;
    uint64_t seen = 0;
    for (long s = 0; s < steps; s++) {
        uint64_t limit = memory_limit_mib ? (uint64_t)memory_limit_mib << 20 : 0;
        if (shrink_step > 0 && s + 1 >= shrink_step)
            limit = (uint64_t)shrink_mib << 20;
        /* The micro-batch's buffers must fit the limit, as on a device. */
        if (limit && (uint64_t)t.micro * sample_bytes() > limit) {
            printf("out of memory at step %ld: micro-batch %zu needs %zu bytes, %llu available\n",
                   s + 1, t.micro, t.micro * sample_bytes(), (unsigned long long)limit);
            if (!rec) {
                fprintf(stderr, "trainer: out of memory\n");
                return 1;
            }
            if (batchfit_recover_oom(rec, limit) != BATCHFIT_OK) {
                fprintf(stderr, "trainer: %s\n", batchfit_ctx_last_error(ctx));
                return 1;
            }
            plan = *batchfit_recover_get(rec);
            s--; /* the same step again, with the new plan */
            continue;
        }
        zero_grads(&grads);
        double loss = 0.0;
        uint64_t offset = 0;
        for (unsigned j = 0; j < plan.accumulation; j++) {
            size_t n = j + 1 == plan.accumulation ? (size_t)plan.last_micro_batch
                                                  : (size_t)plan.micro_batch;
            make_batch(&t.b, n, (uint64_t)s * (uint64_t)global + offset);
            loss += accumulate(m, &grads, &t.b, n, (size_t)global);
            offset += n;
        }
        update(m, &grads, (float)lr);
        seen += offset;
        last = loss / (double)global;
        if (s == 0)
            first = last;
        printf("step %ld loss %.4f effective batch %llu (micro-batch %llu x %u)\n", s + 1, last,
               (unsigned long long)offset, (unsigned long long)plan.micro_batch, plan.accumulation);
        fflush(stdout);
        if (rec) {
            int changed = 0;
            if (batchfit_recover_step_ok(rec, &changed) != BATCHFIT_OK) {
                fprintf(stderr, "trainer: %s\n", batchfit_ctx_last_error(ctx));
                return 1;
            }
            plan = *batchfit_recover_get(rec);
        }
    }
    printf("trained %ld steps at batch size %ld (loss %.4f -> %.4f)\n", steps, batch, first, last);
    printf("samples seen %llu, effective batch %ld, final loss %.9f\n", (unsigned long long)seen,
           global, last);
    free_buffers(&t.b);
    for (int k = 0; k < 2; k++) {
        free(models[k]->conv_w);
        free(models[k]->conv_b);
        free(models[k]->fc_w);
    }
    batchfit_recover_free(rec);
    batchfit_ctx_free(ctx);
    return 0;
}
