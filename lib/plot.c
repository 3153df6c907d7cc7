/* The result as a picture: peak memory against batch size, as a
 * self-contained SVG (no scripts, fonts or external references; every text
 * escaped, so it is valid XML). Each trial is drawn where it was measured:
 * fits (green dot), too close to the budget (amber ring), out of memory at
 * the memory it needed at least (red cross with an arrow up: a lower bound),
 * over the budget (red ring), errors (black square on the axis). The fitted
 * line with its band, the budget, the margin and the VRAM limit as
 * horizontal lines, and the answer marked. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define WIDTH 900
#define HEIGHT 500
#define LEFT 90.0
#define RIGHT 640.0
#define TOP 60.0
#define BOTTOM 440.0

typedef struct plot {
    batchfit__buf *out;
    double x_max, y_max;
    double legend_y; /* where the next legend line goes */
} plot;

static double px(const plot *p, double batch)
{
    return LEFT + (RIGHT - LEFT) * batch / p->x_max;
}

static double py(const plot *p, double bytes)
{
    return BOTTOM - (BOTTOM - TOP) * bytes / p->y_max;
}

/* Text as XML 1.0 takes it: & < > " escaped. A trial's output is bytes, not always UTF-8:
 * a byte outside well-formed UTF-8 is written as the character of its
 * value (as the JSON's \u00XX), and U+FFFE and U+FFFF, well-formed but no
 * XML characters, as U+FFFD (either made the picture unreadable: a
 * Latin-1 "é" in an out-of-memory line). Other control bytes but tab and
 * newline are left out. */
static void put_text(batchfit__buf *b, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; p && *p;) {
        unsigned char c = *p;
        size_t n = c < 0x80 ? 1 : batchfit__utf8_length(p);
        if (c == '&')
            batchfit__buf_append(b, "&amp;", 5);
        else if (c == '<')
            batchfit__buf_append(b, "&lt;", 4);
        else if (c == '>')
            batchfit__buf_append(b, "&gt;", 4);
        else if (c == '"')
            batchfit__buf_append(b, "&quot;", 6);
        else if (c < 0x80 && (c >= 0x20 || c == '\t' || c == '\n'))
            batchfit__buf_append(b, (const char *)p, 1);
        else if (n == 0) {
            char latin[2] = {(char)(0xC0 | (c >> 6)), (char)(0x80 | (c & 0x3F))};
            batchfit__buf_append(b, latin, 2);
            n = 1;
        } else if (n == 3 && c == 0xEF && p[1] == 0xBF && (p[2] == 0xBE || p[2] == 0xBF))
            batchfit__buf_append(b, "\xEF\xBF\xBD", 3);
        else if (c >= 0x80)
            batchfit__buf_append(b, (const char *)p, n);
        p += n;
    }
}

/* A step of 1, 2 or 5 times a power of ten, about span/count. */
static double nice_step(double span, int count)
{
    double raw = span / count;
    double mag = pow(10.0, floor(log10(raw)));
    double f = raw / mag;
    return (f <= 1.0 ? 1.0 : f <= 2.0 ? 2.0 : f <= 5.0 ? 5.0 : 10.0) * mag;
}

static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};

static int unit_of(double bytes)
{
    int u = 0;
    while (u < 5 && bytes >= 1024.0 * 4)
        bytes /= 1024.0, u++;
    return u;
}

