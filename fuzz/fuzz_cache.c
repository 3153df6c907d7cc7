/* Cache files: any content under an entry's name loads as an entry whose
 * fields are sane, or is reported as damaged; nothing else happens. */
#include "fuzz.h"

#include "batchfit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int FUZZ_ENTRY(fuzz_cache)(const uint8_t *data, size_t size)
{
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/batchfit-fuzz-cache-%ld", (long)getpid());
        if (mkdir(dir, 0700) != 0 && access(dir, W_OK) != 0)
            return 0;
    }
    const char *key = "0123456789abcdef0123456789abcdef";
    char path[256];
    snprintf(path, sizeof path, "%s/%s.entry", dir, key);
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    static batchfit_ctx *ctx;
    if (!ctx && batchfit_ctx_create(NULL, &ctx) != BATCHFIT_OK)
        return 0;
    batchfit_cache_entry e;
    int rc = batchfit_cache_load(ctx, dir, key, &e);
    if (rc == BATCHFIT_OK && (e.batch_size == 0 || strcmp(e.key, key) != 0 ||
                              strlen(e.description) >= sizeof e.description))
        abort();
    if (rc != BATCHFIT_OK && rc != BATCHFIT_E_PARSE)
        abort();
    unlink(path);
    return 0;
}
