/* Result JSON read back (batchfit plot): any input is rejected with a
 * message or gives a result that writes back as JSON and draws as SVG; the
 * written JSON reads back, and from then on reading and writing are a fixed
 * point (the first write may turn bytes that are not UTF-8 into \u00XX,
 * which read back as those code points). */
#include "fuzz.h"

#include "internal.h"

#include <stdlib.h>
#include <string.h>

int FUZZ_ENTRY(fuzz_result)(const uint8_t *data, size_t size)
{
    static batchfit_ctx *ctx;
    if (!ctx && batchfit_ctx_create(NULL, &ctx) != BATCHFIT_OK)
        return 0;
    batchfit_result *r = NULL;
    if (batchfit_result_from_json(ctx, (const char *)data, size, &r) != BATCHFIT_OK) {
        if (r || !batchfit_ctx_last_error(ctx)[0])
            abort();
        return 0;
    }
    const char *json = NULL, *svg = NULL;
    if (batchfit_result_json(ctx, r, &json) != BATCHFIT_OK ||
        batchfit_result_svg(ctx, r, &svg) != BATCHFIT_OK)
        abort();
    batchfit_result *again = NULL, *third = NULL;
    const char *json2 = NULL, *json3 = NULL;
    if (batchfit_result_from_json(ctx, json, strlen(json), &again) != BATCHFIT_OK ||
        batchfit_result_json(ctx, again, &json2) != BATCHFIT_OK ||
        batchfit_result_from_json(ctx, json2, strlen(json2), &third) != BATCHFIT_OK ||
        batchfit_result_json(ctx, third, &json3) != BATCHFIT_OK || strcmp(json2, json3) != 0)
        abort();
    batchfit_result_free(third);
    batchfit_result_free(again);
    batchfit_result_free(r);
    return 0;
}
