/* The test runner: runs every test (or those named on the command line, by
 * exact name or prefix) and ends with the line "N passed, N failed". */
#include "test.h"

#include <linux/magic.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/vfs.h>
#include <unistd.h>

#define X(name) void test_##name(void);
#include "list.h"
#undef X

typedef struct test_entry {
    const char *name;
    void (*fn)(void);
} test_entry;

static const test_entry tests[] = {
#define X(name) {#name, test_##name},
#include "list.h"
#undef X
};

static int current_failed;

void test_fail(const char *file, int line, const char *fmt, ...)
{
    current_failed = 1;
    fprintf(stdout, "    %s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
}

int test_failed(void)
{
    return current_failed;
}

const char *test_source_dir(void)
{
    return BATCHFIT_SOURCE_DIR;
}

const char *test_build_dir(void)
{
    const char *b = getenv("BATCHFIT_TEST_BUILD");
    return b ? b : "build";
}

const char *test_page_cache_dir(void)
{
    static char dir[1024];
    const char *candidates[] = {test_build_dir(), "/var/tmp", "/tmp"};
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        struct statfs fs;
        if (access(candidates[i], W_OK) == 0 && statfs(candidates[i], &fs) == 0 &&
            fs.f_type != TMPFS_MAGIC && fs.f_type != RAMFS_MAGIC) {
            snprintf(dir, sizeof dir, "%s", candidates[i]);
            return dir;
        }
    }
    return NULL;
}

/* The suite tests batchfit against its fakes and simulator, not against
 * this machine: a driver here (the device lends a GPU) or the user's own
 * settings would change what "auto" picks, the budgets and the messages.
 * Tests that want a library or a limit set it themselves. */
void test_isolate_environment(void)
{
    static const char *const user[] = {"VRAM_LIMIT_GB", "BATCHFIT_VRAM_LIMIT_GB",
                                       "CUDA_VISIBLE_DEVICES", "BATCHFIT_MPI_LIBRARY",
                                       "BATCHFIT_CACHE_DIR", "XDG_CACHE_HOME"};
    for (size_t i = 0; i < sizeof user / sizeof user[0]; i++)
        unsetenv(user[i]);
    setenv("BATCHFIT_CUDA_LIBRARY", TEST_NO_CUDA, 1);
    setenv("BATCHFIT_NVML_LIBRARY", TEST_NO_NVML, 1);
}

static int selected(const char *name, int argc, char **argv)
{
    if (argc < 2)
        return 1;
    for (int i = 1; i < argc; i++)
        if (strncmp(name, argv[i], strlen(argv[i])) == 0)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    unsigned passed = 0, failed = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (!selected(tests[i].name, argc, argv))
            continue;
        current_failed = 0;
        /* Before each test: a failing one returns early, past its own
         * clean-up, and must not leave its settings to the next. */
        test_isolate_environment();
        fflush(stdout);
        tests[i].fn();
        if (current_failed) {
            failed++;
            printf("FAIL %s\n", tests[i].name);
        } else {
            passed++;
            printf("ok   %s\n", tests[i].name);
        }
    }
    printf("%u passed, %u failed\n", passed, failed);
    return failed ? 1 : 0;
}
