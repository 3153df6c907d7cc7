#include "test.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* bytes of heap, every page written (so resident); NULL where malloc
 * fails. free((void *)p) gives them back. */
static volatile char *touched(size_t bytes)
{
    volatile char *p = malloc(bytes);
    for (size_t i = 0; p && i < bytes; i += 4096)
        p[i] = 1;
    return p;
}

TEST(device_host_reports_ram_and_measures_its_own_peak)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, "host", &d), BATCHFIT_OK);
    CHECK_STR(batchfit_device_kind(d), "host");
    CHECK_EQ(batchfit_device_available(d, NULL), 1);
    uint64_t total = 0, free_bytes = 0;
    CHECK_EQ(batchfit_device_memory(d, &total, &free_bytes), BATCHFIT_OK);
    CHECK(total > (UINT64_C(256) << 20));
    CHECK(free_bytes > 0 && free_bytes <= total);
    CHECK_NEAR(batchfit_device_peak_spread(d), 0.05, 1e-12);
    /* The high-water mark, reset, then raised by 64 MiB touched. */
    CHECK_EQ(batchfit_device_peak_reset(d), BATCHFIT_OK);
    uint64_t before = 0, after = 0;
    CHECK_EQ(batchfit_device_peak(d, &before), BATCHFIT_OK);
    volatile char *p = touched((size_t)64 << 20);
    CHECK(p != NULL);
    CHECK_EQ(batchfit_device_peak(d, &after), BATCHFIT_OK);
    free((void *)p);
    CHECK(after >= before + (UINT64_C(60) << 20));
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}

/* An in-process probe on the host: the step's memory is really allocated,
 * and the peak comes from the kernel's VmHWM. */
typedef struct host_step {
    size_t per_sample;
    uint64_t budget_seen; /* the budget the last run() was given */
} host_step;

static batchfit_outcome hs_build(void *userdata, batchfit_device *dev, void **state, char *msg,
                                 size_t len)
{
    (void)dev;
    (void)msg;
    (void)len;
    *state = userdata;
    return BATCHFIT_FITS;
}

static batchfit_outcome hs_run(void *state, uint64_t batch, batchfit_step_report *rep)
{
    host_step *h = state;
    h->budget_seen = rep->budget_bytes;
    volatile char *p = touched(h->per_sample * (size_t)batch);
    if (!p) {
        snprintf(rep->message, sizeof rep->message, "out of memory");
        return BATCHFIT_OOM;
    }
    free((void *)p);
    return BATCHFIT_FITS;
}

static void hs_release(void *state)
{
    (void)state;
}

TEST(device_host_in_process_probe_measures_real_memory)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, "host", &d), BATCHFIT_OK);
    host_step h = {(size_t)1 << 20, 0};
    batchfit_step step = {sizeof step, "host test", 1, hs_build, hs_run, NULL, hs_release};
    batchfit_options o;
    batchfit_options_init(&o);
    o.requested_max = 48;
    o.strategy = BATCHFIT_STRATEGY_BISECT;
    batchfit_result *r = NULL;
    CHECK_EQ(batchfit_probe(ctx, &o, d, &step, &h, &r), BATCHFIT_OK);
    CHECK_EQ(r->batch_size, 48);
    const batchfit_trial *last = NULL;
    for (size_t i = 0; i < r->trial_count; i++)
        if (r->trials[i].batch == 48)
            last = &r->trials[i];
    CHECK(last != NULL);
    CHECK(last->peak_known);
    CHECK(last->peak_bytes >= (UINT64_C(48) << 20));
    CHECK(r->baseline_known);
    /* Each run() is told the budget its peak is judged against. */
    CHECK(r->budget.known);
    CHECK(r->budget.budget_bytes > 0);
    CHECK_EQ(h.budget_seen, r->budget.budget_bytes);
    batchfit_result_free(r);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}

/* The pages this process holds before an in-process probe are in each
 * trial's peak (VmHWM) and out of MemAvailable: they are usable to the
 * probe's trials, where a command's trials (children) get only what is
 * free. */
