/* Sizes given on the command line with no unit: shared by batchfit probe
 * and batchfit estimate. */
#include "cli.h"

#include <string.h>

int cli_parse_margin(batchfit_ctx *ctx, const char *value, double *fraction, uint64_t *bytes,
                     char *msg, size_t len)
{
    size_t n = strlen(value);
    if (n && value[n - 1] == '%') {
        if (batchfit_parse_percent(ctx, value, "--margin", fraction) != BATCHFIT_OK) {
            snprintf(msg, len, "%s", batchfit_ctx_last_error(ctx));
            return -1;
        }
        *bytes = 0;
        return 1;
    }
    if (batchfit_parse_size(ctx, value, "--margin", bytes) != BATCHFIT_OK) {
        snprintf(msg, len, "%s", batchfit_ctx_last_error(ctx));
        return -1;
    }
    return cli_bare_small_size("--margin", value, *bytes, 1, msg, len) ? -1 : 0;
}

int cli_bare_small_size(const char *flag, const char *value, uint64_t bytes, int percent_too,
                        char *msg, size_t len)
{
    /* A unit is letters ("B", "MiB"): "5" and "5." name none. */
    for (const char *c = value; *c; c++)
        if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z'))
            return 0;
    if (bytes == 0 || bytes >= 1024)
        return 0;
    unsigned long long b = (unsigned long long)bytes;
    /* A percentage is offered only where it is one the option takes. */
    char percent[64] = "";
    if (percent_too && b < 100)
        snprintf(percent, sizeof percent, ", or %llu%% of the usable memory", b);
    snprintf(msg, len,
             "%s: \"%s\" has no unit and would be %llu bytes; give a unit (%lluMiB, %lluGiB%s), "
             "or %lluB for bytes",
             flag, value, b, b, b, percent, b);
    return 1;
}
