/* --export-json: the library's JSON of the result, rewritten after every
 * trial where its target can be (a regular or new file) and written once at
 * the end otherwise; and --plot's SVG, at the end. How each is written is
 * output.c's. */
#include "probe.h"

typedef int (*render_fn)(batchfit_ctx *, const batchfit_result *, const char **);

static int export_rendered(const session *s, const export_target *t, render_fn render)
{
    const char *text = NULL;
    if (!t->path || !s->result)
        return 0;
    if (render(s->ctx, s->result, &text) != BATCHFIT_OK) {
        fprintf(stderr, "batchfit probe: %s %s: %s\n", t->flag, t->path,
                batchfit_ctx_last_error(s->ctx));
        return -1;
    }
    return cli_output_write(t, text, probe_interrupted);
}

int probe_export_json(const session *s, int final)
{
    if (!final && s->export.kind != EXPORT_REPLACE)
        return 0;
    return export_rendered(s, &s->export, batchfit_result_json);
}

int probe_stdout_is_a_document(const session *s)
{
    return (s->export.kind == EXPORT_STDOUT && s->export.path) ||
           (s->plot.kind == EXPORT_STDOUT && s->plot.path);
}

int probe_export_svg(const session *s)
{
    return export_rendered(s, &s->plot, batchfit_result_svg);
}
