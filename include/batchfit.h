/*
 * batchfit.h - find the largest batch size that fits a training step into
 * accelerator memory, by measuring it.
 *
 * This is the only public header of libbatchfit. The command-line tool is
 * built on it alone.
 *
 * Ownership in one paragraph: every object the library hands out (context,
 * device, device list, result) has a matching *_free function that accepts
 * NULL. Strings and arrays inside a result belong to the result. Every
 * allocation the library makes goes through the allocator given to
 * batchfit_ctx_create().
 *
 * Errors in one paragraph: every call that can fail returns a batchfit_code
 * (BATCHFIT_OK = 0) and leaves the detail, naming the input and where it came
 * from, in batchfit_ctx_last_error() of the context it was given.
 *
 * Versioned structs: a struct that crosses the API and may grow starts with
 * struct_size, which the caller sets to sizeof the struct it was compiled
 * with (the *_init functions do). The library reads a struct as "at least
 * this big": fields past the caller's struct_size take their defaults, so a
 * program built against an older header keeps working.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef BATCHFIT_H
#define BATCHFIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(BATCHFIT_BUILDING) && defined(__GNUC__)
#define BATCHFIT_API __attribute__((visibility("default")))
#else
#define BATCHFIT_API
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                  */
/* ------------------------------------------------------------------------ */

#define BATCHFIT_VERSION_MAJOR 0
#define BATCHFIT_VERSION_MINOR 1
#define BATCHFIT_VERSION_PATCH 0
#define BATCHFIT_VERSION_NUMBER \
    (BATCHFIT_VERSION_MAJOR * 10000 + BATCHFIT_VERSION_MINOR * 100 + BATCHFIT_VERSION_PATCH)
#define BATCHFIT_VERSION_STRING "0.1.0"

/* The version of the library actually loaded, as BATCHFIT_VERSION_NUMBER
 * encodes it; compare with the macro to detect a header/library mismatch. */
BATCHFIT_API unsigned batchfit_version_number(void);
/* The same as a string, e.g. "0.1.0". Static storage. */
BATCHFIT_API const char *batchfit_version_string(void);

/* ------------------------------------------------------------------------ */
/* Error codes                                                              */
/* ------------------------------------------------------------------------ */

/* X(NAME, value, description). Values are only ever appended, never
 * renumbered. */
#define BATCHFIT_ERROR_MAP(X)                                                        \
    X(OK, 0, "success")                                                              \
    X(INVALID_ARGUMENT, 1, "invalid argument")                                       \
    X(NO_MEMORY, 2, "the library could not allocate host memory")                    \
    X(NO_DEVICE, 3, "no usable device")                                              \
    X(MIN_DOES_NOT_FIT, 4, "even the minimum batch size does not fit")               \
    X(TRIAL_ERROR, 5, "a trial failed with an error that is not out-of-memory")      \
    X(ABORTED, 6, "aborted by a callback")                                           \
    X(DEVICE, 7, "the device reported an error")                                     \
    X(TRIAL_LIMIT, 8, "the trial limit was reached before any batch size fitted")    \
    X(PARSE, 9, "a value could not be parsed")                                       \
    X(NOT_FOUND, 10, "no such entry")                                                \
    X(OUTPUT, 11, "an output of the answer could not be written")

typedef enum batchfit_code {
#define BATCHFIT_X_ENUM(name, value, text) BATCHFIT_E_##name = value,
    BATCHFIT_ERROR_MAP(BATCHFIT_X_ENUM)
#undef BATCHFIT_X_ENUM
} batchfit_code;

#define BATCHFIT_OK BATCHFIT_E_OK

/* "BATCHFIT_E_NO_MEMORY: the library could not allocate host memory";
 * static storage; an unknown code gives "BATCHFIT_E_UNKNOWN: unknown error". */
BATCHFIT_API const char *batchfit_strerror(int code);
/* The bare name, e.g. "NO_MEMORY", or "UNKNOWN". */
BATCHFIT_API const char *batchfit_error_name(int code);
/* The batchfit command's exit status for a code: 0 found, 2 bad usage or
 * input (nothing was run), 3 even the minimum does not fit (or the trial
 * limit came first), 4 a trial failed with an error that is not
 * out-of-memory, 5 no usable device, 130 interrupted, 1 anything else. */
BATCHFIT_API int batchfit_exit_status(int code);

/* ------------------------------------------------------------------------ */
/* Context: allocator, logging, last error                                  */
/* ------------------------------------------------------------------------ */

typedef struct batchfit_ctx_s batchfit_ctx;

/* Every allocation the library makes goes through these. A NULL return is
 * handled on every path (the call fails with BATCHFIT_E_NO_MEMORY and
 * releases what it took). */
typedef struct batchfit_allocator {
    void *(*alloc)(size_t size, void *userdata);
    void *(*realloc)(void *ptr, size_t size, void *userdata);
    void (*free)(void *ptr, void *userdata);
    void *userdata;
} batchfit_allocator;

typedef enum batchfit_log_level {
    BATCHFIT_LOG_DEBUG = 0,
    BATCHFIT_LOG_INFO = 1,
    BATCHFIT_LOG_WARN = 2,
    BATCHFIT_LOG_ERROR = 3
} batchfit_log_level;

/* message is a complete line without a trailing newline; valid only during
 * the call. */
typedef void (*batchfit_log_fn)(batchfit_log_level level, const char *message, void *userdata);

/* Creates a context. allocator may be NULL (the C library's malloc family);
 * it is copied. Returns BATCHFIT_OK or BATCHFIT_E_NO_MEMORY (*out = NULL). */
BATCHFIT_API int batchfit_ctx_create(const batchfit_allocator *allocator, batchfit_ctx **out);
/* Frees the context; NULL is fine. Devices and results made with it must
 * not be used after their context is freed, except batchfit_result_free(). */
BATCHFIT_API void batchfit_ctx_free(batchfit_ctx *ctx);
/* Log lines at or above min_level go to fn; fn = NULL silences the log
 * (the default). */
BATCHFIT_API void batchfit_ctx_set_log(batchfit_ctx *ctx, batchfit_log_fn fn, void *userdata,
                                       batchfit_log_level min_level);
/* The detail of the last failed call on this context ("" if none). Owned by
 * the context, valid until the next call on it. */
BATCHFIT_API const char *batchfit_ctx_last_error(const batchfit_ctx *ctx);

/* ------------------------------------------------------------------------ */
/* Parsing user input                                                       */
/* ------------------------------------------------------------------------ */
/* Each parser takes the name of the input and where it came from ("--max",
 * "environment variable VRAM_LIMIT_GB", "hyperparameters.json") and on
 * failure returns BATCHFIT_E_PARSE with a message naming both in the
 * context's last error. */

/* A size such as "12GiB", "1.5 GB", "4096", "512MiB": B, KiB/MiB/GiB/TiB
 * (powers of 1024), KB/MB/GB/TB (powers of 1000), units case-insensitive; a
 * plain number is bytes. Malformed, negative, fractional bytes and overflow
 * are errors. */
BATCHFIT_API int batchfit_parse_size(batchfit_ctx *ctx, const char *text, const char *what,
                                     uint64_t *bytes_out);

/* Writes bytes for people: "512 B", "1.50 GiB" (binary units, two decimals). */
BATCHFIT_API void batchfit_format_bytes(double bytes, char *buf, size_t len);

/* A fraction written as a percentage, "5%" or "0.5%", into [0, 1]. */
BATCHFIT_API int batchfit_parse_percent(batchfit_ctx *ctx, const char *text, const char *what,
                                        double *fraction_out);

/* The requested maximum from a hyperparameter value. NULL, "", "0", "none"
 * and "null" (any case, surrounding blanks ignored) mean "the device
 * decides" and give 0; anything else must be a positive integer. Errors
 * quote the value. */
BATCHFIT_API int batchfit_parse_requested_size(batchfit_ctx *ctx, const char *text,
                                               const char *what, uint64_t *size_out);

