/* A minimal JSON writer for --export-json and info --json. */
#include "cli.h"

#include <math.h>

void jw_begin(json_writer *w, FILE *f)
{
    w->f = f;
    w->depth = 0;
    w->need_comma[0] = 0;
}

static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

/* Writes the separator and the key (inside objects) before a value. */
static void prefix(json_writer *w, const char *key)
{
    if (w->need_comma[w->depth])
        fputc(',', w->f);
    if (w->depth > 0) {
        fputc('\n', w->f);
        for (int i = 0; i < w->depth; i++)
            fputs("  ", w->f);
    }
    w->need_comma[w->depth] = 1;
    if (key) {
        put_string(w->f, key);
        fputs(": ", w->f);
    }
}

static void open_container(json_writer *w, const char *key, char c)
{
    prefix(w, key);
    fputc(c, w->f);
    if (w->depth < 31)
        w->depth++;
    w->need_comma[w->depth] = 0;
}

static void close_container(json_writer *w, char c)
{
    int had = w->need_comma[w->depth];
    if (w->depth > 0)
        w->depth--;
    if (had) {
        fputc('\n', w->f);
        for (int i = 0; i < w->depth; i++)
            fputs("  ", w->f);
    }
    fputc(c, w->f);
    if (w->depth == 0)
        fputc('\n', w->f);
}

void jw_object(json_writer *w, const char *key)
{
    open_container(w, key, '{');
}

void jw_array(json_writer *w, const char *key)
{
    open_container(w, key, '[');
}

void jw_end_object(json_writer *w)
{
    close_container(w, '}');
}

void jw_end_array(json_writer *w)
{
    close_container(w, ']');
}

void jw_string(json_writer *w, const char *key, const char *value)
{
    prefix(w, key);
    if (value)
        put_string(w->f, value);
    else
        fputs("null", w->f);
}

void jw_u64(json_writer *w, const char *key, unsigned long long value)
{
    prefix(w, key);
    fprintf(w->f, "%llu", value);
}

void jw_i64(json_writer *w, const char *key, long long value)
{
    prefix(w, key);
    fprintf(w->f, "%lld", value);
}

void jw_double(json_writer *w, const char *key, double value)
{
    prefix(w, key);
    if (isfinite(value))
        fprintf(w->f, "%.17g", value);
    else
        fputs("null", w->f);
}

void jw_bool(json_writer *w, const char *key, int value)
{
    prefix(w, key);
    fputs(value ? "true" : "false", w->f);
}

void jw_null(json_writer *w, const char *key)
{
    prefix(w, key);
    fputs("null", w->f);
}