static void axes(plot *p)
{
    batchfit__buf *b = p->out;
    batchfit__buf_printf(b,
                         "<g stroke=\"#444\" stroke-width=\"1\">"
                         "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                         "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>\n",
                         LEFT, BOTTOM, RIGHT, BOTTOM, LEFT, BOTTOM, LEFT, TOP);
    double xs = nice_step(p->x_max, 6);
    if (xs < 1.0)
        xs = 1.0;
    for (double x = 0.0; x <= p->x_max + 1e-9; x += xs)
        batchfit__buf_printf(b,
                             "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                             "stroke=\"#444\"/><text x=\"%.1f\" y=\"%.1f\" "
                             "text-anchor=\"middle\">%.0f</text>\n",
                             px(p, x), BOTTOM, px(p, x), BOTTOM + 5, px(p, x), BOTTOM + 20, x);
    int u = unit_of(p->y_max);
    double scale = pow(1024.0, u);
    double ys = nice_step(p->y_max / scale, 6) * scale;
    for (double y = 0.0; y <= p->y_max + 1e-9; y += ys)
        batchfit__buf_printf(b,
                             "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                             "stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%.1f\" "
                             "text-anchor=\"end\">%g %s</text>\n",
                             LEFT, py(p, y), RIGHT, py(p, y), LEFT - 6, py(p, y) + 4, y / scale,
                             units[u]);
    batchfit__buf_printf(b,
                         "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">batch size</text>\n"
                         "<text transform=\"translate(20 %.1f) rotate(-90)\" "
                         "text-anchor=\"middle\">peak memory</text>\n",
                         (LEFT + RIGHT) / 2, BOTTOM + 42, (TOP + BOTTOM) / 2);
}

static void legend(plot *p, const char *swatch, const char *label)
{
    batchfit__buf_printf(p->out, "<g transform=\"translate(%.1f %.1f)\">%s<text x=\"26\" y=\"4\">",
                         RIGHT + 24, p->legend_y, swatch);
    put_text(p->out, label);
    batchfit__buf_append(p->out, "</text></g>\n", 12);
    p->legend_y += 22;
}

/* A horizontal line across the plot, with its name in the legend. */
static void level(plot *p, double bytes, const char *style, const char *what)
{
    char size[32], label[96], swatch[160];
    if (bytes > p->y_max)
        return;
    batchfit_format_bytes(bytes, size, sizeof size);
    snprintf(label, sizeof label, "%s %s", what, size);
    batchfit__buf_printf(p->out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" %s/>\n",
                         LEFT, py(p, bytes), RIGHT, py(p, bytes), style);
    snprintf(swatch, sizeof swatch, "<line x1=\"0\" y1=\"0\" x2=\"20\" y2=\"0\" %s/>", style);
    legend(p, swatch, label);
}

static void marker(batchfit__buf *b, const char *kind, double x, double y)
{
    if (strcmp(kind, "fits") == 0)
        batchfit__buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"#2a9d3a\"/>", x, y);
    else if (strcmp(kind, "close") == 0)
        batchfit__buf_printf(b,
                             "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"none\" "
                             "stroke=\"#d99000\" stroke-width=\"2.5\"/>",
                             x, y);
    else if (strcmp(kind, "over") == 0)
        batchfit__buf_printf(b,
                             "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"none\" "
                             "stroke=\"#c62828\" stroke-width=\"2.5\"/>",
                             x, y);
    else if (strcmp(kind, "oom") == 0)
        batchfit__buf_printf(b,
                             "<path d=\"M%.1f %.1fl10 10M%.1f %.1fl-10 10M%.1f %.1fv-14"
                             "l-4 6m4 -6l4 6\" stroke=\"#c62828\" stroke-width=\"2.5\" "
                             "fill=\"none\"/>",
                             x - 5, y - 5, x + 5, y - 5, x, y - 6);
    else
        batchfit__buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\" fill=\"#111\"/>",
                             x - 4.5, y - 4.5);
}

