/* Shared declarations of the batchfit command line. The CLI is built on the
 * public header alone. */
#ifndef BATCHFIT_CLI_H
#define BATCHFIT_CLI_H

#include <batchfit.h>

#include <signal.h>
#include <stdio.h>

/* Exit codes (DESIGN.md). */
enum {
    EXIT_FOUND = 0,
    EXIT_INTERNAL = 1,
    EXIT_NOT_FOUND = 1, /* batchfit cache show: no entry under that key */
    EXIT_USAGE = 2,
    EXIT_MIN_DOES_NOT_FIT = 3,
    EXIT_TRIAL_ERROR = 4,
    EXIT_NO_DEVICE = 5,
    EXIT_EXPORT_FAILED = 6,
    EXIT_INTERRUPTED = 130
};

/* batchfit.c: a standard stream that started closed (`>&-`) holds
 * /dev/null instead, so no file batchfit opens takes its number (progress
 * would be written into it); an answer meant for a stdout that started
 * closed is still not written, and says so. */
extern int cli_stdout_closed;
/* rc, or EXIT_EXPORT_FAILED (said on stderr, "batchfit WHO: ...") where rc
 * is EXIT_FOUND and stdout could not take what was written to it (full,
 * or closed); a reader that went away (EPIPE) chose not to read. */
int cli_finish_output(const char *who, int rc);
/* A log callback that prints the library's warnings on stderr
 * ("batchfit: warning: ..."; userdata unused). */
void cli_log_warnings(batchfit_log_level level, const char *message, void *userdata);

int cli_probe(int argc, char **argv);
int cli_info(int argc, char **argv);
int cli_estimate(int argc, char **argv);
int cli_cache(int argc, char **argv);
int cli_plot(int argc, char **argv);
/* units.c: whether a size read as 1 to 1023 bytes was written with no unit
 * (1, with the refusal in msg, naming the units it could have meant, and
 * the percentage where percent_too and the option takes one): no one
 * sizing a training job means that (--memory-budget 300 ran against a
 * budget of 285 B). "300B" says bytes on purpose. */
int cli_bare_small_size(const char *flag, const char *value, uint64_t bytes, int percent_too,
                        char *msg, size_t len);
/* units.c: --margin as probe and estimate take it: a share of the memory
 * ("5%", into *fraction, *bytes set to 0; returns 1) or a size held back
 * ("2GiB", into *bytes, *fraction untouched; returns 0); -1 with the
 * refusal in msg (unparsable, or a size with no unit). */
int cli_parse_margin(batchfit_ctx *ctx, const char *value, double *fraction, uint64_t *bytes,
                     char *msg, size_t len);


/* Where a document batchfit writes goes (output.c). */
typedef enum export_kind {
    EXPORT_STDOUT,   /* "-": stdout */
    EXPORT_REPLACE,  /* a regular or new file: replaced whole, each time it is written */
    EXPORT_IN_PLACE, /* a FIFO, pipe, terminal or device: written in place */
    EXPORT_STDERR    /* the regular file stderr is redirected to: written through stderr */
} export_kind;

typedef struct export_target {
    const char *who;        /* the program, for messages ("batchfit probe") */
    const char *flag;       /* the option that named it, for messages */
    const char *path;       /* as given; NULL: none */
    export_kind kind;
    char resolved[4096];    /* EXPORT_REPLACE: the file to replace (links followed) */
    unsigned mode;          /* EXPORT_REPLACE: the permissions to keep */
} export_target;

/* Decides how path (given with flag to who) is written and checks, without
 * creating or opening it, that it can be (0, or -1 with the message
 * printed). */
int cli_output_prepare(export_target *t, const char *who, const char *flag, const char *path);
/* Whether two targets are one file (however named) or both stdout. */
int cli_output_same(const export_target *a, const export_target *b);
/* Writes text to a prepared target (0, or -1 with the message printed).
 * interrupted: batchfit was told to stop, so a FIFO is written only where
 * a reader is already there (a signal never leaves batchfit waiting). */
int cli_output_write(const export_target *t, const char *text, int interrupted);

/* A JSON writer over a FILE: it places commas and escapes strings. */
typedef struct json_writer {
    FILE *f;
    int depth;
    int need_comma[32];
} json_writer;

void jw_begin(json_writer *w, FILE *f);
void jw_object(json_writer *w, const char *key);
void jw_array(json_writer *w, const char *key);
void jw_end_object(json_writer *w);
void jw_end_array(json_writer *w);
void jw_string(json_writer *w, const char *key, const char *value); /* NULL value: null */
void jw_u64(json_writer *w, const char *key, unsigned long long value);
void jw_i64(json_writer *w, const char *key, long long value);
void jw_double(json_writer *w, const char *key, double value);
void jw_bool(json_writer *w, const char *key, int value);
void jw_null(json_writer *w, const char *key);

#endif
