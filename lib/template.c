/* Command templates: "{batch}" in an argument becomes the batch size;
 * "{{" and "}}" stand for literal braces. Any other brace is an error, found
 * when the template is checked, before anything runs. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

int batchfit__template_check(const char *arg, int *has_placeholder, char *err, size_t err_len)
{
    for (const char *p = arg; *p; p++) {
        if (p[0] == '{' && p[1] == '{') {
            p++;
        } else if (p[0] == '}' && p[1] == '}') {
            p++;
        } else if (strncmp(p, "{batch}", 7) == 0) {
            *has_placeholder = 1;
            p += 6;
        } else if (*p == '{' || *p == '}') {
            batchfit__errf(err, err_len,
                           "command argument \"%s\": unexpected '%c' at offset %ld (use {batch} "
                           "for the batch size, {{ and }} for literal braces)",
                           arg, *p, (long)(p - arg));
            return BATCHFIT_E_INVALID_ARGUMENT;
        }
    }
    return BATCHFIT_OK;
}

size_t batchfit__template_expand(const char *arg, uint64_t batch, char *out, size_t out_len)
{
    char digits[24];
    int nd = snprintf(digits, sizeof digits, "%llu", (unsigned long long)batch);
    size_t n = 0;
    for (const char *p = arg; *p; p++) {
        const char *piece = p;
        size_t len = 1;
        if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
            p++;
        } else if (strncmp(p, "{batch}", 7) == 0) {
            piece = digits;
            len = (size_t)nd;
            p += 6;
        }
        for (size_t k = 0; k < len; k++, n++)
            if (out && n + 1 < out_len)
                out[n] = piece[k];
    }
    if (out && out_len)
        out[n < out_len ? n : out_len - 1] = '\0';
    return n;
}
