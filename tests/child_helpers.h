/* Helpers for the tests of child trials: the test program, one trial with
 * given options, and whether the processes a trial wrote down still live. */
#ifndef BATCHFIT_CHILD_HELPERS_H
#define BATCHFIT_CHILD_HELPERS_H

#include "test.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static inline const char *tool(void)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/tests/childtool", test_build_dir());
    return path;
}

/* Runs argv once at batch with the options' other settings. */
static inline int trial(batchfit__runner_options *o, const char *const *argv, uint64_t batch,
                        batchfit_trial *t)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit__runner *r = NULL;
    o->argv = argv;
    int rc = batchfit__runner_create(ctx, o, &r);
    if (rc == BATCHFIT_OK)
        rc = batchfit__runner_trial(r, batch, t);
    batchfit__runner_free(r);
    batchfit_ctx_free(ctx);
    return rc;
}

static inline int alive(long pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* Pids written to a file, one a line; returns how many, all must be dead. */
static inline int live_pids(const char *path, int *count)
{
    FILE *f = fopen(path, "r");
    int live = 0;
    *count = 0;
    long pid;
    while (f && fscanf(f, "%ld", &pid) == 1) {
        (*count)++;
        live += alive(pid);
    }
    if (f)
        fclose(f);
    return live;
}

static inline void tmp_path(char *buf, size_t len, const char *what)
{
    snprintf(buf, len, "/tmp/batchfit-test-%ld-%s", (long)getpid(), what);
    unlink(buf);
}

#endif
