/* Hyperparameter JSON: any input is either rejected or gives a size. */
#include "fuzz.h"

#include "internal.h"

int FUZZ_ENTRY(fuzz_json)(const uint8_t *data, size_t size)
{
    uint64_t v = 0;
    char err[512];
    batchfit__json_requested((const char *)data, size, "fuzz.json", &v, NULL, err, sizeof err);
    return 0;
}
