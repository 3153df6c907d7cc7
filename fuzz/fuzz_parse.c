/* Sizes, percentages, counts, the requested size, the VRAM limit, strategy
 * names, parameter counts, precisions and optimizers: every parser of user
 * text. */
#include "fuzz.h"

#include "internal.h"

#include <stdlib.h>
#include <string.h>

int FUZZ_ENTRY(fuzz_parse)(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char err[512];
    uint64_t u;
    double d;
    batchfit_strategy s;
    if (batchfit__parse_size(text, "fuzz", &u, err, sizeof err) == BATCHFIT_OK && strlen(text) == 0)
        abort(); /* an empty size is never valid */
    if (batchfit__parse_percent(text, "fuzz", &d, err, sizeof err) == BATCHFIT_OK &&
        !(d >= 0.0 && d <= 1.0))
        abort();
    batchfit__parse_requested_size(text, "fuzz", &u, err, sizeof err);
    if (batchfit__parse_count(text, "fuzz", 1000, &u, err, sizeof err) == BATCHFIT_OK &&
        (u == 0 || u > 1000))
        abort();
    if (batchfit__resolve_vram_limit(text, "fuzz", &u, NULL, err, sizeof err) == BATCHFIT_OK &&
        u == 0)
        abort(); /* an explicit limit is never "no limit" */
    batchfit__parse_strategy(text, "fuzz", &s, err, sizeof err);
    if (batchfit__parse_params(text, "fuzz", &u, err, sizeof err) == BATCHFIT_OK && u == 0)
        abort(); /* a parameter count is never zero */
    batchfit_precision p;
    batchfit_optimizer o;
    batchfit__parse_precision(text, "fuzz", &p, err, sizeof err);
    batchfit__parse_optimizer(text, "fuzz", &o, err, sizeof err);
    free(text);
    return 0;
}
