/* Sim device specs: any text opens a device or fails cleanly, and an
 * opened device answers for its memory. */
#include "fuzz.h"

#include "internal.h"

#include <stdlib.h>
#include <string.h>

int FUZZ_ENTRY(fuzz_sim_spec)(const uint8_t *data, size_t size)
{
    char *spec = malloc(size + 5);
    if (!spec)
        return 0;
    memcpy(spec, "sim:", 4);
    memcpy(spec + 4, data, size);
    spec[size + 4] = '\0';
    batchfit_ctx *ctx = NULL;
    if (batchfit_ctx_create(NULL, &ctx) == BATCHFIT_OK) {
        batchfit_device *dev = NULL;
        if (batchfit_device_open(ctx, spec, &dev) == BATCHFIT_OK) {
            uint64_t total, free_bytes;
            if (batchfit_device_available(dev, NULL) &&
                (batchfit_device_memory(dev, &total, &free_bytes) != BATCHFIT_OK ||
                 free_bytes > total))
                abort();
            batchfit_device_free(dev);
        }
        batchfit_ctx_free(ctx);
    }
    free(spec);
    return 0;
}
