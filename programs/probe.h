/* batchfit probe, split by topic: options (probe_options.c), progress and
 * summary (probe_progress.c), the JSON export (probe_export.c) and the
 * session that ties them to the library's probe (probe.c). */
#ifndef BATCHFIT_CLI_PROBE_H
#define BATCHFIT_CLI_PROBE_H

#include "cli.h"

#define MAX_OOM_PATTERNS 32

typedef enum style {
    STYLE_NONE = 0,  /* no progress lines */
    STYLE_BASIC = 1, /* plain text */
    STYLE_COLOR = 2  /* colour on a terminal */
} style;

/* What the command line asked for. */
typedef struct probe_cli {
    batchfit_options opts;
    batchfit_command_options cmd;
    const char *device_spec;
    const char *export_json;
    const char *plot_path;   /* --plot FILE, NULL when not given */
    const char *hyperparameters;
    const char *vram_flag;   /* --vram-limit-gb's text, NULL when not given */
    const char *max_text;    /* --max's text, NULL when not given */
    const char *oom_patterns[MAX_OOM_PATTERNS + 1];
    unsigned oom_pattern_count;
    double timeout_seconds;
    double sample_interval_ms;
    uint64_t max_trials;
    int quiet, no_cache, no_cgroup;
    style style;
    char **command;
    int command_argc;
} probe_cli;

/* Where --export-json writes (probe_export.c). */
typedef enum export_kind {
    EXPORT_STDOUT,   /* "-": the final document on stdout */
    EXPORT_REPLACE,  /* a regular or new file: rewritten whole after every trial */
    EXPORT_IN_PLACE  /* a FIFO, pipe, terminal or device: the final document, in place */
} export_kind;

typedef struct export_target {
    const char *path;       /* as given; NULL: no export */
    export_kind kind;
    char resolved[4096];    /* EXPORT_REPLACE: the file to replace (links followed) */
    unsigned mode;          /* EXPORT_REPLACE: the permissions to keep */
} export_target;

/* One run of batchfit probe. */
typedef struct session {
    probe_cli *cli;
    batchfit_ctx *ctx;
    batchfit_device *device;
    batchfit_result *result;
    export_target export;
    int preamble_printed;
} session;

/* probe_options.c: fills c from argv (defaults first). Returns -1 to go on,
 * or the exit code (help, version, or 2 with the message printed). */
int probe_parse_args(batchfit_ctx *ctx, probe_cli *c, int argc, char **argv);
/* Prints a usage or value error naming the input; returns EXIT_USAGE. */
int probe_bad_value(const char *message);

/* probe_progress.c */
int probe_on_trial(const batchfit_result *result, const batchfit_trial *trial, void *userdata);
void probe_print_summary(const session *s);
void probe_print_failure(const session *s);
/* Set by the signal handler: the signal that asked batchfit to stop. */
extern volatile sig_atomic_t probe_interrupted;

/* probe_export.c: decides how path is written and checks, without
 * creating or opening it, that it can be (0, or -1 with the message
 * printed); then writes the result's JSON: after every trial where that is
 * safe, and at the end (0, or -1 with the message printed). */
int probe_export_prepare(export_target *t, const char *path);
int probe_export_json(const session *s, int final);

#endif
