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
    double sample_interval_ms; /* 0: not given (20 ms) */
    uint64_t max_trials;
    int quiet, no_cache, no_cgroup;
    int mpi;                 /* one rank of an MPI job (probe_mpi.c) */
    int parallel;            /* --parallel: one trial on each identical GPU at once */
    batchfit_agree_mode agree;
    int agree_given;         /* --agree was given (it needs --mpi) */
    style style;
    char **command;
    int command_argc;
} probe_cli;

typedef struct probe_mpi probe_mpi;

/* One run of batchfit probe. */
typedef struct session {
    probe_mpi *mpi;          /* NULL unless --mpi */
    probe_cli *cli;
    batchfit_ctx *ctx;
    batchfit_device *device;
    batchfit_result *result;
    export_target export;
    export_target plot;      /* --plot's SVG, written as --export-json's file is, at the end */
    int preamble_printed;
} session;

/* probe_options.c: fills c from argv (defaults first). Returns -1 to go on,
 * or the exit code (help, version, or 2 with the message printed). */
int probe_parse_args(batchfit_ctx *ctx, probe_cli *c, int argc, char **argv);
/* Prints a usage or value error naming the input (kept in
 * probe_refusal for the JSON); returns EXIT_USAGE. */
int probe_bad_value(const char *message);
extern char probe_refusal[1024];
/* The --export-json target in argv, if any (looked for before parsing, so
 * that a refused option is reported there too). */
const char *probe_find_export(int argc, char **argv);
/* Whether flag (one that takes no value) stands among the options, before
 * the command: for a refusal that must still join an --mpi job. */
int probe_find_flag(int argc, char **argv, const char *flag);

/* probe_mpi.c: loads libbatchfit-mpi and joins the job (-1 to go on, or
 * an exit code with the message printed); the rank, the node-local rank,
 * the ranks (for trials across them);
 * whether another rank announced a failure; announcing ours; the agreement
 * (which aborts the job when this rank cannot take part); the end. */
int probe_mpi_start(probe_mpi **out);
int probe_mpi_rank(const probe_mpi *m);
int probe_mpi_size(const probe_mpi *m);
int probe_mpi_local_rank(const probe_mpi *m);
/* How many ranks share this rank's node (1 without --mpi). */
int probe_mpi_local_size(const probe_mpi *m);
const batchfit_ranks *probe_mpi_ranks(const probe_mpi *m);
int probe_mpi_peer_failed(probe_mpi *m);
void probe_mpi_announce_failure(probe_mpi *m);
/* Ends the whole job (MPI_Abort) after saying why: for a rank that could
 * not take part in an exchange the others wait in. Does not return. */
void probe_mpi_abort(probe_mpi *m, batchfit_ctx *ctx);
int probe_mpi_agree(probe_mpi *m, batchfit_ctx *ctx, batchfit_agree_mode mode,
                    batchfit_result *result);
void probe_mpi_finish(probe_mpi *m);

/* probe_progress.c */
int probe_on_trial(const batchfit_result *result, const batchfit_trial *trial, void *userdata);
void probe_print_summary(const session *s);
void probe_print_failure(const session *s);
/* Rank 0's report of the ranks' agreement. */
void probe_print_agreement(const session *s);
/* Set by the signal handler: the signal that asked batchfit to stop. */
extern volatile sig_atomic_t probe_interrupted;

/* probe_export.c: writes the result's JSON to --export-json's target:
 * after every trial where that is safe, and at the end; and its SVG
 * picture to --plot's, at the end (0, or -1 with the message printed). */
int probe_export_json(const session *s, int final);
int probe_export_svg(const session *s);
/* Whether the JSON or the picture is stdout's document (--export-json -,
 * --plot -): no answer line goes after it. */
int probe_stdout_is_a_document(const session *s);

#endif
