/* Helpers shared by the tests: a counting, failure-injecting allocator. */
#include "test.h"

#include <stdlib.h>

static int should_fail(test_alloc_state *s)
{
    long n = s->calls++;
    if (s->fail_at >= 0 && n == s->fail_at) {
        s->failures++;
        return 1;
    }
    return 0;
}

static void *counting_alloc(size_t size, void *userdata)
{
    test_alloc_state *s = userdata;
    if (should_fail(s))
        return NULL;
    void *p = malloc(size);
    if (p)
        s->outstanding++;
    return p;
}

static void *counting_realloc(void *ptr, size_t size, void *userdata)
{
    test_alloc_state *s = userdata;
    if (should_fail(s))
        return NULL;
    void *p = realloc(ptr, size);
    if (p && !ptr)
        s->outstanding++;
    return p;
}

static void counting_free(void *ptr, void *userdata)
{
    test_alloc_state *s = userdata;
    if (ptr)
        s->outstanding--;
    free(ptr);
}

batchfit_allocator test_allocator(test_alloc_state *state)
{
    batchfit_allocator a = {counting_alloc, counting_realloc, counting_free, state};
    return a;
}

batchfit_ctx *test_ctx(test_alloc_state *state)
{
    batchfit_ctx *ctx = NULL;
    if (state) {
        batchfit_allocator a = test_allocator(state);
        if (batchfit_ctx_create(&a, &ctx) != BATCHFIT_OK)
            return NULL;
    } else if (batchfit_ctx_create(NULL, &ctx) != BATCHFIT_OK) {
        return NULL;
    }
    return ctx;
}

batchfit_device *test_host(batchfit_ctx *ctx, batchfit_options *o, uint64_t budget_bytes)
{
    batchfit_device *host = NULL;
    if (batchfit_device_open(ctx, "host", &host) != BATCHFIT_OK)
        test_fail(__FILE__, __LINE__, "cannot open the host device: %s",
                  batchfit_ctx_last_error(ctx));
    batchfit_options_init(o);
    o->memory_budget_bytes = budget_bytes;
    return host;
}