/* A positive whole number (a count such as a minimum batch size, a dataset
 * size or a trial limit), at most max_value. */
BATCHFIT_API int batchfit_parse_count(batchfit_ctx *ctx, const char *text, const char *what,
                                      uint64_t max_value, uint64_t *value_out);

/* Whether text (one line or several, as an exception's message or a
 * program's output) says it ran out of memory by one of the built-in
 * signatures that classify a child's output (the PyTorch CUDA and CPU
 * allocators, cuBLAS, cuDNN, XLA, TensorFlow, MemoryError, bad_alloc,
 * ENOMEM, "out of memory", ...; lines that only mention memory, such as
 * "no out of memory errors", do not count). Sets *matched to 1 and writes
 * the signature's name into source (when not NULL; cut to source_len) where
 * a line matches, *matched to 0 and source to "" where none does. Returns
 * BATCHFIT_OK, BATCHFIT_E_INVALID_ARGUMENT (a NULL ctx, text or matched;
 * *matched is then 0 where it can be written) or BATCHFIT_E_NO_MEMORY. The
 * Python package classifies a step's exceptions with it, so a step and a
 * command are judged alike. */
BATCHFIT_API int batchfit_oom_text(batchfit_ctx *ctx, const char *text, int *matched,
                                   char *source, size_t source_len);

/* Resolves the VRAM limit: explicit (a flag's text, NULL when the flag was
 * not given) beats the environment variable VRAM_LIMIT_GB, which beats
 * BATCHFIT_VRAM_LIMIT_GB; an empty variable counts as unset. The value is in
 * GiB (2^30 bytes; fractions allowed); zero, negative, NaN, infinite or
 * non-numeric values are errors. On success *bytes_out is the limit (0 = no
 * limit) and source_out (if not NULL) points to a static string naming where
 * it came from ("--vram-limit-gb", "environment variable VRAM_LIMIT_GB", ...,
 * or "none"). flag_name names the flag in messages (NULL: "--vram-limit-gb"). */
BATCHFIT_API int batchfit_resolve_vram_limit(batchfit_ctx *ctx, const char *explicit_text,
                                             const char *flag_name, uint64_t *bytes_out,
                                             const char **source_out);

/* The VRAM limit's flag and its help text: one source for the CLI's --help,
 * the man page and bindings (the Python package's VRAM_LIMIT_GB_FLAG and
 * VRAM_LIMIT_GB_HELP read them through the functions below). */
#define BATCHFIT_VRAM_LIMIT_GB_FLAG "--vram-limit-gb"
#define BATCHFIT_VRAM_LIMIT_GB_HELP                                                        \
    "cap the device memory a probe may use, in GiB (2^30 bytes; fractions allowed). "     \
    "Precedence: --vram-limit-gb, then VRAM_LIMIT_GB, then BATCHFIT_VRAM_LIMIT_GB; an "   \
    "empty variable counts as unset. Zero, negative, NaN, infinite or non-numeric values " \
    "are errors."
/* BATCHFIT_VRAM_LIMIT_GB_FLAG and BATCHFIT_VRAM_LIMIT_GB_HELP; static storage. */
BATCHFIT_API const char *batchfit_vram_limit_flag(void);
BATCHFIT_API const char *batchfit_vram_limit_help(void);

/* sizeof a public struct by its name ("batchfit_options", "batchfit_step",
 * "batchfit_step_report", "batchfit_command_options", "batchfit_fit",
 * "batchfit_recover_options", "batchfit_recover_plan"), or 0 for a name it
 * does not know: bindings that lay the structs out themselves (ctypes)
 * check their layout against the library they loaded. */
BATCHFIT_API size_t batchfit_sizeof(const char *type_name);

/* ------------------------------------------------------------------------ */
/* Devices                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct batchfit_device_s batchfit_device;

/* Opens a device from a spec:
 *   "auto"               the first NVIDIA GPU (cuda:0) when one is usable, else
 *                        the host; the choice and, when it falls back, why, are
 *                        logged (INFO / WARN) and batchfit_device_spec() names it.
 *   "host"               system RAM (MemTotal/MemAvailable), for CPU training.
 *   "cuda:N"             the N-th NVIDIA GPU the CUDA driver shows (so
 *                        CUDA_VISIBLE_DEVICES applies), through libcuda.so.1 and
 *                        libnvidia-ml.so.1 loaded at run time
 *                        (BATCHFIT_CUDA_LIBRARY / BATCHFIT_NVML_LIBRARY override
 *                        the paths). Without a driver the device is returned
 *                        unavailable, with the reason.
 *   "cuda:N,M,..."       several GPUs at once, in that order (at most
 *   "cuda:all"           BATCHFIT_MAX_GPUS, no repeats); "all" is every GPU the
 *                        driver shows and resolves to the list
 *                        (batchfit_device_spec() says "cuda:0,1,..."). For a
 *                        command that uses them all (torchrun): each GPU gets
 *                        its own budget and ballast, the command sees exactly
 *                        these GPUs, and a trial fits only if it fits on every
 *                        one (batchfit_probe_command; the in-process probe
 *                        refuses such a device). The device is unavailable
 *                        when any of its GPUs is, with that GPU's reason.
 *   "sim:KEY=VALUE,..."  a simulated device (below).
 * Returns BATCHFIT_E_INVALID_ARGUMENT / BATCHFIT_E_PARSE for a malformed
 * spec (the message names the key), BATCHFIT_E_NO_MEMORY. A device that
 * exists in the spec's grammar but cannot be used here is still returned,
 * with batchfit_device_available() = 0 and a reason.
 *
 * sim keys: capacity=SIZE (required), used=SIZE (memory already taken by
 * others, default 0), fixed=SIZE (the step's memory independent of the
 * batch: weights, optimizer state), per_sample=SIZE, granule=SIZE (every
 * allocation rounds up to it, default 2MiB), jump=BATCH:SIZE (a workspace of
 * SIZE from that batch size up; repeatable), noise=PCT (uniform trial-to-trial
 * spread of the step's peak, default 0%), seed=N, unavailable=REASON (the
 * device reports itself unusable, as a GPU without a driver would). */
BATCHFIT_API int batchfit_device_open(batchfit_ctx *ctx, const char *spec, batchfit_device **out);
BATCHFIT_API void batchfit_device_free(batchfit_device *device);
/* "sim", "host", "cuda". */
BATCHFIT_API const char *batchfit_device_kind(const batchfit_device *device);
/* The spec the device was opened as, with "auto" resolved ("cuda:0",
 * "host"). Owned by the device. */
BATCHFIT_API const char *batchfit_device_spec(const batchfit_device *device);
/* 1 if the device can be used; otherwise 0 and *reason (if not NULL) says why. */
BATCHFIT_API int batchfit_device_available(const batchfit_device *device, const char **reason);
/* Total and free bytes now. BATCHFIT_E_DEVICE (with last error) if unknown. */
BATCHFIT_API int batchfit_device_memory(batchfit_device *device, uint64_t *total_out,
                                        uint64_t *free_out);

/* The most GPUs one device may hold ("cuda:0,1,..."). */
#define BATCHFIT_MAX_GPUS 16

/* What a device is. For a device of several GPUs: kind "cuda", index and
 * PCI bus id of the first, the names joined ("Fake GPU 80GB + Fake GPU
 * 16GB", or "2 x NAME" when they agree), no UUID, per_process_memory only
 * if every GPU has it; batchfit_device_describe_gpu() describes each. */
typedef struct batchfit_device_info {
    size_t struct_size;        /* sizeof(batchfit_device_info), set by the caller */
    char kind[16];             /* "cuda", "host", "sim" */
    int available;
    char reason[256];          /* why not, when unavailable */
    int index;                 /* cuda:N */
    char name[96];             /* "NVIDIA H200" */
    char uuid[96];             /* "GPU-xxxxxxxx-...", "" if unknown */
    char pci_bus_id[32];       /* "0000:3B:00.0", "" if unknown */
    int per_process_memory;    /* 1 if NVML reports what each process uses */
    char per_process_note[256];/* why not, when it does not */
} batchfit_device_info;

