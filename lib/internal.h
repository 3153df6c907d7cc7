/* Internal declarations shared by the library's files. Not installed. */
#ifndef BATCHFIT_INTERNAL_H
#define BATCHFIT_INTERNAL_H

#include "batchfit.h"

#include <stdarg.h>

#define BATCHFIT_ERRMSG_MAX 512

struct batchfit_ctx_s {
    batchfit_allocator allocator;
    batchfit_log_fn log_fn;
    void *log_userdata;
    batchfit_log_level log_min;
    char last_error[BATCHFIT_ERRMSG_MAX];
};

#if defined(__GNUC__)
#define BATCHFIT_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define BATCHFIT_PRINTF(fmt, args)
#endif

/* alloc.c: every allocation goes through the context's allocator. */
void *batchfit__alloc(const batchfit_allocator *a, size_t size);
void *batchfit__calloc(const batchfit_allocator *a, size_t count, size_t size);
void *batchfit__realloc(const batchfit_allocator *a, void *ptr, size_t size);
void batchfit__free(const batchfit_allocator *a, void *ptr);
char *batchfit__strdup(const batchfit_allocator *a, const char *s);

/* log.c */
void batchfit__log(batchfit_ctx *ctx, batchfit_log_level level, const char *fmt, ...)
    BATCHFIT_PRINTF(3, 4);
/* Records the detail of a failure and returns code, so callers can write
 * `return batchfit__fail(ctx, CODE, "...")`. */
int batchfit__fail(batchfit_ctx *ctx, int code, const char *fmt, ...) BATCHFIT_PRINTF(3, 4);
/* Records message as the failure's detail when code is not BATCHFIT_OK;
 * returns code. */
int batchfit__fail_with(batchfit_ctx *ctx, int code, const char *message);
/* Copies src into dst of size bytes, truncating; always terminates. */
void batchfit__copy(char *dst, size_t size, const char *src);
/* snprintf into a caller's error buffer, tolerating NULL. */
void batchfit__errf(char *err, size_t err_len, const char *fmt, ...) BATCHFIT_PRINTF(3, 4);

/* Copies text into the result (freed with it) and points *field at it. */
int batchfit__result_keep(batchfit_result *result, const char **field, const char *text);
/* Marks the result complete with its status and error message (kept when
 * memory allows). */
void batchfit__result_complete(batchfit_ctx *ctx, batchfit_result *result, int code,
                               const char *message);
/* Copies a NULL-terminated argv into result->command. */
int batchfit__result_keep_command(batchfit_result *result, const char *const *argv);
/* The allocator the result frees with. */
const batchfit_allocator *batchfit__result_allocator(const batchfit_result *result);
/* Hands svg (allocated with the result's allocator) to the result, freeing
 * the previous picture; returns svg. */
const char *batchfit__result_set_svg(const batchfit_result *result, char *svg);

/* clock.c: seconds on the monotonic clock. */
double batchfit__now(void);

/* rand.c: splitmix64, a small well-mixed generator (a seed reproduces a run). */
uint64_t batchfit__splitmix64(uint64_t *state);

/* buf.c: a growing string. Every append checks its room; a failed
 * allocation marks the buffer failed and later appends do nothing, so a
 * caller checks once at the end. */
typedef struct batchfit__buf {
    const batchfit_allocator *allocator;
    char *data;   /* NUL-terminated when len > 0 */
    size_t len;
    size_t cap;
    int failed;
} batchfit__buf;
void batchfit__buf_init(batchfit__buf *b, const batchfit_allocator *a);
void batchfit__buf_printf(batchfit__buf *b, const char *fmt, ...) BATCHFIT_PRINTF(2, 3);
void batchfit__buf_append(batchfit__buf *b, const char *data, size_t len);
/* The text ("" when empty); NULL when an allocation failed. */
const char *batchfit__buf_text(const batchfit__buf *b);
void batchfit__buf_free(batchfit__buf *b);

/* parse.c: a and b as batchfit_format_bytes writes them, with more digits
 * when the two texts would be the same for different figures. */
void batchfit__format_bytes_apart(double a, double b, char *ta, char *tb, size_t len);

/* parse.c, estimate.c: the parsers with a caller's error buffer (err may be
 * NULL), behind the public ones that report through the context. */
