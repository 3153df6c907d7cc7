/* batchfit cache list | show KEY | clear */
#include "cli.h"

#include <string.h>
#include <time.h>

static void print_entry(const batchfit_cache_entry *e, void *userdata)
{
    (void)userdata;
    char budget[32];
    batchfit_format_bytes((double)e->budget_bytes, budget, sizeof budget);
    printf("%s  batch_size=%llu  budget %s  %s\n", e->key, (unsigned long long)e->batch_size,
           budget, e->description);
}

int cli_cache(int argc, char **argv)
{
    char dir[4096], err[512];
    if (batchfit_cache_dir(dir, sizeof dir, err, sizeof err) != BATCHFIT_OK) {
        fprintf(stderr, "batchfit cache: %s\n", err);
        return EXIT_USAGE;
    }
    const char *what = argc > 1 ? argv[1] : "";
    if (strcmp(what, "list") == 0 && argc == 2) {
        int n = batchfit_cache_list(dir, print_entry, NULL);
        if (n < 0) {
            fprintf(stderr, "batchfit cache: cannot read %s\n", dir);
            return EXIT_USAGE;
        }
        fprintf(stderr, "%d entr%s in %s\n", n, n == 1 ? "y" : "ies", dir);
        return EXIT_FOUND;
    }
    if (strcmp(what, "show") == 0 && argc == 3) {
        batchfit_cache_entry e;
        int found = batchfit_cache_load(dir, argv[2], &e, err, sizeof err);
        if (found != 1) {
            fprintf(stderr, "batchfit cache: %s\n",
                    found == 0 ? "no such entry (see batchfit cache list)" : err);
            return EXIT_USAGE;
        }
        printf("key          %s\nbatch_size   %llu\nbudget_bytes %llu\nversion      %s\n", e.key,
               (unsigned long long)e.batch_size, (unsigned long long)e.budget_bytes, e.version);
        if (e.fit.valid)
            printf("fit          %.0f bytes + %.0f bytes per sample\n", e.fit.intercept_bytes,
                   e.fit.bytes_per_sample);
        time_t t = (time_t)e.created;
        char when[64] = "";
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
        printf("created      %s\nprobe        %s\n", when, e.description);
        return EXIT_FOUND;
    }
    if (strcmp(what, "clear") == 0 && argc == 2) {
        int n = batchfit_cache_clear(dir, err, sizeof err);
        if (n < 0) {
            fprintf(stderr, "batchfit cache: %s\n", err);
            return EXIT_USAGE;
        }
        printf("removed %d entr%s from %s\n", n, n == 1 ? "y" : "ies", dir);
        return EXIT_FOUND;
    }
    fprintf(stderr, "usage: batchfit cache list | show KEY | clear\n"
                    "(the cache lives in $BATCHFIT_CACHE_DIR, else $XDG_CACHE_HOME/batchfit, "
                    "else ~/.cache/batchfit)\n");
    return strcmp(what, "--help") == 0 || strcmp(what, "-h") == 0 ? EXIT_FOUND : EXIT_USAGE;
}