/* Fills *info (whose struct_size the caller sets) with what the device is. */
BATCHFIT_API int batchfit_device_describe(const batchfit_device *device, batchfit_device_info *info);

/* How many GPUs the device is: 1 for "cuda:N", the list's length for
 * "cuda:N,M,..." and "cuda:all", 0 for the host, a sim device or a device
 * that is unavailable. */
BATCHFIT_API size_t batchfit_device_gpu_count(const batchfit_device *device);
/* Describes the device's i-th GPU (0 <= i < batchfit_device_gpu_count()):
 * for "cuda:N" the device itself. BATCHFIT_E_INVALID_ARGUMENT past the end. */
BATCHFIT_API int batchfit_device_describe_gpu(const batchfit_device *device, size_t i,
                                              batchfit_device_info *info);

/* Peak measurement for callers that run steps themselves: reset the
 * device's high-water mark of this process's memory to what is in use now,
 * then read the peak since. BATCHFIT_E_DEVICE where the device cannot
 * measure (a reason is in the last error). */
BATCHFIT_API int batchfit_device_peak_reset(batchfit_device *device);
BATCHFIT_API int batchfit_device_peak(batchfit_device *device, uint64_t *peak_out);
/* The relative trial-to-trial spread of peak measurements this device is
 * known to show (0 for an exact device). */
BATCHFIT_API double batchfit_device_peak_spread(const batchfit_device *device);
/* What holds the device's memory below the machine's, as of the last
 * batchfit_device_memory(); "" when nothing does. On the host: a cgroup's
 * memory limit (a container's, a job scheduler's), which the total and the
 * free memory then follow. */
BATCHFIT_API const char *batchfit_device_memory_note(const batchfit_device *device);

/* Every backend and the devices it sees here, for listing (batchfit info). */
typedef struct batchfit_backend_status {
    const char *name;          /* "cuda", "nvml", "host", "sim" */
    int available;
    const char *reason;        /* why not, "" when available */
} batchfit_backend_status;

/* A GPU NVML sees while the CUDA driver offers none (no libcuda.so.1, as in a
 * container with only the driver's utilities): listed, but it cannot be
 * probed and cannot hold a margin here. */
typedef struct batchfit_nvml_gpu {
    unsigned index;            /* NVML's index (not CUDA's order) */
    char name[96];
    char uuid[96];
    int memory_known;
    uint64_t total_bytes;
    uint64_t free_bytes;
} batchfit_nvml_gpu;

typedef struct batchfit_device_list {
    size_t backend_count;
    const batchfit_backend_status *backends;
    size_t device_count;
    const char *const *specs;  /* each device that can be opened: "cuda:0", ..., "host" */
    const char *auto_spec;     /* what "auto" opens here */
    size_t nvml_only_count;    /* GPUs only NVML sees (when CUDA sees none) */
    const batchfit_nvml_gpu *nvml_only;
} batchfit_device_list;

/* Looks at every backend (loading the NVIDIA libraries if present) and
 * lists what it finds; a backend that cannot be used is listed with its
 * reason, never an error. *out is freed with batchfit_device_list_free(). */
BATCHFIT_API int batchfit_device_list_create(batchfit_ctx *ctx, batchfit_device_list **out);
BATCHFIT_API void batchfit_device_list_free(batchfit_device_list *list);

/* ------------------------------------------------------------------------ */
/* Trials and steps                                                         */
/* ------------------------------------------------------------------------ */

typedef enum batchfit_outcome {
    BATCHFIT_FITS = 0,  /* ran to the end, within the budget */
    BATCHFIT_OOM = 1,   /* out of memory (or over the budget) */
    BATCHFIT_ERROR = 2  /* anything else: a bug; the search stops */
} batchfit_outcome;

/* "fits", "oom", "error". */
BATCHFIT_API const char *batchfit_outcome_name(batchfit_outcome outcome);

#define BATCHFIT_MESSAGE_MAX 256

/* How a child-process trial (batchfit_probe_command) ended, beyond its
 * outcome. All zero for in-process trials. */
typedef struct batchfit_trial_process {
    int ran;                     /* 1: the trial was a child process */
    int exited;                  /* 1: exit_code is valid */
    int exit_code;
    int signal;                  /* the signal that ended it, 0 if none */
    int timed_out;
    int watchdog_stopped;
    int oom_killed;              /* the kernel's OOM killer or a cgroup limit killed it */
    const char *peak_source;     /* static: "cgroup-v2 memory.peak", "cgroup-v1 ...",
                                    "rusage+sampling", "nvml per-process sampling",
                                    "device free memory", and for several GPUs the same
                                    with ", worst GPU against its own budget" */
    uint64_t sampled_peak_bytes; /* the largest sample of the process tree's memory */
    uint64_t rusage_peak_bytes;  /* wait4's ru_maxrss of the main process */
    uint64_t host_peak_bytes;    /* the host memory peak, kept when a GPU is judged */
    int device_peak_known;       /* with a GPU: the sampled per-process peak (several GPUs:
                                    the worst, scaled as batchfit_result.gpu_peaks says) */
    uint64_t device_peak_bytes;
    int device_free_drop_known;  /* the largest drop in the device's free memory */
    uint64_t device_free_drop_bytes;
    char oom_signature[96];      /* the matching signature's source, "" if none */
    char tail[2048];             /* the last lines of the child's output */
    uint64_t watchdog_overshoot_bytes; /* watchdog_stopped: how far past its threshold the
                                          sample that stopped it was */
    unsigned left_running;       /* processes of the trial still running when its main
                                    process exited (stopped then: the trial is its main
                                    process); 0 if none */
    char left_running_name[16];  /* the first of them's command name, "" if none */
} batchfit_trial_process;

/* One trial, as the trial log records it. */
typedef struct batchfit_trial {
    uint64_t batch;
    batchfit_outcome outcome;
    int peak_known;          /* 1 if peak_bytes was measured */
    uint64_t peak_bytes;     /* fits: the step's peak memory during the trial;
                                oom: a lower bound on what it needed (e.g. the
                                memory in use plus the allocation that failed) */
    double seconds;          /* wall time of the trial */
    int accepted;            /* 1 if it counts as fitting for the search */
    int over_budget;         /* it ran to the end, but its peak exceeded the budget
                                (outcome BATCHFIT_OOM) */
    char message[BATCHFIT_MESSAGE_MAX]; /* the step's message or why it was rejected */
    batchfit_trial_process process;     /* child-process trials only */
} batchfit_trial;

/* What a step's run() reports besides its outcome. Zeroed before each run. */
typedef struct batchfit_step_report {
    int peak_known;       /* set to 1 with peak_bytes if the step measures itself */
    uint64_t peak_bytes;  /* as in batchfit_trial: the peak, or on OOM what was needed */
    char message[BATCHFIT_MESSAGE_MAX];
    /* Given to run(), 0 where unknown: the budget the trial's peak is
     * judged against, in the device's terms (on the host, the whole
     * process's resident memory). A peak past it does not fit; a step that
     * can stop itself there (the Python package's guard on the host, where
     * the kernel's out-of-memory killer would end the whole process) may
     * return BATCHFIT_OOM with what it held as peak_bytes. */
    uint64_t budget_bytes;
} batchfit_step_report;

/* A step factory. The library owns the order: check the device, hold the
 * margin, build, run trials, release, free the margin. release() is called
 * exactly once for every successful build(), on every path. */
typedef struct batchfit_step {
    size_t struct_size;   /* sizeof(batchfit_step) */
    const char *name;     /* for messages; may be NULL */
    uint64_t min_batch;   /* the smallest batch the step can run at all; 0 = 1 */
    /* Makes the throwaway step. Returns BATCHFIT_FITS and sets *state, or
     * BATCHFIT_OOM (the model itself does not fit) or BATCHFIT_ERROR, with a
     * message in msg. */
    batchfit_outcome (*build)(void *userdata, batchfit_device *device, void **state,
                              char *msg, size_t msg_len);
    /* Runs one step at the batch size. */
    batchfit_outcome (*run)(void *state, uint64_t batch, batchfit_step_report *report);
    /* Optional: drop what a failed trial left behind. */
    void (*on_oom)(void *state, uint64_t batch);
    /* Frees everything build() and run() made. */
    void (*release)(void *state);
} batchfit_step;

