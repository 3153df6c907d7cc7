/* The test runner: runs every test (or those named on the command line, by
 * exact name or prefix) and ends with the line "N passed, N failed". */
#include "test.h"

#include <stdarg.h>
#include <stdlib.h>

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

const char *test_source_dir(void)
{
    return BATCHFIT_SOURCE_DIR;
}

const char *test_build_dir(void)
{
    const char *b = getenv("BATCHFIT_TEST_BUILD");
    return b ? b : "build";
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
