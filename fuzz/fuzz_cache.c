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
    batchfit_cache_entry e;
    char err[512];
    int rc = batchfit_cache_load(dir, key, &e, err, sizeof err);
    if (rc == 1 && (e.batch_size == 0 || strcmp(e.key, key) != 0 ||
                    strlen(e.description) >= sizeof e.description))
        abort();
    unlink(path);
    return 0;
}