/* The synthetic step of a sim device: build allocates the profile's fixed
 * bytes on the device, run allocates the batch's activations and workspace
 * (with the device's noise) and frees them. Static storage. */
BATCHFIT_API const batchfit_step *batchfit_sim_step(void);

/* ------------------------------------------------------------------------ */
/* Options and the decision                                                 */
/* ------------------------------------------------------------------------ */

typedef enum batchfit_agree_mode {
    BATCHFIT_AGREE_MIN = 0,     /* every rank uses the smallest rank's answer */
    BATCHFIT_AGREE_PER_RANK = 1 /* every rank keeps its own answer */
} batchfit_agree_mode;

/* What one rank of a job found, as the others learn it (batchfit_agree). */
typedef struct batchfit_rank_outcome {
    int rank;
    int status;               /* the rank's probe code */
    uint64_t batch_size;      /* 0 when none */
    size_t trials;
    size_t oom_trials;
    char device_spec[64];     /* "cuda:1", "host", ... ("" when none was opened) */
    char device_name[96];
    char error[256];          /* the rank's message when status is not BATCHFIT_OK */
} batchfit_rank_outcome;

typedef struct batchfit_result batchfit_result;

/* A straight line through the measured peaks: peak = intercept + slope * batch. */
typedef struct batchfit_fit {
    int valid;                  /* 0 when fewer than two distinct points */
    double intercept_bytes;
    double bytes_per_sample;
    double max_residual_bytes;  /* largest distance of a fitted point from the line */
    unsigned points;
} batchfit_fit;

typedef enum batchfit_lattice_kind {
    BATCHFIT_LATTICE_EVERY = 0,    /* every integer */
    BATCHFIT_LATTICE_MULTIPLE = 1, /* multiples of lattice_multiple */
    BATCHFIT_LATTICE_POW2 = 2      /* powers of two, plus the requested maximum */
} batchfit_lattice_kind;

typedef enum batchfit_strategy {
    BATCHFIT_STRATEGY_MODEL = 0,     /* fit the peaks, propose, verify (default) */
    BATCHFIT_STRATEGY_BISECT = 1,    /* bisection over [minimum, bound] */
    BATCHFIT_STRATEGY_BINSEARCH = 2, /* double until failure, then bisect */
    BATCHFIT_STRATEGY_POWER = 3,     /* double until failure */
    BATCHFIT_STRATEGY_HALVING = 4    /* start at the bound, halve on failure */
} batchfit_strategy;

/* "model", "bisect", ...; NULL for an unknown value. */
BATCHFIT_API const char *batchfit_strategy_name(batchfit_strategy strategy);
/* Parses a strategy name; BATCHFIT_E_PARSE (message names what) if unknown. */
BATCHFIT_API int batchfit_parse_strategy(batchfit_ctx *ctx, const char *text, const char *what,
                                         batchfit_strategy *out);

typedef enum batchfit_no_device {
    BATCHFIT_NO_DEVICE_FALLBACK = 0, /* settle on a size without measuring, with a warning */
    BATCHFIT_NO_DEVICE_ERROR = 1     /* fail with BATCHFIT_E_NO_DEVICE */
} batchfit_no_device;

/* The batch size used when there is no device and neither a requested
 * maximum nor a sample count says anything. */
#define BATCHFIT_FALLBACK_BATCH_SIZE 32
/* The largest batch size searched when nothing else bounds it. */
#define BATCHFIT_DEFAULT_UPPER_LIMIT (UINT64_C(1) << 20)
#define BATCHFIT_DEFAULT_MARGIN_FRACTION 0.05
#define BATCHFIT_DEFAULT_MAX_TRIALS 40

struct batchfit_ranks; /* below, with the agreement */

typedef struct batchfit_options {
    size_t struct_size;          /* sizeof(batchfit_options), set by batchfit_options_init */
    uint64_t requested_max;      /* max_batch_size; 0 = the device decides */
    uint64_t min_batch;          /* 0 = the step's own minimum (or 1) */
    uint64_t samples;            /* dataset size; 0 = unknown */
    batchfit_lattice_kind lattice;
    uint64_t lattice_multiple;   /* for BATCHFIT_LATTICE_MULTIPLE */
    double margin_fraction;      /* of the usable memory; used when margin_bytes is 0 */
    uint64_t margin_bytes;       /* an absolute margin; 0 = use margin_fraction */
    uint64_t vram_limit_bytes;   /* 0 = no limit */
    uint64_t memory_budget_bytes;/* replaces the device's free memory; 0 = the device's */
    uint64_t upper_limit;        /* the bound when nothing else bounds the search */
    unsigned max_trials;
    batchfit_strategy strategy;
    double peak_spread;          /* relative spread to guard against; < 0 = the device's */
    uint64_t first_guess;        /* an estimate to try first (model strategy); 0 = none */
    /* A size remembered from an earlier probe (the cache): the model
     * strategy runs it first and then the next allowed size; if the first
     * fits and the second does not, that is the answer (the next size is not
     * run when the measured peak agrees with cached_fit within 1% and the
     * fit, less that disagreement and its residual, puts the next size over
     * the budget); otherwise the search goes on. */
    uint64_t cached_batch;
    batchfit_fit cached_fit;
    batchfit_no_device no_device;
    uint64_t fallback_batch;     /* 0 = BATCHFIT_FALLBACK_BATCH_SIZE */
    /* Where vram_limit_bytes came from, for the report (static string, e.g.
     * batchfit_resolve_vram_limit's source); NULL: "options". */
    const char *vram_limit_source;
    /* The cache (batchfit_cache_dir()): with cache = 1 a probe first looks
     * for a remembered answer under the key of everything that changes the
     * answer (device, command or cache_key, every setting), verifies it in
     * one or two trials instead of searching, and stores what it found.
     * cache_key names the model in place of the command; an in-process
     * probe, whose step has no command, is known by cache_key or else by
     * its step's name, and without either the cache stays off with a
     * warning. cache_dir NULL = the default directory; an empty one turns
     * the cache off with a warning. A damaged entry is reported as a
     * warning and replaced. Default: off. */
    int cache;
    const char *cache_dir;
    const char *cache_key;
    /* Called after every trial with the result so far (trial is its last
     * entry; batchfit_result_json() may be called on it); a nonzero return
     * aborts (BATCHFIT_E_ABORTED) after the step has been released. A trial
     * that ended in an error is reported too, and ends the search whatever
     * the return (BATCHFIT_E_TRIAL_ERROR). */
    int (*progress)(const batchfit_result *result, const batchfit_trial *trial, void *userdata);
    void *progress_userdata;
    /* Trials a round on identical devices (batchfit_search_parallel); 0 or
     * 1: one trial at a time. batchfit_probe runs a round's trials one
     * after another on its one device (the same answers in fewer rounds,
     * not less wall time: for a simulated device or to plan); at most
     * BATCHFIT_MAX_PARALLEL. */
    unsigned parallel;
    /* The ranks of a job of identical devices, one device each (NULL: this
     * process alone). With parallel above 1 and ranks->size above 1, every
     * rank calls the probe (batchfit_probe or batchfit_probe_command) with
     * the same options and its own device, and a round's trials run one on
     * each rank: rank 0's search proposes up to min(parallel, size) sizes
     * a round, rank i runs the i-th, and the trials come back to rank 0
     * through ranks->allgather (fixed-size records; MPI is never linked).
     * Before any trial the ranks compare their devices: each rank's must
     * have rank 0's name and total memory, and be one device (not a list
     * of GPUs), else every rank fails with BATCHFIT_E_INVALID_ARGUMENT and
     * a message naming the rank and its device. Each trial's peak is
     * scaled from the tightest rank's budget to rank 0's, so it is
     * accepted only if it would fit on every rank. Rank 0's result holds
     * the search (every trial, trial_ranks saying which rank ran it); every
     * rank's holds the answer and the rounds (and a trial of its own that
     * failed with an error, to report). A rank that cannot go on (its
     * probe could not start, its trial could not run or was interrupted)
     * returns its own code, and every other rank BATCHFIT_E_ABORTED with a
     * message naming it; rank 0's search failing (even the minimum does
     * not fit, a trial's error) counts as the failure of the rank whose
     * trial it was, else of rank 0. batchfit_agree() afterwards gives every
     * rank the job's code. Every rank takes part in every exchange on
     * every path, so none waits on a rank that left, with one exception:
     * a rank that runs out of memory before it can take part returns
     * BATCHFIT_E_NO_MEMORY with no result or one whose ranks_joined is 0,
     * and its caller must then abort the job (MPI_Abort), as the others
     * wait for it. A rank that will not call the probe at all (its input
     * is bad) calls batchfit_ranks_refuse() instead. Only rank 0's cache
     * entry counts (it alone stores one). ranks must outlive the call;
     * one that is not usable (struct_size, allgather, size, rank) is
     * BATCHFIT_E_INVALID_ARGUMENT, before any exchange. */
    const struct batchfit_ranks *ranks;
    /* The budget cached_batch was found under (the cache's budget_bytes;
     * 0: unknown). Where cached_fit puts that budget's crossing well above
     * cached_batch, something besides the budget stopped the earlier probe
     * (the program's own limit, a jump), and the next size is run before
     * the curve is followed to a larger budget's crossing. */
    uint64_t cached_budget_bytes;
} batchfit_options;
#define BATCHFIT_MAX_PARALLEL 64