static void trials(plot *p, const batchfit_result *r)
{
    batchfit__buf *b = p->out;
    for (size_t i = 0; i < r->trial_count; i++) {
        const batchfit_trial *t = &r->trials[i];
        const char *kind = t->outcome == BATCHFIT_ERROR ? "error"
                           : t->over_budget             ? "over"
                           : t->outcome == BATCHFIT_OOM  ? "oom"
                           : t->accepted                 ? "fits"
                                                         : "close";
        /* An error, or an out-of-memory with nothing measured, sits on the
         * axis: its memory is not known. */
        double y = t->peak_known ? py(p, (double)t->peak_bytes) : BOTTOM;
        if (t->peak_known && (double)t->peak_bytes > p->y_max)
            y = TOP;
        double x = px(p, (double)t->batch);
        char peak[32] = "unknown";
        if (t->peak_known)
            batchfit_format_bytes((double)t->peak_bytes, peak, sizeof peak);
        /* "needed at least unknown" said nothing: an unread need is said so. */
        const char *said = !t->peak_known               ? "memory"
                           : t->outcome == BATCHFIT_OOM ? "needed at least"
                                                        : "peak";
        batchfit__buf_printf(b, "<g><title>trial %zu: batch %llu %s, %s %s, %.2f s", i + 1,
                             (unsigned long long)t->batch,
                             strcmp(kind, "close") == 0 ? "fits, too close to the budget"
                             : strcmp(kind, "over") == 0 ? "over the budget"
                                                         : batchfit_outcome_name(t->outcome),
                             said, peak, t->seconds);
        if (t->message[0]) {
            batchfit__buf_append(b, ": ", 2);
            put_text(b, t->message);
        }
        batchfit__buf_append(b, "</title>", 8);
        marker(b, kind, x, y);
        batchfit__buf_printf(b,
                             "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#666\">%zu"
                             "</text></g>\n",
                             x + 6, y + 14, i + 1);
    }
}

static void fit_line(plot *p, const batchfit_result *r)
{
    const batchfit_fit *f = &r->fit;
    if (!f->valid)
        return;
    batchfit__buf *b = p->out;
    double spread = r->budget.peak_spread > 0 ? r->budget.peak_spread : 0.0;
    double x0 = 0.0, x1 = p->x_max;
    double y0 = f->intercept_bytes, y1 = f->intercept_bytes + f->bytes_per_sample * x1;
    double w0 = f->max_residual_bytes + spread * fabs(y0);
    double w1 = f->max_residual_bytes + spread * fabs(y1);
    /* A fit from a hand-edited document (1e308 bytes and -1e308 a sample)
     * reaches infinity: "-inf" is no coordinate, and no line is drawn. */
    if (!isfinite(y0 + w0) || !isfinite(y1 + w1) || !isfinite(y0 - w0) || !isfinite(y1 - w1))
        return;
    batchfit__buf_printf(b,
                         "<g clip-path=\"url(#area)\"><path d=\"M%.1f %.1fL%.1f %.1fL%.1f "
                         "%.1fL%.1f %.1fZ\" fill=\"#1f6feb\" fill-opacity=\"0.12\"/>"
                         "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                         "stroke=\"#1f6feb\" stroke-width=\"1.5\"/></g>\n",
                         px(p, x0), py(p, y0 + w0), px(p, x1), py(p, y1 + w1), px(p, x1),
                         py(p, y1 - w1), px(p, x0), py(p, y0 - w0), px(p, x0), py(p, y0),
                         px(p, x1), py(p, y1));
    char a[32], s[32], label[128];
    batchfit_format_bytes(f->intercept_bytes, a, sizeof a);
    batchfit_format_bytes(f->bytes_per_sample, s, sizeof s);
    snprintf(label, sizeof label, "fit %s + %s/sample", a, s);
    legend(p, "<rect x=\"0\" y=\"-6\" width=\"20\" height=\"12\" fill=\"#1f6feb\" "
              "fill-opacity=\"0.12\"/><line x1=\"0\" y1=\"0\" x2=\"20\" y2=\"0\" "
              "stroke=\"#1f6feb\" stroke-width=\"1.5\"/>",
           label);
    snprintf(label, sizeof label, "band: residual %s, spread %.1f%%",
             (batchfit_format_bytes(f->max_residual_bytes, a, sizeof a), a), spread * 100.0);
    legend(p, "", label);
}

