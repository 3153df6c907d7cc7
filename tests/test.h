/* A small test harness: TEST(name) defines a test, CHECK* assert on values
 * and end the test at the first failure, reporting file, line and values. */
#ifndef BATCHFIT_TEST_H
#define BATCHFIT_TEST_H

#include "batchfit.h"
#include "internal.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Whether the running test has failed a check (in a helper it called). */
int test_failed(void);

#define TEST(name)           \
    void test_##name(void); \
    void test_##name(void)

#define CHECK(cond)                                          \
    do {                                                     \
        if (!(cond)) {                                       \
            test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); \
            return;                                          \
        }                                                    \
    } while (0)

#define CHECK_EQ(a, b)                                                                      \
    do {                                                                                    \
        unsigned long long check_a_ = (unsigned long long)(a);                              \
        unsigned long long check_b_ = (unsigned long long)(b);                              \
        if (check_a_ != check_b_) {                                                         \
            test_fail(__FILE__, __LINE__, "%s == %s: %llu != %llu", #a, #b, check_a_, check_b_); \
            return;                                                                         \
        }                                                                                   \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                \
    do {                                                                                     \
        double check_a_ = (double)(a), check_b_ = (double)(b);                               \
        if (!(check_a_ - check_b_ <= (tol) && check_b_ - check_a_ <= (tol))) {               \
            test_fail(__FILE__, __LINE__, "%s ~ %s: %.17g vs %.17g", #a, #b, check_a_, check_b_); \
            return;                                                                          \
        }                                                                                    \
    } while (0)

#define CHECK_STR(a, b)                                                                   \
    do {                                                                                  \
        const char *check_a_ = (a), *check_b_ = (b);                                      \
        if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_) != 0) {                  \
            test_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b,           \
                      check_a_ ? check_a_ : "(null)", check_b_ ? check_b_ : "(null)");    \
            return;                                                                       \
        }                                                                                 \
    } while (0)

#define CHECK_CONTAINS(haystack, needle)                                                   \
    do {                                                                                   \
        const char *check_h_ = (haystack), *check_n_ = (needle);                           \
        if (!check_h_ || !strstr(check_h_, check_n_)) {                                    \
            test_fail(__FILE__, __LINE__, "%s contains \"%s\": got \"%s\"", #haystack,     \
                      check_n_, check_h_ ? check_h_ : "(null)");                           \
            return;                                                                        \
        }                                                                                  \
    } while (0)

/* The repository root, for tests that run scripts or programs. */
const char *test_source_dir(void);
const char *test_build_dir(void);
/* A writable directory whose files are page cache, not memory (no tmpfs
 * or ramfs, where a file is shared memory that no reclaim drops): the
 * build directory, /var/tmp or /tmp; NULL where none is (tests that need
 * one skip). */
const char *test_page_cache_dir(void);
/* Where the suite's CUDA and NVML libraries point unless a test loads its
 * fakes: nowhere, so no driver on the machine is ever used. */
#define TEST_NO_CUDA "/nonexistent/libcuda.so.1"
#define TEST_NO_NVML "/nonexistent/libnvidia-ml.so.1"
/* Puts the environment back as the runner sets it up (no driver, no user
 * limits); fake-GPU tests call it when they are done. */
void test_isolate_environment(void);

/* An allocator that counts calls, tracks outstanding blocks and can fail
 * the Nth allocation (fail_at, counting from 0; -1 never). */
typedef struct test_alloc_state {
    long calls;
    long fail_at;
    long outstanding;
    long failures;
} test_alloc_state;

batchfit_allocator test_allocator(test_alloc_state *state);

/* A context with the test allocator (state may be NULL: the default). */
batchfit_ctx *test_ctx(test_alloc_state *state);

/* The host device (a failed test when it cannot be opened: NULL), and o
 * initialised with a memory budget of budget_bytes. */
batchfit_device *test_host(batchfit_ctx *ctx, batchfit_options *o, uint64_t budget_bytes);

#endif