/* Fills opts with the defaults: device decides, 5% margin, model strategy,
 * every integer, BATCHFIT_DEFAULT_MAX_TRIALS, the device's spread. */
BATCHFIT_API void batchfit_options_init(batchfit_options *opts);

typedef enum batchfit_source {
    BATCHFIT_SOURCE_MEASURED = 0, /* found by trials */
    BATCHFIT_SOURCE_FALLBACK = 1, /* no usable device: decided without trials */
    BATCHFIT_SOURCE_NONE = 2      /* no size settled (see the return code) */
} batchfit_source;


typedef struct batchfit_budget {
    int known;                  /* 0 when no device was used */
    uint64_t total_bytes;       /* device capacity */
    uint64_t free_bytes;        /* free when the probe started */
    uint64_t usable_bytes;      /* free, capped by the memory budget and the VRAM limit; an
                                   in-process probe on the host adds what the process holds
                                   (anonymous and shared pages: its trials' peaks count them) */
    uint64_t margin_bytes;      /* held back */
    uint64_t budget_bytes;      /* what a trial may use: usable - margin */
    uint64_t held_bytes;        /* ballast actually held on the device */
    uint64_t vram_limit_bytes;  /* 0 = none */
    double peak_spread;         /* the spread guarded against */
} batchfit_budget;

/* One GPU of a device of several: what it is and the budget it is held to
 * (batchfit_budget's figures, for this GPU). */
typedef struct batchfit_gpu_budget {
    char spec[16];              /* "cuda:2" */
    char name[96];
    char uuid[96];              /* "" if unknown */
    uint64_t total_bytes;
    uint64_t free_bytes;        /* free when the probe started */
    uint64_t usable_bytes;      /* free, capped by the memory budget and the VRAM limit */
    uint64_t margin_bytes;
    uint64_t budget_bytes;      /* what a trial may use on this GPU */
    uint64_t held_bytes;        /* ballast held on this GPU while trials ran */
} batchfit_gpu_budget;

/* One trial's memory on one GPU of a device of several. */
typedef struct batchfit_gpu_peak {
    int peak_known;
    uint64_t peak_bytes;        /* NVML's per-process memory summed over the trial's process
                                   tree (else the drop in the GPU's free memory), the largest
                                   sample */
} batchfit_gpu_peak;

struct batchfit_result {
    size_t struct_size;
    batchfit_source source;
    uint64_t batch_size;        /* the settled size; 0 when none */
    uint64_t min_batch;         /* the effective minimum (on the lattice) */
    uint64_t upper_bound;       /* the effective bound */
    uint64_t smallest_failure;  /* smallest size seen not to fit; 0 = none */
    batchfit_lattice_kind lattice;
    uint64_t lattice_multiple;
    batchfit_strategy strategy;
    batchfit_budget budget;
    int baseline_known;         /* 1 if the memory the built step holds was measured */
    uint64_t baseline_bytes;    /* memory in use after build(), before any trial */
    batchfit_fit fit;
    size_t trial_count;
    const batchfit_trial *trials;
    size_t oom_trials;
    size_t warning_count;
    const char *const *warnings;
    /* How the probe ended and what it ran on, for reports (the JSON). */
    int complete;               /* 0 while the probe runs (progress callbacks) */
    int status;                 /* the probe's return code, once complete */
    const char *error;          /* its last-error message; NULL on success */
    int interrupted;            /* batchfit_interrupt() stopped it */
    int interrupt_signal;       /* the signal it named */
    const char *device_spec;    /* NULL when no device was used */
    batchfit_device_info device;
    size_t command_argc;        /* child-process probes: the command template */
    const char *const *command;
    const char *mechanisms;     /* how peaks were measured and capped */
    double sample_interval;     /* seconds between memory samples; 0 in-process */
    uint64_t requested_max;
    uint64_t memory_budget_bytes;
    const char *vram_limit_source;
    uint64_t first_guess;
    const char *cache_key;      /* NULL when the cache was not used */
    int cache_hit;
    uint64_t cache_remembered;  /* the remembered size, when cache_hit */
    /* Filled by batchfit_agree() in a job of several ranks. */
    int agreed;                 /* 1 once the ranks agreed */
    batchfit_agree_mode agree_mode;
    int agreed_status;          /* BATCHFIT_OK, or the first failed rank's code */
    const char *agreed_error;   /* "rank 2 (cuda:2): ...", NULL on success */
    uint64_t agreed_batch_size; /* what this rank should train with */
    size_t rank_count;
    const batchfit_rank_outcome *rank_outcomes;
    /* A device of several GPUs ("cuda:0,2", "cuda:all"; 0 and NULL for any
     * other device): each GPU's budget, in the device's order, and each
     * trial's peak on each GPU, trial t's GPU g at gpu_peaks[t * gpu_count
     * + g]. budget above is then the tightest GPU's (the smallest
     * budget_bytes; gpus[budget_gpu]), and a trial's peak_bytes is its
     * worst GPU's peak scaled to that budget: the largest
     * ceil(peak_g * budget.budget_bytes / gpus[g].budget_bytes), so that it
     * is within budget.budget_bytes exactly when every GPU's peak is within
     * its own budget. With identical GPUs it is the largest peak. */
    size_t gpu_count;
    size_t budget_gpu;
    const batchfit_gpu_budget *gpus;
    const batchfit_gpu_peak *gpu_peaks;
    /* Rounds of trials the search ran: trial_count for a serial search;
     * with batchfit_search_parallel, the rounds of up to `parallel` trials
     * each (run at once on identical devices). */
    size_t rounds;
    /* Trials across the ranks of a job (batchfit_options.ranks): the rank
     * that ran trial t is trial_ranks[t]; NULL otherwise. */
    const int *trial_ranks;
    /* Trials across ranks: 1 once this rank took part in the job's
     * exchanges (see batchfit_options.ranks). */
    int ranks_joined;
    /* Why the search settled on batch_size, in words ("187, the next size,
     * was run: over the acceptance threshold"; "the line through the
     * measured peaks predicts 188 (not run) over ..."); NULL when no search
     * settled. */
    const char *stop_reason;
    /* 1 when fit is the curve the cache remembered (cache_hit): it still
     * describes every peak this probe measured, which were too few (one or
     * two verifying trials) to draw a line of their own. */
    int fit_remembered;
    /* What held the device's memory below the machine's when the probe
     * started (batchfit_device_memory_note(): a cgroup's memory limit on
     * the host); NULL when nothing did. */
    const char *memory_note;
};

