/* Command templates: a checked template expands to exactly the length it
 * reports, and a truncated expansion is a prefix of the full one. */
#include "fuzz.h"

#include "internal.h"

#include <stdlib.h>
#include <string.h>

int FUZZ_ENTRY(fuzz_template)(const uint8_t *data, size_t size)
{
    char *arg = malloc(size + 1);
    if (!arg)
        return 0;
    memcpy(arg, data, size);
    arg[size] = '\0';
    int has = 0;
    if (batchfit__template_check(arg, &has, NULL, 0) == BATCHFIT_OK) {
        uint64_t batch = size * 7919u + 1;
        size_t need = batchfit__template_expand(arg, batch, NULL, 0);
        char *full = malloc(need + 1);
        char small[8];
        if (full) {
            if (batchfit__template_expand(arg, batch, full, need + 1) != need || strlen(full) != need)
                abort();
            batchfit__template_expand(arg, batch, small, sizeof small);
            if (strncmp(small, full, strlen(small)) != 0)
                abort();
            free(full);
        }
    }
    free(arg);
    return 0;
}