int batchfit__parse_size(const char *text, const char *what, uint64_t *bytes_out, char *err,
                         size_t err_len);
int batchfit__parse_percent(const char *text, const char *what, double *fraction_out, char *err,
                            size_t err_len);
int batchfit__parse_requested_size(const char *text, const char *what, uint64_t *size_out,
                                   char *err, size_t err_len);
/* A positive whole number, at most max_value. */
int batchfit__parse_count(const char *text, const char *what, uint64_t max_value,
                          uint64_t *value_out, char *err, size_t err_len);
int batchfit__resolve_vram_limit(const char *explicit_text, const char *flag_name,
                                 uint64_t *bytes_out, const char **source_out, char *err,
                                 size_t err_len);
int batchfit__parse_strategy(const char *text, const char *what, batchfit_strategy *out,
                             char *err, size_t err_len);
int batchfit__parse_params(const char *text, const char *what, uint64_t *out, char *err,
                           size_t err_len);
int batchfit__parse_precision(const char *text, const char *what, batchfit_precision *out,
                              char *err, size_t err_len);
int batchfit__parse_optimizer(const char *text, const char *what, batchfit_optimizer *out,
                              char *err, size_t err_len);

/* result.c */
batchfit_result *batchfit__result_new(batchfit_ctx *ctx);
int batchfit__result_add_trial(batchfit_result *result, const batchfit_trial *trial);
/* Adds a warning to the result and logs it at WARN. Returns BATCHFIT_OK or
 * BATCHFIT_E_NO_MEMORY. */
int batchfit__result_warn(batchfit_ctx *ctx, batchfit_result *result, const char *fmt, ...)
    BATCHFIT_PRINTF(3, 4);

/* lattice.c: the allowed batch sizes in [min, bound], indexed 0..count-1. */
typedef struct batchfit_lattice {
    batchfit_lattice_kind kind;
    uint64_t step;        /* EVERY: 1; MULTIPLE: the multiple */
    uint64_t first;       /* arithmetic kinds: the smallest point */
    uint64_t count;
    uint64_t points[66];  /* POW2: the explicit points, ascending */
} batchfit_lattice;

/* Smallest lattice point >= x (for the lattice without bounds); 0 if none. */
uint64_t batchfit__lattice_ceil(batchfit_lattice_kind kind, uint64_t multiple, uint64_t extra,
                                uint64_t x);
/* Largest lattice point <= x; 0 if none. */
uint64_t batchfit__lattice_floor(batchfit_lattice_kind kind, uint64_t multiple, uint64_t extra,
                                 uint64_t x);
/* Builds the lattice over [min, bound] (both on the lattice). extra is the
 * one extra candidate of a power-of-two lattice (0 = none). */
void batchfit__lattice_init(batchfit_lattice *l, batchfit_lattice_kind kind, uint64_t multiple,
                            uint64_t extra, uint64_t min, uint64_t bound);
uint64_t batchfit__lattice_value(const batchfit_lattice *l, uint64_t index);
/* Index of the largest point <= x, or -1 if x is below every point. */
int64_t batchfit__lattice_index_floor(const batchfit_lattice *l, uint64_t x);

/* curve.c: least squares line through (batch, peak) points. */
void batchfit__fit_line(const double *x, const double *y, unsigned n, batchfit_fit *fit);

/* device.c: the device interface, a table of function pointers. */
typedef struct batchfit_device_ops {
    const char *kind;
    /* Frees the backend's state (not the device itself). */
    void (*destroy)(batchfit_device *dev);
    int (*memory)(batchfit_device *dev, uint64_t *total, uint64_t *free_bytes);
    /* Holds bytes as ballast until release_hold. */
    int (*hold)(batchfit_device *dev, uint64_t bytes);
    void (*release_hold)(batchfit_device *dev);
    /* Memory the calling process holds on the device now; optional. */
    int (*usage)(batchfit_device *dev, uint64_t *bytes);
    /* Memory the given processes hold on the device (NVML); optional. */
    int (*process_usage)(batchfit_device *dev, const long *pids, unsigned npids, uint64_t *bytes);
    /* Peak measurement around a trial; optional (NULL = cannot measure). */
    void (*peak_begin)(batchfit_device *dev);
    int (*peak_end)(batchfit_device *dev, uint64_t *peak);
    /* Fills what the backend knows beyond kind and availability (name,
     * UUID, ...); optional. */
    void (*describe)(const batchfit_device *dev, batchfit_device_info *info);
} batchfit_device_ops;