/* Frees a result; NULL is fine. Safe after the context is freed. */
BATCHFIT_API void batchfit_result_free(batchfit_result *result);

/* Decides bounds only, without a device or a step: the effective minimum,
 * the upper bound and the warnings, into a result with no trials. Useful to
 * show what a probe would search. */
BATCHFIT_API int batchfit_decide(batchfit_ctx *ctx, const batchfit_options *opts,
                                 uint64_t step_min, batchfit_result **out);

/* The in-process probe. device may be NULL (no device: the fallback).
 * On return *out holds a result whenever one could be allocated, also on
 * failure (with the trials run so far); the caller frees it. Returns:
 *   BATCHFIT_OK                 a size was settled (measured or fallback);
 *   BATCHFIT_E_INVALID_ARGUMENT options make no sense (nothing was built);
 *   BATCHFIT_E_NO_DEVICE        no usable device and opts->no_device = ERROR;
 *   BATCHFIT_E_MIN_DOES_NOT_FIT even the minimum does not fit;
 *   BATCHFIT_E_TRIAL_ERROR      a trial (or build) failed with a non-OOM error;
 *   BATCHFIT_E_ABORTED          the progress callback asked to stop;
 *   BATCHFIT_E_TRIAL_LIMIT      max_trials ran out before anything fitted;
 *   BATCHFIT_E_DEVICE           the device failed (memory query, ballast);
 *   BATCHFIT_E_NO_MEMORY        an allocation failed.
 * Details are in batchfit_ctx_last_error(). Nothing outside *out is written. */
BATCHFIT_API int batchfit_probe(batchfit_ctx *ctx, const batchfit_options *opts,
                                batchfit_device *device, const batchfit_step *step,
                                void *step_userdata, batchfit_result **out);

/* ------------------------------------------------------------------------ */
/* Search over a trial oracle (pure logic; used by batchfit_probe and by     */
/* anyone who runs trials their own way, such as the CLI).                   */
/* ------------------------------------------------------------------------ */

/* Runs a trial at batch and fills *trial (batch, outcome, peak, seconds,
 * message). Returns BATCHFIT_OK, or a batchfit_code that ends the search
 * with that code and the oracle's detail in the context's last error, e.g.
 * BATCHFIT_E_TRIAL_ERROR when the trial could not be run at all (a trial
 * that did not run is never recorded as an outcome). BATCHFIT_E_ABORTED,
 * or any value that is not a batchfit_code, aborts the search. */
typedef int (*batchfit_oracle_fn)(void *userdata, uint64_t batch, batchfit_trial *trial);

/* Searches the bounds that batchfit_decide() settled in *result (which
 * receives the trials, the fit and the answer) with opts->strategy, using
 * budget_bytes and peak_spread from result->budget to judge measured peaks,
 * and result->baseline_bytes (when known) as the memory held at batch 0.
 * For programs that run trials their own way. Returns as batchfit_probe
 * does. */
BATCHFIT_API int batchfit_search(batchfit_ctx *ctx, const batchfit_options *opts,
                                 batchfit_oracle_fn oracle, void *oracle_userdata,
                                 batchfit_result *result);

/* Runs one round: count (1..parallel) trials at batches[0..count), fills
 * trials[i] for batches[i] (trials arrive zeroed), typically at once, one
 * per device. Returns as batchfit_oracle_fn does; a nonzero return ends the
 * search and records none of the round's trials. */
typedef int (*batchfit_round_fn)(void *userdata, const uint64_t *batches, size_t count,
                                 batchfit_trial *trials);

/* batchfit_search for `parallel` identical devices: each round the
 * strategy proposes up to `parallel` distinct sizes inside the bracket (the
 * model: its predicted boundary, the next size that would certify it, and
 * the points that split what is left of the bracket; before any
 * measurement, a geometric spread from the minimum), runs them with one
 * call of round, records the trials in proposal order, and moves the
 * bracket: the smallest rejected size bounds it from above, the largest
 * accepted size below that from below. result->rounds counts the rounds.
 * max_trials still bounds the trials. parallel = 1 is batchfit_search. */
BATCHFIT_API int batchfit_search_parallel(batchfit_ctx *ctx, const batchfit_options *opts,
                                          unsigned parallel, batchfit_round_fn round,
                                          void *round_userdata, batchfit_result *result);

/* ------------------------------------------------------------------------ */
/* Probing a command: one child process per trial                            */
/* ------------------------------------------------------------------------ */

typedef enum batchfit_cgroups {
    BATCHFIT_CGROUPS_AUTO = 0, /* a per-trial cgroup (v2, else v1) where one can be made */
    BATCHFIT_CGROUPS_OFF = 1   /* never: wait4's rusage and sampling only */
} batchfit_cgroups;

typedef struct batchfit_command_options {
    size_t struct_size;          /* set by batchfit_command_options_init */
    const char *const *argv;     /* the command, NULL-terminated; "{batch}" in any argument
                                    is replaced by the batch size, "{{" and "}}" are braces;
                                    BATCHFIT_BATCH_SIZE is set in its environment */
    double timeout_seconds;      /* per trial; 0 = none */
    double kill_grace_seconds;   /* SIGTERM, then SIGKILL after this (default 2) */
    int watchdog;                /* stop a trial as soon as its memory passes the budget
                                    (default 1) */
    int enforce;                 /* a hard cap at the budget: the cgroup's limit, else the
                                    group is stopped when its resident memory passes it */
    int crash_is_oom;            /* count a crash near the cap of enforce (its peak within 10%
                                    of it) or under enforce_address_space (SIGSEGV, SIGABRT,
                                    SIGBUS) as out of memory; BATCHFIT_E_INVALID_ARGUMENT
                                    without either */
    double sample_interval;      /* seconds between memory samples (default 0.02) */
    int show_output;             /* copy the child's output to our stderr */
    batchfit_cgroups cgroups;
    /* More out-of-memory signatures (POSIX extended regular expressions
     * matched against each output line), NULL-terminated; NULL = none. A
     * pattern that does not compile, or that matches an empty line, is
     * BATCHFIT_E_PARSE before any trial. */
    const char *const *oom_patterns;
    /* Passed on as VRAM_LIMIT_GB, the user's own text (NULL: written from
     * opts->vram_limit_bytes when a limit is set). */
    const char *vram_limit_text;
    /* Also cap the child's virtual memory (RLIMIT_AS) at the budget. Only
     * for programs whose address space stays close to their resident
     * memory: frameworks reserve far more than they touch. */
    int enforce_address_space;
} batchfit_command_options;

BATCHFIT_API void batchfit_command_options_init(batchfit_command_options *copts);

/* Whether program (argv[0]) can be run as execvp would run it: a path, or a
 * name found on PATH, naming a regular file we may execute; and, for a
 * script, the interpreter its #! line names (a missing one fails the exec
 * with "No such file or directory" for a file that exists).
 * BATCHFIT_E_INVALID_ARGUMENT with the reason; batchfit_probe_command
 * checks this before anything runs. */
BATCHFIT_API int batchfit_command_check(batchfit_ctx *ctx, const char *program);

/* The child-process probe: runs the command once per trial in its own
 * process group (and cgroup where one can be made), measures its peak, and
 * classifies how it ended (fits; out of memory by signature, SIGKILL, the
 * watchdog or a peak over the budget; anything else is an error that stops
 * the search). The order is batchfit_probe's: decide, settle the budget,
 * look up the cache, hold the margin and VRAM limit as ballast on a GPU
 * (each trial sees only that GPU, by UUID; on a device of several GPUs,
 * ballast on each and the trial sees exactly those, in order), search,
 * release, store in the cache. No process of a trial outlives it; the ballast is released on
 * every path. Progress reaches opts->progress after every trial, with
 * trial->process filled. Returns as batchfit_probe does; a trial that could
 * not be started (fork, pipe, exec, memory) is BATCHFIT_E_TRIAL_ERROR with
 * its cause, and batchfit_interrupt() gives BATCHFIT_E_ABORTED with
 * (*out)->interrupted and interrupt_signal set. */