static void render(plot *p, const batchfit_result *r)
{
    batchfit__buf *b = p->out;
    const batchfit_budget *bud = &r->budget;
    /* The ranges: every trial, the answer, the budget and what was usable. */
    double x_max = (double)r->batch_size, y_max = 0.0;
    for (size_t i = 0; i < r->trial_count; i++) {
        const batchfit_trial *t = &r->trials[i];
        if ((double)t->batch > x_max)
            x_max = (double)t->batch;
        if (t->peak_known && (double)t->peak_bytes > y_max)
            y_max = (double)t->peak_bytes;
    }
    if (bud->known && (double)bud->usable_bytes > y_max)
        y_max = (double)bud->usable_bytes;
    /* A VRAM limit far above the budget would flatten everything else. */
    if (bud->vram_limit_bytes && (double)bud->vram_limit_bytes <= 1.5 * y_max)
        y_max = (double)bud->vram_limit_bytes;
    p->x_max = x_max > 0 ? x_max * 1.08 : 1.0;
    if (p->x_max < 4)
        p->x_max = 4;
    p->y_max = y_max > 0 ? y_max * 1.1 : 1024.0;
    p->legend_y = TOP;

    batchfit__buf_printf(b,
                         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                         "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                         "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
                         "<defs><clipPath id=\"area\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                         "height=\"%.1f\"/></clipPath></defs>\n"
                         "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
                         WIDTH, HEIGHT, WIDTH, HEIGHT, LEFT, TOP, RIGHT - LEFT, BOTTOM - TOP);
    batchfit__buf_printf(b, "<text x=\"90\" y=\"26\" font-size=\"15\" font-weight=\"bold\">");
    if (r->batch_size)
        batchfit__buf_printf(b, "batchfit: batch size %llu", (unsigned long long)r->batch_size);
    else
        batchfit__buf_printf(b, "batchfit: no batch size settled");
    batchfit__buf_printf(b, " (%zu trials, %s strategy)", r->trial_count,
                         batchfit_strategy_name(r->strategy) ? batchfit_strategy_name(r->strategy)
                                                             : "?");
    /* The ranks of a job agreed on another size (the smallest rank's):
     * that is the one to train with, not this rank's own. */
    if (r->agreed && r->agreed_status == BATCHFIT_OK && r->agreed_batch_size != r->batch_size)
        batchfit__buf_printf(b, "; the job trains with %llu",
                             (unsigned long long)r->agreed_batch_size);
    batchfit__buf_printf(b, "</text>\n<text x=\"90\" y=\"44\" fill=\"#555\">");
    put_text(b, r->device_spec ? r->device_spec : "no device");
    if (r->device.name[0] && (!r->device_spec || strcmp(r->device.name, r->device_spec) != 0) &&
        strcmp(r->device.name, r->device.kind) != 0) {
        batchfit__buf_append(b, " ", 1);
        put_text(b, r->device.name);
    }
    if (r->error) {
        batchfit__buf_append(b, ": ", 2);
        put_text(b, r->error);
    }
    batchfit__buf_append(b, "</text>\n", 8);
    axes(p);
    if (bud->known) {
        /* The margin: the band between the budget and what was usable. */
        batchfit__buf_printf(b,
                             "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                             "fill=\"#c62828\" fill-opacity=\"0.08\"/>\n",
                             LEFT, py(p, (double)bud->usable_bytes), RIGHT - LEFT,
                             py(p, (double)bud->budget_bytes) - py(p, (double)bud->usable_bytes));
        level(p, (double)bud->budget_bytes, "stroke=\"#c62828\" stroke-width=\"1.5\"", "budget");
        /* Under a spread, a trial counts only below the budget shrunk so that
         * a re-run stays within it: that line is where the answer stops. */
        if (bud->peak_spread > 0)
            level(p,
                  (double)bud->budget_bytes * (1.0 - bud->peak_spread) /
                      (1.0 + bud->peak_spread),
                  "stroke=\"#d99000\" stroke-width=\"1\" stroke-dasharray=\"4 3\"",
                  "accepted below");
        char margin[32], label[96];
        level(p, (double)bud->usable_bytes,
              "stroke=\"#c62828\" stroke-width=\"1\" stroke-dasharray=\"6 4\"", "usable");
        batchfit_format_bytes((double)bud->margin_bytes, margin, sizeof margin);
        snprintf(label, sizeof label, "margin %s held back (shaded)", margin);
        legend(p, "<rect x=\"0\" y=\"-6\" width=\"20\" height=\"12\" fill=\"#c62828\" "
                  "fill-opacity=\"0.08\"/>",
               label);
    }
    if (bud->vram_limit_bytes) {
        if ((double)bud->vram_limit_bytes <= p->y_max) {
            level(p, (double)bud->vram_limit_bytes,
                  "stroke=\"#7b1fa2\" stroke-width=\"1.5\" stroke-dasharray=\"2 3\"",
                  "VRAM limit");
        } else {
            char size[32], label[96];
            batchfit_format_bytes((double)bud->vram_limit_bytes, size, sizeof size);
            snprintf(label, sizeof label, "VRAM limit %s (above the chart)", size);
            legend(p, "", label);
        }
    }
    fit_line(p, r);
    if (r->batch_size) {
        double x = px(p, (double)r->batch_size);
        batchfit__buf_printf(b,
                             "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                             "stroke=\"#2a9d3a\" stroke-dasharray=\"3 3\"/>"
                             "<text x=\"%.1f\" y=\"%.1f\" fill=\"#2a9d3a\" "
                             "text-anchor=\"end\">batch_size=%llu</text>\n",
                             x, BOTTOM, x, TOP, x - 4, TOP + 12,
                             (unsigned long long)r->batch_size);
    }
    trials(p, r);
    p->legend_y += 8;
    legend(p, "<circle cx=\"10\" cy=\"0\" r=\"4.5\" fill=\"#2a9d3a\"/>", "fits");
    legend(p, "<circle cx=\"10\" cy=\"0\" r=\"5\" fill=\"none\" stroke=\"#d99000\" "
              "stroke-width=\"2.5\"/>",
           "fits, too close to the budget");
    legend(p, "<circle cx=\"10\" cy=\"0\" r=\"5\" fill=\"none\" stroke=\"#c62828\" "
              "stroke-width=\"2.5\"/>",
           "ran over the budget");
    legend(p, "<path d=\"M5 -5l10 10M15 -5l-10 10\" stroke=\"#c62828\" stroke-width=\"2.5\"/>",
           "out of memory (needed at least)");
    legend(p, "<rect x=\"5.5\" y=\"-4.5\" width=\"9\" height=\"9\" fill=\"#111\"/>",
           "error (memory unknown)");
    /* The first warning under the axis: the rest are in the JSON. */
    if (r->warning_count) {
        batchfit__buf_printf(b, "<text x=\"10\" y=\"%d\" font-size=\"11\" fill=\"#a15c00\">",
                             HEIGHT - 10);
        put_text(b, r->warnings[0]);
        batchfit__buf_printf(b, "%s</text>\n", r->warning_count > 1 ? " (and more)" : "");
    }
    batchfit__buf_append(b, "</svg>\n", 7);
}

int batchfit_result_svg(batchfit_ctx *ctx, const batchfit_result *result, const char **svg_out)
{
    if (!result || !svg_out)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "result svg: no result given");
    *svg_out = NULL;
    batchfit__buf b;
    batchfit__buf_init(&b, batchfit__result_allocator(result));
    plot p = {.out = &b};
    render(&p, result);
    if (!batchfit__buf_text(&b)) {
        batchfit__buf_free(&b);
        return batchfit__fail(ctx, BATCHFIT_E_NO_MEMORY, "out of memory drawing the result");
    }
    *svg_out = batchfit__result_set_svg(result, b.data);
    return BATCHFIT_OK;
}