struct batchfit_device_s {
    batchfit_ctx *ctx;
    char *spec;                     /* as opened, "auto" resolved */
    const batchfit_device_ops *ops;
    int available;
    char reason[BATCHFIT_ERRMSG_MAX];
    char note[BATCHFIT_ERRMSG_MAX]; /* a limitation of a usable device */
    double peak_spread;
    void *backend;
};

/* Holds bytes of the device's memory as ballast, so that what runs next (a
 * trial in this process or a child process) sees only the rest; *held is
 * what was held (0 where the device cannot hold memory for others, such as
 * the host, where the watchdog keeps the budget instead). */
int batchfit__device_hold(batchfit_device *device, uint64_t bytes, uint64_t *held);
void batchfit__device_release(batchfit_device *device);

/* device_sim.c: simulated device memory for the sim step. alloc returns 0,
 * or -1 when the device is out of memory (or is not a sim device). */
int batchfit__sim_alloc(batchfit_device *device, uint64_t bytes);
void batchfit__sim_free(batchfit_device *device, uint64_t bytes);
/* Bytes a sim device has allocated for steps (ballast excluded). */
uint64_t batchfit__sim_in_use(const batchfit_device *device);

/* device_sim.c, device_host.c, device_cuda.c */
int batchfit__sim_open(batchfit_ctx *ctx, const char *params, batchfit_device *dev);
int batchfit__host_open(batchfit_ctx *ctx, batchfit_device *dev);
int batchfit__cuda_open(batchfit_ctx *ctx, const char *index, batchfit_device *dev);

/* device_cuda.c: how many devices the CUDA driver shows (BATCHFIT_OK, or
 * BATCHFIT_E_NO_DEVICE with why), and whether NVML loads (1, or 0 with why). */
int batchfit__cuda_count(unsigned *count, char *why, size_t why_len);
int batchfit__nvml_usable(char *why, size_t why_len);

/* dl.c: binds a table of symbols (names newest first) into a struct of
 * function pointers; 0, or -1 with the first missing required name. */
typedef struct batchfit__dl_symbol {
    const char *names[3];
    size_t offset;
    int required;
} batchfit__dl_symbol;
int batchfit__dl_bind(void *handle, const batchfit__dl_symbol *table, size_t count, void *target,
                      const char **missing);
/* The one load sequence of a runtime-loaded library: the first of paths
 * that opens (the first path's failure is the reason given), its table
 * bound into target. Returns the handle, or NULL with error filled and
 * nothing left open. name names the library in "NAME lacks SYMBOL". */
void *batchfit__dl_load(const char *const *paths, size_t npaths, const char *name,
                        const batchfit__dl_symbol *table, size_t count, void *target, char *error,
                        size_t error_len);
/* Closes handle (may be NULL) and clears the size bytes of target, keeping
 * the error message that lies inside it. */
void batchfit__dl_unload(void *handle, void *target, size_t size, char *error, size_t error_len);

/* nvml.c: NVML loaded with dlopen. Function pointers are untyped where the
 * NVML types are opaque handles. */
typedef struct batchfit__nvml {
    void *handle;
    int initialized;
    char error[256];
    int (*init)(void);
    int (*shutdown)(void);
    int (*device_count)(unsigned *count);
    int (*by_index)(unsigned index, void **dev);
    int (*by_uuid)(const char *uuid, void **dev);
    int (*name)(void *dev, char *buf, unsigned len);
    int (*uuid)(void *dev, char *buf, unsigned len);
    int (*memory_v1)(void *dev, void *memory);
    int (*memory_v2)(void *dev, void *memory);
    int (*pci)(void *dev, void *pci_info);
    int (*processes_v3)(void *dev, unsigned *count, void *infos);
    int (*processes_v2)(void *dev, unsigned *count, void *infos);
    int (*processes_v1)(void *dev, unsigned *count, void *infos);
    const char *(*error_string)(int rc);
} batchfit__nvml;
int batchfit__nvml_load(batchfit__nvml *n);
void batchfit__nvml_unload(batchfit__nvml *n);
const char *batchfit__nvml_strerror(const batchfit__nvml *n, int rc);
int batchfit__nvml_memory(const batchfit__nvml *n, void *dev, uint64_t *total, uint64_t *free_bytes);
int batchfit__nvml_process_usage(const batchfit__nvml *n, const batchfit_allocator *a, void *dev,
                                 const long *pids, unsigned npids, uint64_t *bytes);