TEST(device_host_in_process_probe_counts_what_the_process_holds_as_usable)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, "host", &d), BATCHFIT_OK);
    volatile char *p = touched((size_t)256 << 20);
    CHECK(p != NULL);
    host_step h = {(size_t)1 << 20, 0};
    batchfit_step step = {sizeof step, "host test", 1, hs_build, hs_run, NULL, hs_release};
    batchfit_options o;
    batchfit_options_init(&o);
    o.requested_max = 2;
    batchfit_result *r = NULL;
    CHECK_EQ(batchfit_probe(ctx, &o, d, &step, &h, &r), BATCHFIT_OK);
    CHECK(r->budget.usable_bytes >= r->budget.free_bytes + (UINT64_C(250) << 20));
    CHECK(r->budget.budget_bytes > r->budget.free_bytes - r->budget.margin_bytes);
    batchfit_result_free(r);

    batchfit_command_options c;
    batchfit_command_options_init(&c);
    const char *argv[] = {"/bin/sh", "-c", "exit 0", "{batch}", NULL};
    c.argv = argv;
    r = NULL;
    CHECK_EQ(batchfit_probe_command(ctx, &o, d, &c, &r), BATCHFIT_OK);
    CHECK_EQ(r->budget.usable_bytes, r->budget.free_bytes);
    batchfit_result_free(r);
    free((void *)p);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}

/* What an earlier trial freed is not a later one's peak: glibc keeps freed
 * heap resident (here, pieces below its mmap threshold under a block still
 * held above them, as a step's cached state holds), and a reset of the
 * high-water mark lowers it only to what is resident. The reset gives the
 * heap back first. */
TEST(device_host_peak_reset_does_not_count_what_was_freed)
{
    /* glibc's heap is what this is about: under AddressSanitizer freed
     * blocks wait in its quarantine, under valgrind in its free list, and
     * neither allocator is glibc's (nothing to trim; the plain builds run
     * it). */
#if defined(__SANITIZE_ADDRESS__)
    return;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return;
#endif
#endif
    const char *preload = getenv("LD_PRELOAD");
    if (preload && strstr(preload, "vgpreload"))
        return;
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, "host", &d), BATCHFIT_OK);
    uint64_t base = 0, peak = 0;
    CHECK_EQ(batchfit__self_rss(&base), 0);
    enum { PIECES = 3200, PIECE = 64 << 10 }; /* 200 MiB */
    static char *pieces[PIECES];
    for (size_t i = 0; i < PIECES; i++) {
        pieces[i] = malloc(PIECE);
        CHECK(pieces[i] != NULL);
        memset(pieces[i], 1, PIECE);
    }
    char *pin = malloc(64);
    CHECK(pin != NULL);
    for (size_t i = 0; i < PIECES; i++)
        free(pieces[i]);
    CHECK_EQ(batchfit_device_peak_reset(d), BATCHFIT_OK);
    CHECK_EQ(batchfit_device_peak(d, &peak), BATCHFIT_OK);
    free(pin);
    CHECK(peak < base + (UINT64_C(64) << 20));
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}

/* A step that keeps what each trial allocated (as a list of losses that
 * hold their graphs does) raises what the process holds as each trial
 * begins, which every later peak counts: the probe says so, once. */
typedef struct leaky_step {
    size_t per_sample;
    char *kept[64];
    unsigned count;
} leaky_step;

static batchfit_outcome leaky_run(void *state, uint64_t batch, batchfit_step_report *rep)
{
    leaky_step *l = state;
    size_t n = l->per_sample * (size_t)batch;
    char *p = l->count < 64 ? malloc(n) : NULL;
    if (!p) {
        snprintf(rep->message, sizeof rep->message, "out of memory");
        return BATCHFIT_OOM;
    }
    memset(p, 1, n);
    l->kept[l->count++] = p;
    return BATCHFIT_FITS;
}

static void leaky_release(void *state)
{
    leaky_step *l = state;
    for (unsigned i = 0; i < l->count; i++)
        free(l->kept[i]);
    l->count = 0;
}