BATCHFIT_API int batchfit_probe_command(batchfit_ctx *ctx, const batchfit_options *opts,
                                        batchfit_device *device,
                                        const batchfit_command_options *copts,
                                        batchfit_result **out);

/* Async-signal-safe: asks the running probe (or the next one) to stop: a
 * running child trial's process group is killed, an in-process probe stops
 * after the current trial. signal_number is the signal that asked (0 or
 * less: SIGINT); the result records it (interrupt_signal) and the JSON's
 * exit_code is 128 plus it. The request is consumed by the probe it stops. */
BATCHFIT_API void batchfit_interrupt(int signal_number);
/* Withdraws a request that no probe consumed (one that came after the last
 * trial, or between probes) and returns its signal number, 0 when there was
 * none. A binding that raises its own interrupt once the call returns
 * (Python's KeyboardInterrupt) takes it, so that the next, unrelated probe
 * does not stop on it. Async-signal-safe. */
BATCHFIT_API int batchfit_interrupt_take(void);

/* A result that records a probe which never started because the caller
 * found its input bad (status = code, error = message, complete): for
 * programs that check their own input and report every run in the same
 * JSON. */
BATCHFIT_API int batchfit_result_failed(batchfit_ctx *ctx, int code, const char *message,
                                        batchfit_result **out);

/* The result as JSON (schema_version 1: device, budget, VRAM limit,
 * lattice, strategy, cache, mechanisms, every trial with its outcome and
 * measurements, the fit, the result with its status, the warnings). The
 * text belongs to the result and stays valid until the next call on it or
 * batchfit_result_free(). */
BATCHFIT_API int batchfit_result_json(batchfit_ctx *ctx, const batchfit_result *result,
                                      const char **json_out);

/* The result as a picture: a self-contained SVG (no scripts, no external
 * references, valid XML) of peak memory against batch size: every trial
 * (fits, too close to the budget, out of memory at its "needed at least"
 * value, errors), the fitted line with its band, the budget, the margin and
 * the VRAM limit as horizontal lines, and the answer marked; axes in binary
 * units. The text belongs to the result and stays valid until the next call
 * on it or batchfit_result_free(). */
BATCHFIT_API int batchfit_result_svg(batchfit_ctx *ctx, const batchfit_result *result,
                                     const char **svg_out);

/* Reads a result back from the JSON batchfit_result_json() wrote (schema
 * version 1; len bytes, no terminator needed): the trials, the fit, the
 * budget, the bounds, the device and the warnings, enough to report or draw
 * it again (batchfit plot). Fields the JSON does not hold stay zero; status
 * is derived from the recorded exit code. BATCHFIT_E_PARSE names what is
 * wrong (not JSON, another schema, a field of the wrong type). *out is freed
 * with batchfit_result_free(). */
BATCHFIT_API int batchfit_result_from_json(batchfit_ctx *ctx, const char *json, size_t len,
                                           batchfit_result **out);

/* ------------------------------------------------------------------------ */
/* Hyperparameters                                                           */
/* ------------------------------------------------------------------------ */

/* Reads the requested maximum from a JSON file holding an object with a
 * top-level "max_batch_size" (a number, a string, or null; absent means 0,
 * "the device decides"). "batch_size" is never read: it is an output.
 * Errors name the file and say what is wrong (BATCHFIT_E_PARSE). */
BATCHFIT_API int batchfit_read_hyperparameters(batchfit_ctx *ctx, const char *path,
                                               uint64_t *requested_out);

/* ------------------------------------------------------------------------ */
/* Agreement across the ranks of a job (MPI, or any all-gather)             */
/* ------------------------------------------------------------------------ */

/* The ranks of a distributed job, as the agreement sees them: who this
 * process is and one collective, an all-gather. libbatchfit-mpi fills it
 * from an MPI communicator (batchfit_mpi.h); anything else that can gather
 * a few bytes from every rank can too. The core library never links MPI. */
typedef struct batchfit_ranks {
    size_t struct_size;  /* sizeof(batchfit_ranks) */
    int rank;            /* this process, 0 .. size-1 */
    int size;            /* how many ranks */
    /* Every rank calls it with len bytes at mine; afterwards all holds
     * size * len bytes, rank r's at all + r * len, on every rank. Returns 0,
     * or nonzero when the exchange failed. */
    int (*allgather)(void *userdata, const void *mine, void *all, size_t len);
    void *userdata;
} batchfit_ranks;

/* Every rank calls it once after its own probe (also when the probe failed
 * or never started: result is then a batchfit_result_failed() one; NULL
 * only when not even that could be allocated, and the rank still takes
 * part, as failed with BATCHFIT_E_NO_MEMORY), and learns every rank's
 * outcome. The job succeeds only
 * if every rank did: otherwise result->agreed_status is the code of the
 * first rank that failed on its own (ranks stopped by an interrupt or by a
 * peer's failure, BATCHFIT_E_ABORTED, count only when no rank failed
 * otherwise, and then a rank its own interrupt stopped, result->interrupted,
 * comes first), the same on every rank so every rank can end with the same
 * exit status, and result->agreed_error names that rank. With
 * BATCHFIT_AGREE_MIN, result->agreed_batch_size is the smallest rank's
 * answer; with PER_RANK, this rank's own. Ranks that pass different modes
 * fail alike: agreed_status BATCHFIT_E_INVALID_ARGUMENT, naming the first
 * rank whose mode differs from rank 0's. The outcomes are kept in the
 * result (rank_outcomes) and written to its JSON. Returns BATCHFIT_OK when
 * the exchange worked (whatever the ranks found), BATCHFIT_E_DEVICE when it
 * failed, BATCHFIT_E_NO_MEMORY when this rank could not take part (then
 * the caller must abort the job, e.g. MPI_Abort, or the others wait). */
BATCHFIT_API int batchfit_agree(batchfit_ctx *ctx, const batchfit_ranks *ranks,
                                batchfit_agree_mode mode, batchfit_result *result);

/* For a rank of a job whose peers probe with batchfit_options.ranks, when
 * this rank will not probe at all (its own input is bad): takes part in
 * the probe's first exchange with code (a batchfit_code other than
 * BATCHFIT_OK) and message, so that the other ranks stop before any trial
 * (with BATCHFIT_E_ABORTED, naming this rank) instead of waiting for it
 * (a code that is not a failure is taken as BATCHFIT_E_INVALID_ARGUMENT).
 * Returns code, BATCHFIT_E_DEVICE when the exchange failed, or
 * BATCHFIT_E_NO_MEMORY (or BATCHFIT_E_INVALID_ARGUMENT, for no context or
 * unusable ranks) when this rank could not take part: then abort the job
 * (MPI_Abort), as the others wait for it. Otherwise call batchfit_agree()
 * as every rank does. */
BATCHFIT_API int batchfit_ranks_refuse(batchfit_ctx *ctx, const batchfit_ranks *ranks, int code,
                                       const char *message);

/* ------------------------------------------------------------------------ */
/* Estimate before measuring                                                 */
/* ------------------------------------------------------------------------ */

typedef enum batchfit_precision {
    BATCHFIT_PRECISION_FP32 = 0,    /* fp32 weights, gradients and optimizer states */
    BATCHFIT_PRECISION_MIXED16 = 1, /* fp16/bf16 weights and gradients, fp32 master and states */
    BATCHFIT_PRECISION_INT8 = 2     /* frozen 8-bit weights (inference, adapter training) */
} batchfit_precision;

typedef enum batchfit_optimizer {
    BATCHFIT_OPTIMIZER_SGD = 0,
    BATCHFIT_OPTIMIZER_MOMENTUM = 1,
    BATCHFIT_OPTIMIZER_ADAM = 2,
    BATCHFIT_OPTIMIZER_ADAMW = 3,
    BATCHFIT_OPTIMIZER_ADAFACTOR = 4 /* factored second moments: ~0 bytes per parameter */
} batchfit_optimizer;