/* cuda.c: the CUDA driver API loaded with dlopen. */
typedef struct batchfit__cuda {
    void *handle;
    char error[256];
    int (*init)(unsigned flags);
    int (*device_count)(int *count);
    int (*device_get)(int *dev, int ordinal);
    int (*name)(char *buf, int len, int dev);
    int (*total_mem)(size_t *bytes, int dev);
    int (*ctx_retain)(void **ctx, int dev);
    int (*ctx_release)(int dev);
    int (*ctx_set_current)(void *ctx);
    int (*mem_get_info)(size_t *free_bytes, size_t *total);
    int (*mem_alloc)(unsigned long long *ptr, size_t bytes);
    int (*mem_free)(unsigned long long ptr);
    int (*uuid)(unsigned char *uuid16, int dev);
    int (*pci_bus_id)(char *buf, int len, int dev);
    int (*driver_version)(int *version);
    int (*error_name)(int rc, const char **name);
} batchfit__cuda;
int batchfit__cuda_load(batchfit__cuda *c);
void batchfit__cuda_unload(batchfit__cuda *c);
const char *batchfit__cuda_strerror(const batchfit__cuda *c, int rc);
void batchfit__cuda_format_uuid(const unsigned char raw[16], char *out, size_t len);

/* json.c: the top-level "max_batch_size" of a JSON text. */
int batchfit__json_requested(const char *text, size_t len, const char *what, uint64_t *out,
                             char *err, size_t err_len);

/* template.c: "{batch}" placeholders. check validates an argument;
 * expand writes it with the batch filled in (returns the length it needs,
 * without the terminator, like snprintf). */
int batchfit__template_check(const char *arg, int *has_placeholder, char *err, size_t err_len);
size_t batchfit__template_expand(const char *arg, uint64_t batch, char *out, size_t out_len);

/* proc.c: the kernel's accounting under /proc. */
#define BATCHFIT__PIDSET_MAX 4096
typedef struct batchfit__pidset {
    unsigned count;
    long pid[BATCHFIT__PIDSET_MAX];
    unsigned long long start[BATCHFIT__PIDSET_MAX]; /* start time, against pid reuse */
} batchfit__pidset;
int batchfit__meminfo(uint64_t *total, uint64_t *available);
int batchfit__self_rss(uint64_t *bytes);
int batchfit__self_hwm(uint64_t *bytes);
int batchfit__self_hwm_reset(void);
/* Sums the RSS of root, its descendants, our own reparented orphans and
 * every process already in seen (which grows with what is found). */
int batchfit__proc_tree_rss(long root, batchfit__pidset *seen, uint64_t *rss_bytes);
int batchfit__proc_alive(long pid, unsigned long long start);

/* cgroup.c: per-trial cgroups for child processes. */
#define BATCHFIT__CGROUP_PATH_MAX 1024
typedef struct batchfit__cgroup {
    int version;                           /* 0: none, 1 or 2 */
    char parent[BATCHFIT__CGROUP_PATH_MAX]; /* where trial cgroups are made */
    char path[BATCHFIT__CGROUP_PATH_MAX];   /* the current trial's cgroup, "" if none */
    char why_not[256];                     /* why there is none */
} batchfit__cgroup;
int batchfit__cgroup_detect(batchfit__cgroup *cg);
int batchfit__cgroup_create(batchfit__cgroup *cg, uint64_t limit_bytes);
int batchfit__cgroup_join_self(const batchfit__cgroup *cg, const char *procs_file);
int batchfit__cgroup_file(const batchfit__cgroup *cg, const char *name, char *out, size_t len);
int batchfit__cgroup_usage(const batchfit__cgroup *cg, uint64_t *bytes);
int batchfit__cgroup_peak(const batchfit__cgroup *cg, uint64_t *bytes);
int batchfit__cgroup_oom_kills(const batchfit__cgroup *cg, uint64_t *count);
void batchfit__cgroup_destroy(batchfit__cgroup *cg);