static int warned_of_keeping(const batchfit_result *r)
{
    for (size_t i = 0; i < r->warning_count; i++)
        if (strstr(r->warnings[i], "the step keeps memory from one trial to the next"))
            return 1;
    return 0;
}

/* Whether freed memory goes back as glibc gives it: AddressSanitizer's
 * quarantine and valgrind's free list keep freed blocks resident, so a
 * step's (or a child's) next allocation reuses pages that no peak counts
 * again. */
static int plain_allocator(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return 0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return 0;
#endif
#endif
    const char *preload = getenv("LD_PRELOAD");
    return !(preload && strstr(preload, "vgpreload"));
}

/* The host, and options whose budget is extra bytes besides what this
 * process holds already (*rss): in-process, a trial's peak is the whole
 * process's (a runner under AddressSanitizer holds its quarantine, and
 * batch 1 did not fit a budget of 256 MiB). NULL where it cannot be read. */
static batchfit_device *host_over_held(batchfit_ctx *ctx, batchfit_options *o, uint64_t extra,
                                       uint64_t *rss)
{
    batchfit_device *d = NULL;
    batchfit_options_init(o);
    if (batchfit__self_rss(rss) != 0 || batchfit_device_open(ctx, "host", &d) != BATCHFIT_OK)
        return NULL;
    o->memory_budget_bytes = *rss + extra;
    return d;
}

TEST(device_host_in_process_probe_says_when_the_step_keeps_memory)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_options o;
    uint64_t rss = 0;
    batchfit_device *d = host_over_held(ctx, &o, UINT64_C(256) << 20, &rss);
    CHECK(d != NULL);
    leaky_step *l = calloc(1, sizeof *l);
    CHECK(l != NULL);
    l->per_sample = (size_t)256 << 10;
    batchfit_step leaky = {sizeof leaky, "leaky", 1, hs_build, leaky_run, NULL, leaky_release};
    batchfit_result *r = NULL;
    CHECK_EQ(batchfit_probe(ctx, &o, d, &leaky, l, &r), BATCHFIT_OK);
    CHECK(warned_of_keeping(r));
    CHECK_EQ(l->count, 0u); /* released */
    batchfit_result_free(r);
    free(l);
    /* A step that frees what it made is not told so (glibc's heap given
     * back before each trial; AddressSanitizer's quarantine and
     * valgrind's free list keep freed blocks resident, so the plain
     * builds check this half). */
    if (plain_allocator()) {
        host_step h = {(size_t)256 << 10, 0};
        batchfit_step step = {sizeof step, "host test", 1, hs_build, hs_run, NULL, hs_release};
        r = NULL;
        CHECK_EQ(batchfit_probe(ctx, &o, d, &step, &h, &r), BATCHFIT_OK);
        CHECK(!warned_of_keeping(r));
        CHECK(r->batch_size > 500);
        batchfit_result_free(r);
    }
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}

/* A step whose work is done in a child process it keeps (a multiprocessing
 * pool's worker, a DataLoader's): run() hands the worker the batch, which
 * allocates and touches 1 MiB a sample, frees it and answers. */
typedef struct worker_step {
    int to[2], from[2];
    pid_t pid;
} worker_step;

static batchfit_outcome worker_build(void *userdata, batchfit_device *dev, void **state,
                                     char *msg, size_t len)
{
    (void)dev;
    worker_step *w = userdata;
    if (pipe(w->to) != 0 || pipe(w->from) != 0) {
        snprintf(msg, len, "pipe");
        return BATCHFIT_ERROR;
    }
    w->pid = fork();
    if (w->pid == 0) {
        close(w->to[1]);
        close(w->from[0]);
        uint64_t batch;
        while (read(w->to[0], &batch, sizeof batch) == (ssize_t)sizeof batch && batch) {
            free((void *)touched((size_t)batch << 20));
            if (write(w->from[1], "x", 1) != 1)
                break;
        }
        _exit(0);
    }
    close(w->to[0]);
    close(w->from[1]);
    *state = w;
    return w->pid > 0 ? BATCHFIT_FITS : BATCHFIT_ERROR;
}

