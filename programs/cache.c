/* batchfit cache list | show KEY | clear */
#include "cli.h"

#include <string.h>
#include <time.h>

/* The length of the UTF-8 sequence at s that is a printable character
 * (no C1 control), else 0. */
static size_t printable_utf8(const unsigned char *s)
{
    size_t n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (s[0] >= 0xf8)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if (n == 2 && s[0] == 0xc2 && s[1] < 0xa0)
        return 0; /* U+0080-U+009F: C1 controls */
    if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 4 && s[0] == 0xf0 && s[1] < 0x90) ||
        (n == 4 && s[0] == 0xf4 && s[1] >= 0x90) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0))
        return 0; /* overlong, past U+10FFFF, or a surrogate */
    return n;
}

/* Text an entry holds (a cache key, a command) as the terminal should see
 * it: control characters and bytes that are no UTF-8 as \xNN (an escape
 * sequence in a cache key reached the terminal and retitled its window). */
static void print_text(const char *text)
{
    const unsigned char *s = (const unsigned char *)text;
    while (*s) {
        size_t n = *s >= 0x20 && *s < 0x7f ? 1 : *s >= 0x80 ? printable_utf8(s) : 0;
        if (n) {
            fwrite(s, 1, n, stdout);
            s += n;
        } else {
            printf("\\x%02x", *s++);
        }
    }
}

static void print_entry(const batchfit_cache_entry *e, void *userdata)
{
    (void)userdata;
    char budget[32];
    batchfit_format_bytes((double)e->budget_bytes, budget, sizeof budget);
    printf("%s  batch_size=%llu  budget %s  ", e->key, (unsigned long long)e->batch_size, budget);
    print_text(e->description);
    putchar('\n');
}

/* Warnings (damaged entries) go to stderr and are counted; errors are
 * printed by the caller. */
static void on_log(batchfit_log_level level, const char *message, void *userdata)
{
    if (level != BATCHFIT_LOG_WARN)
        return;
    cli_log_warnings(level, message, NULL);
    ++*(size_t *)userdata;
}

static int show(batchfit_ctx *ctx, const char *dir, const char *key)
{
    batchfit_cache_entry e;
    int rc = batchfit_cache_load(ctx, dir, key, &e);
    if (rc == BATCHFIT_E_NOT_FOUND) {
        fprintf(stderr, "batchfit cache: no entry %s in %s (see batchfit cache list)\n", key, dir);
        return EXIT_NOT_FOUND;
    }
    if (rc) {
        fprintf(stderr, "batchfit: %s\n", batchfit_ctx_last_error(ctx));
        /* A damaged entry is no entry (a probe of its key replaces it). */
        return rc == BATCHFIT_E_PARSE ? EXIT_NOT_FOUND : EXIT_USAGE;
    }
    printf("key          %s\nbatch_size   %llu\nbudget_bytes %llu\nversion      ", e.key,
           (unsigned long long)e.batch_size, (unsigned long long)e.budget_bytes);
    print_text(e.version);
    putchar('\n');
    if (e.fit.valid)
        printf("fit          %.0f bytes + %.0f bytes per sample\n", e.fit.intercept_bytes,
               e.fit.bytes_per_sample);
    time_t t = (time_t)e.created;
    char when[64] = "";
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
    printf("created      %s\nprobe        ", when);
    print_text(e.description);
    putchar('\n');
    return EXIT_FOUND;
}

static int run(batchfit_ctx *ctx, int argc, char **argv)
{
    char dir[4096];
    if (batchfit_cache_dir(ctx, dir, sizeof dir) != BATCHFIT_OK) {
        fprintf(stderr, "batchfit: %s\n", batchfit_ctx_last_error(ctx));
        return EXIT_USAGE;
    }
    const char *what = argc > 1 ? argv[1] : "";
    size_t n = 0;
    if (strcmp(what, "list") == 0 && argc == 2) {
        size_t damaged = 0;
        batchfit_ctx_set_log(ctx, on_log, &damaged, BATCHFIT_LOG_WARN);
        if (batchfit_cache_list(ctx, dir, print_entry, NULL, &n) != BATCHFIT_OK) {
            fprintf(stderr, "batchfit: %s\n", batchfit_ctx_last_error(ctx));
            return EXIT_USAGE;
        }
        fprintf(stderr, "%zu entr%s in %s", n, n == 1 ? "y" : "ies", dir);
        if (damaged)
            fprintf(stderr, ", and %zu damaged or foreign file%s (clear removes them too)", damaged,
                    damaged == 1 ? "" : "s");
        fputc('\n', stderr);
        return EXIT_FOUND;
    }
    if (strcmp(what, "show") == 0 && argc == 3)
        return show(ctx, dir, argv[2]);
    if (strcmp(what, "clear") == 0 && argc == 2) {
        size_t left = 0;
        batchfit_ctx_set_log(ctx, on_log, &left, BATCHFIT_LOG_WARN);
        if (batchfit_cache_clear(ctx, dir, &n) != BATCHFIT_OK) {
            fprintf(stderr, "batchfit: %s\n", batchfit_ctx_last_error(ctx));
            return EXIT_USAGE;
        }
        printf("removed %zu entr%s from %s", n, n == 1 ? "y" : "ies", dir);
        if (left)
            printf("; %zu could not be removed (see the warning%s above)", left,
                   left == 1 ? "" : "s");
        printf("\n");
        return left ? EXIT_EXPORT_FAILED : EXIT_FOUND;
    }
    int help = strcmp(what, "--help") == 0 || strcmp(what, "-h") == 0;
    if (!help) {
        int known = strcmp(what, "list") == 0 || strcmp(what, "show") == 0 ||
                    strcmp(what, "clear") == 0;
        if (!what[0])
            fprintf(stderr, "batchfit cache: no cache command given\n");
        else if (!known)
            fprintf(stderr, "batchfit cache: unknown cache command '%s'\n", what);
        else
            fprintf(stderr, "batchfit cache %s: %s\n", what,
                    strcmp(what, "show") == 0 ? "it takes one KEY" : "it takes no arguments");
    }
    /* Asked for, the usage is the output (as every other --help's); after a mistake, an error. */
    fprintf(help ? stdout : stderr, "usage: batchfit cache list | show KEY | clear\n"
                    "(the cache lives in $BATCHFIT_CACHE_DIR, else $XDG_CACHE_HOME/batchfit, "
                    "else ~/.cache/batchfit; show exits 1 when KEY has no entry or a damaged one, "
                    "2 when KEY is not a key)\n");
    return help ? EXIT_FOUND : EXIT_USAGE;
}

int cli_cache(int argc, char **argv)
{
    batchfit_ctx *ctx = NULL;
    if (batchfit_ctx_create(NULL, &ctx) != BATCHFIT_OK)
        return EXIT_INTERNAL;
    int rc = run(ctx, argc, argv);
    batchfit_ctx_free(ctx);
    return rc;
}