typedef struct batchfit_estimate_input {
    size_t struct_size;          /* sizeof(batchfit_estimate_input) */
    uint64_t params;             /* parameter count */
    batchfit_precision precision;
    batchfit_optimizer optimizer;
    int checkpointing;           /* full activation recomputation (checkpoint every layer) */
    /* Activation bytes per sample given directly; 0 = from the transformer
     * shape below (Korthikanti et al. 2022). */
    uint64_t activation_bytes_per_sample;
    unsigned layers, hidden, heads, seq, vocab; /* vocab 0: no output-layer term */
    uint64_t device_bytes;       /* the memory to fit into; 0 = report no batch */
    double margin_fraction;      /* held back from device_bytes */
} batchfit_estimate_input;

typedef struct batchfit_estimate {
    double bytes_per_param;
    uint64_t model_state_bytes;          /* weights, gradients, optimizer states */
    uint64_t activation_bytes_per_sample;
    uint64_t budget_bytes;               /* device_bytes less the margin */
    uint64_t max_batch;                  /* 0: the model state alone does not fit */
    uint64_t predicted_peak_bytes;       /* at max_batch (or at batch 1 when none fits) */
} batchfit_estimate;

/* Predicts peak memory and the largest batch before any trial. Model state
 * per parameter follows the ZeRO paper's accounting (Rajbhandari et al.
 * 2020: mixed-precision Adam keeps 2 + 2 + 12 = 16 bytes); transformer
 * activations per sample and layer are s*h*(34 + 5*a*s/h) bytes in 16-bit
 * precision without recomputation (Korthikanti et al. 2022), 2*s*h with
 * full recomputation plus one layer recomputed, twice that in fp32, plus
 * 4*s*v for the output logits when vocab is given. */
BATCHFIT_API int batchfit_estimate_memory(batchfit_ctx *ctx, const batchfit_estimate_input *in,
                                          batchfit_estimate *out);
BATCHFIT_API void batchfit_estimate_input_init(batchfit_estimate_input *in);
/* "124M", "7.5B", "350K", "1.2T", "1000000". */
BATCHFIT_API int batchfit_parse_params(batchfit_ctx *ctx, const char *text, const char *what,
                                       uint64_t *out);
/* "fp32", "mixed16", "int8" (any case). */
BATCHFIT_API int batchfit_parse_precision(batchfit_ctx *ctx, const char *text, const char *what,
                                          batchfit_precision *out);
/* "sgd", "momentum", "adam", "adamw", "adafactor" (any case). */
BATCHFIT_API int batchfit_parse_optimizer(batchfit_ctx *ctx, const char *text, const char *what,
                                          batchfit_optimizer *out);

/* ------------------------------------------------------------------------ */
/* Cache: results across runs                                                */
/* ------------------------------------------------------------------------ */

typedef struct batchfit_cache_entry {
    char key[40];             /* 32 hex digits */
    char version[16];         /* batchfit's version that wrote it */
    uint64_t batch_size;
    uint64_t budget_bytes;
    batchfit_fit fit;
    int64_t created;          /* seconds since the epoch */
    char description[512];    /* device, command and settings, for people */
} batchfit_cache_entry;

/* The cache directory: $BATCHFIT_CACHE_DIR, else $XDG_CACHE_HOME/batchfit,
 * else ~/.cache/batchfit, into out (len bytes). */
BATCHFIT_API int batchfit_cache_dir(batchfit_ctx *ctx, char *out, size_t len);
/* Reads the entry stored under key in dir: BATCHFIT_OK, BATCHFIT_E_NOT_FOUND
 * when there is none, BATCHFIT_E_INVALID_ARGUMENT when key is not a key (32
 * hex digits), BATCHFIT_E_PARSE when the file is damaged or foreign. */
BATCHFIT_API int batchfit_cache_load(batchfit_ctx *ctx, const char *dir, const char *key,
                                     batchfit_cache_entry *entry);
/* Calls fn for every valid entry in dir; *count (may be NULL) says how many.
 * A damaged or foreign entry file is not listed: a warning through the
 * context's log names it. */
BATCHFIT_API int batchfit_cache_list(batchfit_ctx *ctx, const char *dir,
                                     void (*fn)(const batchfit_cache_entry *entry, void *userdata),
                                     void *userdata, size_t *count);
/* Removes every entry in dir; *removed (may be NULL) says how many. */
BATCHFIT_API int batchfit_cache_clear(batchfit_ctx *ctx, const char *dir, size_t *removed);

/* ------------------------------------------------------------------------ */
/* Recovery: out of memory during training                                   */
/* ------------------------------------------------------------------------ */

typedef struct batchfit_recover_s batchfit_recover;

/* How to run one optimizer step: accumulation micro-batches, every one of
 * micro_batch samples but the last, which has last_micro_batch, so the
 * step always sees exactly effective_batch samples. The fewest
 * micro-batches of at most the size that fits, as even as they go (97 at
 * most 16 a step: 14 x 6 + 13, not 16 x 6 + 1). */
typedef struct batchfit_recover_plan {
    uint64_t micro_batch;
    unsigned accumulation;
    uint64_t last_micro_batch;
    uint64_t effective_batch;   /* always the global batch */
} batchfit_recover_plan;

/* Rebuild the data pipeline for the new plan; nonzero aborts. */
typedef int (*batchfit_resize_fn)(const batchfit_recover_plan *plan, void *userdata);

typedef struct batchfit_recover_options {
    size_t struct_size;         /* set by batchfit_recover_options_init */
    uint64_t global_batch;      /* the effective batch to keep */
    uint64_t micro_batch;       /* the probed size to start from (at most global_batch) */
    uint64_t min_batch;         /* never below this (default 1) */
    unsigned max_retries;       /* reductions in a row without a clean step (default 8) */
    unsigned grow_after;        /* clean steps before trying a larger micro-batch; 0 = never */
    batchfit_fit fit;           /* the probe's memory curve, when known */
    batchfit_resize_fn resize;  /* called whenever the plan changes */
    void *userdata;
} batchfit_recover_options;

BATCHFIT_API void batchfit_recover_options_init(batchfit_recover_options *opts);
BATCHFIT_API int batchfit_recover_create(batchfit_ctx *ctx, const batchfit_recover_options *opts,
                                         batchfit_recover **out);
BATCHFIT_API void batchfit_recover_free(batchfit_recover *rec);
/* The plan for the next optimizer step. */
BATCHFIT_API const batchfit_recover_plan *batchfit_recover_get(const batchfit_recover *rec);
/* A step ran to the end. After grow_after clean steps (when set) the
 * micro-batch is raised toward the starting size; *changed says so. A
 * raise that runs out of memory bounds the next ones below its size, and
 * doubles the wait; once the run has held just below that size for the
 * wait, the size is tried again (running clean for the wait, the wait is
 * grow_after again; running out of memory meanwhile, the run goes back to
 * the size it was tried from).
 * Returns BATCHFIT_OK, or BATCHFIT_E_ABORTED where the resize callback
 * refused the larger plan (the plan stays the one the pipeline has). */
BATCHFIT_API int batchfit_recover_step_ok(batchfit_recover *rec, int *changed);
/* A step ran out of memory (retry it with the new plan). available_bytes
 * is the memory the step may use now, when known (0: unknown): with the
 * probe's curve the new micro-batch is the largest predicted to fit in it,
 * else the micro-batch is halved; never below the minimum. Returns
 * BATCHFIT_OK with a new plan, BATCHFIT_E_MIN_DOES_NOT_FIT when the minimum
 * itself ran out of memory or max_retries reductions came in a row, or
 * BATCHFIT_E_ABORTED when the resize callback said stop. Every decision is
 * logged with its reason. */
BATCHFIT_API int batchfit_recover_oom(batchfit_recover *rec, uint64_t available_bytes);

#ifdef __cplusplus
}
#endif

#endif /* BATCHFIT_H */