/* parse.c: a plain decimal number with optional fraction, no sign. */
int batchfit__parse_decimal(const char *text, double *out, const char **end);

/* search.c */
int batchfit__search_run(batchfit_ctx *ctx, const batchfit_options *opts,
                         batchfit_oracle_fn oracle, void *oracle_userdata,
                         batchfit_result *result);

/* probe.c: settles result->budget from the device's free memory, the memory
 * budget, the VRAM limit and the margin. */
int batchfit__settle_budget(batchfit_ctx *ctx, const batchfit_options *opts,
                            batchfit_device *device, batchfit_result *result);

/* oom.c: out-of-memory signatures, POSIX extended regular expressions
 * matched against each line a child prints; the built-in rows first. */
typedef struct batchfit__oom_table_s batchfit__oom_table;
int batchfit__oom_table_create(batchfit_ctx *ctx, batchfit__oom_table **out);
/* A user pattern; BATCHFIT_E_PARSE if it does not compile (quoted). */
int batchfit__oom_table_add(batchfit__oom_table *table, const char *regex);
void batchfit__oom_table_free(batchfit__oom_table *table);
/* The source of the first row that matches the line, or NULL. */
const char *batchfit__oom_match(const batchfit__oom_table *table, const char *line);
/* The built-in rows, for documentation and tests: i from 0 while it
 * returns 1. */
int batchfit__oom_builtin(size_t i, const char **source, const char **pattern,
                          const char **example);

/* child.c: running a command once per trial. */
typedef struct batchfit__runner_s batchfit__runner;
typedef struct batchfit__runner_options {
    const char *const *argv;
    double timeout_seconds;
    double kill_grace_seconds;
    uint64_t budget_bytes;       /* the watchdog's threshold; 0 = no watchdog */
    int watchdog;
    int enforce;                 /* a hard cap of enforce_bytes (cgroup limit, else RLIMIT_AS) */
    uint64_t enforce_bytes;
    int crash_is_oom;
    double sample_interval;      /* seconds */
    const char *vram_limit_gb;   /* passed on as VRAM_LIMIT_GB when not NULL */
    int show_output;
    batchfit_cgroups cgroups;
    const batchfit__oom_table *oom; /* NULL = the built-in table */
    batchfit_device *device;     /* a GPU the trial uses (NULL: host memory) */
} batchfit__runner_options;
void batchfit__runner_options_init(batchfit__runner_options *opts);
int batchfit__runner_create(batchfit_ctx *ctx, const batchfit__runner_options *opts,
                            batchfit__runner **out);
void batchfit__runner_free(batchfit__runner *runner);
int batchfit__runner_has_placeholder(const batchfit__runner *runner);
const char *batchfit__runner_mechanisms(const batchfit__runner *runner);
/* Runs the command once at batch and classifies how it ended into *trial
 * (trial->process filled). BATCHFIT_OK, BATCHFIT_E_ABORTED on an interrupt
 * (the group is killed first), BATCHFIT_E_TRIAL_ERROR when the command
 * could not be started (the cause in the last error), BATCHFIT_E_NO_MEMORY. */
int batchfit__runner_trial(batchfit__runner *runner, uint64_t batch, batchfit_trial *trial);
/* The interrupt request of batchfit_interrupt(): pending, and consumed. */
int batchfit__interrupt_pending(void);
void batchfit__interrupt_clear(void);

/* cache.c: the key is a hash of the whole material (never truncated). */
void batchfit__cache_key(const char *material, size_t len, char out[40]);
int batchfit__cache_store(batchfit_ctx *ctx, const char *dir, const batchfit_cache_entry *entry);
/* Builds the key material of a probe: the device, what is probed (argv or
 * the cache key) and every setting that changes the answer. */
void batchfit__cache_material(batchfit__buf *b, const batchfit_options *opts,
                              batchfit_device *device, const char *const *argv,
                              const char *settings);

/* json_write.c: the result's one JSON writer. */
int batchfit__result_write_json(const batchfit_result *result, batchfit__buf *out);

/* decide.c: fills min, bound, lattice of result from opts and warns. */
int batchfit__decide_bounds(batchfit_ctx *ctx, const batchfit_options *opts, uint64_t step_min,
                            batchfit_result *result);
int batchfit__check_options(batchfit_ctx *ctx, const batchfit_options *opts);

#endif