static batchfit_outcome worker_run(void *state, uint64_t batch, batchfit_step_report *rep)
{
    worker_step *w = state;
    char done;
    if (write(w->to[1], &batch, sizeof batch) != (ssize_t)sizeof batch ||
        read(w->from[0], &done, 1) != 1) {
        snprintf(rep->message, sizeof rep->message, "the worker is gone");
        return BATCHFIT_ERROR;
    }
    return BATCHFIT_FITS;
}

static void worker_release(void *state)
{
    worker_step *w = state;
    close(w->to[1]);
    close(w->from[0]);
    waitpid(w->pid, NULL, 0);
}

/* What the step's child processes take counts in the trial's peak: a step
 * whose pool worker took 1 MiB a sample read 34.5 MiB at every size and was
 * answered 2000 where 265 fit. What the worker shares with this process
 * (forked from it) is counted once, in this process's own peak. */
TEST(device_host_in_process_probe_counts_the_step_s_child_processes)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_options o;
    uint64_t rss = 0;
    batchfit_device *d = host_over_held(ctx, &o, UINT64_C(160) << 20, &rss);
    CHECK(d != NULL);
    worker_step w;
    memset(&w, 0, sizeof w);
    batchfit_step step = {sizeof step, "worker", 1, worker_build, worker_run, NULL,
                          worker_release};
    batchfit_result *r = NULL;
    int rc = batchfit_probe(ctx, &o, d, &step, &w, &r);
    /* A child's allocator that keeps what it freed (the worker here runs
     * under the sanitizer or valgrind too) reuses it unseen: what it held
     * as a trial began is the base its growth is read from. */
    if (!plain_allocator()) {
        batchfit_result_free(r);
        batchfit_device_free(d);
        batchfit_ctx_free(ctx);
        CHECK_EQ(rc, BATCHFIT_OK);
        return;
    }
    CHECK_EQ(rc, BATCHFIT_OK);
    CHECK_EQ(r->status, BATCHFIT_OK);
    /* 160 MiB over what this process holds, less the margin and the
     * spread: the worker's samples stop well under 160. */
    CHECK(r->batch_size >= 100);
    CHECK(r->batch_size < 160);
    const batchfit_trial *last = NULL;
    for (size_t i = 0; i < r->trial_count; i++)
        if (r->trials[i].outcome == BATCHFIT_FITS && r->trials[i].batch == r->batch_size)
            last = &r->trials[i];
    CHECK(last != NULL);
    CHECK(last->peak_bytes >= rss / 2 + ((uint64_t)r->batch_size << 20));
    batchfit_result_free(r);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}

/* A process that holds more than the budget before an in-process probe
 * begins fits nothing, its own memory being in every trial's peak: the
 * error says so, where it advised a smaller model. */
TEST(device_host_in_process_probe_names_what_the_process_held_before)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_device *d = NULL;
    CHECK_EQ(batchfit_device_open(ctx, "host", &d), BATCHFIT_OK);
    volatile char *held = touched((size_t)192 << 20);
    CHECK(held != NULL);
    batchfit_options o;
    batchfit_options_init(&o);
    o.memory_budget_bytes = UINT64_C(128) << 20;
    host_step h = {(size_t)1 << 10, 0};
    batchfit_step step = {sizeof step, "host test", 1, hs_build, hs_run, NULL, hs_release};
    batchfit_result *r = NULL;
    int rc = batchfit_probe(ctx, &o, d, &step, &h, &r);
    free((void *)held);
    CHECK_EQ(rc, BATCHFIT_E_MIN_DOES_NOT_FIT);
    CHECK(r != NULL);
    CHECK_CONTAINS(r->error, "; this process held ");
    CHECK_CONTAINS(r->error, " before the probe began, which every in-process trial's peak "
                             "counts, against an acceptance threshold of ");
    CHECK(strstr(r->error, "try a smaller model") == NULL);
    batchfit_result_free(r);
    batchfit_device_free(d);
    batchfit_ctx_free(ctx);
}
