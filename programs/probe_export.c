/* --export-json: the library's JSON of the result, written to stdout at
 * the end (-) or rewritten whole after every trial through a temporary file
 * renamed over the target, so a crash at any point leaves the last complete
 * state. */
#include "probe.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static int write_all(FILE *f, const char *text)
{
    size_t len = strlen(text);
    return fwrite(text, 1, len, f) == len ? 0 : -1;
}

void probe_export_json(const session *s, int final)
{
    const char *path = s->cli->export_json;
    const char *json = NULL;
    if (!path || !s->result)
        return;
    if (batchfit_result_json(s->ctx, s->result, &json) != BATCHFIT_OK) {
        fprintf(stderr, "batchfit probe: --export-json %s: %s\n", path,
                batchfit_ctx_last_error(s->ctx));
        return;
    }
    if (strcmp(path, "-") == 0) {
        if (final)
            write_all(stdout, json);
        return;
    }
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp) {
        fprintf(stderr, "batchfit probe: --export-json %s: the path is too long\n", path);
        return;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "batchfit probe: --export-json %s: %s\n", path, strerror(errno));
        return;
    }
    int bad = write_all(f, json) != 0 || ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        fprintf(stderr, "batchfit probe: --export-json %s: %s\n", path, strerror(errno));
        remove(tmp);
    }
}
