/* Internal declarations shared by the library's files. Not installed. */
#ifndef BATCHFIT_INTERNAL_H
#define BATCHFIT_INTERNAL_H

#include "batchfit.h"

#include <stdarg.h>
#include <sys/types.h>

#define BATCHFIT_ERRMSG_MAX 2048

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
/* How many of s's first n bytes to keep so that a cut there does not split
 * a UTF-8 character (n itself when it does not). */
size_t batchfit__utf8_cut(const char *s, size_t n);
/* The length of the well-formed UTF-8 sequence at p (1 to 4), or 0 when
 * the bytes there are not UTF-8 (overlong forms, surrogates and values
 * past U+10FFFF included). */
size_t batchfit__utf8_length(const unsigned char *p);
/* Copies src into dst of size bytes, truncating between characters;
 * always terminates. */
void batchfit__copy(char *dst, size_t size, const char *src);
/* snprintf into a caller's error buffer, tolerating NULL. */
void batchfit__errf(char *err, size_t err_len, const char *fmt, ...) BATCHFIT_PRINTF(3, 4);

/* Copies text into the result (freed with it) and points *field at it. */
int batchfit__result_keep(batchfit_result *result, const char **field, const char *text);
/* Marks the result complete with its status and error message (kept when
 * memory allows). */
void batchfit__result_complete(batchfit_ctx *ctx, batchfit_result *result, int code,
                               const char *message);
/* Records the ranks' agreement in the result, which takes outcomes. The
 * job's error names failed_rank (where >= 0) and says why, or else gives
 * that rank's own error. */
int batchfit__result_set_agreement(batchfit_result *result, batchfit_agree_mode mode,
                                   batchfit_rank_outcome *outcomes, size_t count, int status,
                                   int failed_rank, const char *why);
/* Gives the result room for count GPUs' budgets (zeroed) and returns it. */
batchfit_gpu_budget *batchfit__result_set_gpus(batchfit_result *result, size_t count);
/* Records the peaks on the result's GPUs of the trial at index trial (the
 * next one to be added). */
int batchfit__result_set_gpu_peaks(batchfit_result *result, size_t trial,
                                   const batchfit_gpu_peak *peaks);
/* Records which rank of a job runs the trial at index trial (the next ones
 * to be added). */
int batchfit__result_set_trial_rank(batchfit_result *result, size_t trial, int rank);
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
/* Adds a warning already logged (when it happened) to the result. */
int batchfit__result_warned(batchfit_ctx *ctx, batchfit_result *result, const char *text);
/* The address-space cap the trials ran under (a command's
 * enforce_address_space: RLIMIT_AS at the budget), which a failure far
 * under the budget in resident memory met; 0 where none. */
void batchfit__result_set_address_space_cap(batchfit_result *result, uint64_t bytes);
uint64_t batchfit__result_address_space_cap(const batchfit_result *result);
/* What this process held as an in-process probe on the host began, which
 * every trial's peak counts (0: none known, or a command's probe). */
void batchfit__result_set_held_before(batchfit_result *result, uint64_t bytes);
uint64_t batchfit__result_held_before(const batchfit_result *result);

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
/* Whether a fitted (or remembered) line still describes the reading peak
 * at batch: off by at most 1% of it, or by at most the band of a declared
 * spread (two draws) and the line's own largest residual; *miss (when
 * given) is how far off it is. */
int batchfit__fit_explains(const batchfit_fit *fit, double batch, double peak, double spread,
                           double *miss);

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
    /* Memory this process holds now that a trial run in it counts in its
     * peak while the free figure leaves it out (host: the anonymous and
     * shared pages VmHWM counts and MemAvailable does not); optional. */
    int (*self_held)(batchfit_device *dev, uint64_t *bytes);
    /* Memory the given processes hold on the device (NVML); optional. */
    int (*process_usage)(batchfit_device *dev, const long *pids, unsigned npids, uint64_t *bytes);
    /* Peak measurement around a trial; optional (NULL = cannot measure). */
    void (*peak_begin)(batchfit_device *dev);
    int (*peak_end)(batchfit_device *dev, uint64_t *peak);
    /* Fills what the backend knows beyond kind and availability (name,
     * UUID, ...); optional. */
    void (*describe)(const batchfit_device *dev, batchfit_device_info *info);
    /* A device of several GPUs: how many, and each (a "cuda:N" device);
     * NULL for every other device. */
    unsigned (*gpu_count)(const batchfit_device *dev);
    batchfit_device *(*gpu)(const batchfit_device *dev, unsigned i);
} batchfit_device_ops;

struct batchfit_device_s {
    batchfit_ctx *ctx;
    char *spec;                     /* as opened, "auto" resolved */
    const batchfit_device_ops *ops;
    int available;
    char reason[BATCHFIT_ERRMSG_MAX];
    char note[BATCHFIT_ERRMSG_MAX]; /* a limitation of a usable device */
    char chosen[BATCHFIT_ERRMSG_MAX]; /* the warning that chose it for another ("auto") */
    double peak_spread;
    void *backend;
};

/* Holds bytes of the device's memory as ballast, so that what runs next (a
 * trial in this process or a child process) sees only the rest; *held is
 * what was held (0 where the device cannot hold memory for others, such as
 * the host, where the watchdog keeps the budget instead). */
int batchfit__device_hold(batchfit_device *device, uint64_t bytes, uint64_t *held);
void batchfit__device_release(batchfit_device *device);

/* The GPUs of a device, as batchfit_device_gpu_count() counts them; the
 * i-th is a "cuda:N" device (for "cuda:N" the device itself). is_list:
 * opened from a list ("cuda:0,2", "cuda:all"), whose probes report each
 * GPU. */
unsigned batchfit__device_gpus(const batchfit_device *device);
batchfit_device *batchfit__device_gpu(const batchfit_device *device, unsigned i);
int batchfit__device_is_list(const batchfit_device *device);

/* device_sim.c: simulated device memory for the sim step. alloc returns 0,
 * or -1 when the device is out of memory (or is not a sim device). */
int batchfit__sim_alloc(batchfit_device *device, uint64_t bytes);
void batchfit__sim_free(batchfit_device *device, uint64_t bytes);
/* Bytes a sim device has allocated for steps (ballast excluded). */
uint64_t batchfit__sim_in_use(const batchfit_device *device);
/* Whether a sim device's spec describes its synthetic step (fixed,
 * per_sample, a jump or noise): keys a step of the caller's own ignores. */
int batchfit__sim_has_profile(const batchfit_device *device);

/* device_sim.c, device_host.c, device_cuda.c */
int batchfit__sim_open(batchfit_ctx *ctx, const char *params, batchfit_device *dev);
int batchfit__host_open(batchfit_ctx *ctx, batchfit_device *dev);
int batchfit__cuda_open(batchfit_ctx *ctx, const char *index, batchfit_device *dev);
/* device_gpus.c: "cuda:" followed by a list ("0,2") or "all". */
int batchfit__gpus_open(batchfit_ctx *ctx, const char *list, batchfit_device *dev);

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
 * nothing left open. name names the library in "NAME lacks SYMBOL";
 * named_by, when not NULL, is the environment variable that chose the
 * library, named in the error so a wrong override reads as the user's. */
void *batchfit__dl_load(const char *const *paths, size_t npaths, const char *name,
                        const char *named_by, const batchfit__dl_symbol *table, size_t count,
                        void *target, char *error, size_t error_len);
/* path as a message shows it: one over ~95 characters keeps its first 28
 * and last 64 (the library's own name) around "...", in out (len >= 96). */
const char *batchfit__dl_shown_path(char *out, size_t len, const char *path);
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

/* json.c: the top-level "max_batch_size" of a JSON text; *present (when
 * not NULL) says whether the text has that key at all. */
int batchfit__json_requested(const char *text, size_t len, const char *what, uint64_t *out,
                             int *present, char *err, size_t err_len);

/* template.c: "{batch}" placeholders. check validates an argument;
 * expand writes it with the batch filled in (returns the length it needs,
 * without the terminator, like snprintf). */
int batchfit__template_check(const char *arg, int *has_placeholder, char *err, size_t err_len);
size_t batchfit__template_expand(const char *arg, uint64_t batch, char *out, size_t out_len);

/* proc.c: the kernel's accounting under /proc. */
/* The process tree of a trial: the members found so far (sorted by pid,
 * with start times against pid reuse; no fixed cap, they grow through the
 * allocator) and the /proc walk's scratch space, kept between samples. */
typedef struct batchfit__proc_member {
    long pid;
    unsigned long long start;
} batchfit__proc_member;
typedef struct batchfit__proc_entry batchfit__proc_entry;
typedef struct batchfit__proc_tree {
    const batchfit_allocator *allocator;
    batchfit__proc_member *member;
    unsigned count;
    unsigned capacity;
    batchfit__proc_entry *scan;
    size_t scan_capacity;
    /* Several processes are summed by proportional set size (smaps_rollup,
     * a page-table walk); off where another reading (a cgroup's) is used
     * and the sum only finds the members. On from init. */
    int proportional;
    int rollup; /* this kernel has smaps_rollup */
    /* With proportional: the shared memory (tmpfs, MAP_SHARED) the sum
     * counts, each page once where smaps_rollup says so (Pss_Shmem). */
    uint64_t shmem_bytes;
    int shmem_known; /* the kernel said (an old one has no Pss_Shmem) */
    /* Children of ours that are not the trial's: its guard, and those the
     * caller had before the trial began (a program using the library may
     * have its own). Every other child of ours is a trial's orphan. */
    const long *spare;
    unsigned spare_count;
} batchfit__proc_tree;
void batchfit__proc_tree_init(batchfit__proc_tree *t, const batchfit_allocator *a);
/* Forgets the members, keeps the space (between trials). */
void batchfit__proc_tree_clear(batchfit__proc_tree *t);
void batchfit__proc_tree_free(batchfit__proc_tree *t);
int batchfit__meminfo(uint64_t *total, uint64_t *available);
/* The host's shared memory (tmpfs and shared anonymous pages): Shmem. */
int batchfit__meminfo_shmem(uint64_t *bytes);
/* The host's count of processes the out-of-memory killer killed (/proc/vmstat). */
int batchfit__vmstat_oom_kills(uint64_t *count);
int batchfit__self_rss(uint64_t *bytes);
/* This process's anonymous and shared resident memory (RssAnon + RssShmem). */
int batchfit__self_anon(uint64_t *bytes);
int batchfit__self_hwm(uint64_t *bytes);
int batchfit__self_hwm_reset(void);
/* A live process's high-water RSS (VmHWM) since its last exec: unlike
 * ru_maxrss, it excludes the image forked from its parent before exec. */
int batchfit__proc_hwm(long pid, uint64_t *bytes);
int batchfit__proc_hwm_reset(long pid);
/* A live process's private resident memory (smaps_rollup's Private_Clean
 * and Private_Dirty: pages no other process maps), and its shared resident
 * memory (Shared_Clean and Shared_Dirty: the rest of its RSS). */
int batchfit__proc_private(long pid, uint64_t *bytes);
int batchfit__proc_shared(long pid, uint64_t *bytes);
/* Sums the RSS of root, its descendants, our own reparented orphans and
 * every member already found (several of them, with t->proportional: their
 * proportional set sizes), and adds the new ones. 0; -1 when /proc
 * cannot be read; BATCHFIT_E_NO_MEMORY when the walk or the members cannot
 * grow (the sum and the members so far are kept). */
int batchfit__proc_tree_rss(batchfit__proc_tree *t, long root, uint64_t *rss_bytes);
int batchfit__proc_alive(long pid, unsigned long long start);
/* How many members of t other than root still run (neither gone nor
 * zombies), after a walk from root (batchfit__proc_tree_rss); the first
 * one's command name in name (len bytes, "" if none). */
unsigned batchfit__proc_tree_running(const batchfit__proc_tree *t, long root, char *name,
                                     size_t len);
/* Whether pid has exited and waits to be reaped (a zombie): dead, though
 * kill(pid, 0) still finds it. */
int batchfit__proc_exited(long pid);
/* Whether path is a script whose #! line names an interpreter that cannot
 * be run (1, with its path in interp), as execve reports with ENOENT or
 * EACCES for the script itself (probe_command.c). */
int batchfit__missing_interpreter(const char *path, char *interp, size_t len);
/* SIGKILLs and reaps every child of this process but the caller's: those
 * spared (the trial's guard, the caller's children when the trial began)
 * and those in this process's own session (a trial runs in a session of
 * its own). As a child subreaper, the orphans of a trial are ours. Returns
 * how many. No allocation, so it cleans up after a watch that could not
 * grow. hwm, when not NULL, is raised to the largest high-water RSS
 * (ru_maxrss) of those reaped that began at or after since (the trial's
 * start, in the clock ticks of /proc/PID/stat). */
unsigned batchfit__proc_reap_children(const long *spare, unsigned spare_count, uint64_t *hwm,
                                      unsigned long long since);
/* When the process pid began, in the clock ticks of /proc/PID/stat's
 * starttime; 0, or -1 where it cannot be read. */
int batchfit__proc_start(long pid, unsigned long long *start);
/* Reaps the child pid (retrying on EINTR; nothing where it is not ours),
 * raising *hwm (when not NULL) to its high-water RSS. */
void batchfit__proc_reap(long pid, uint64_t *hwm);
/* This process's children now (zombies only in this process's own
 * session: the caller's to reap; one outside it is a trial's late orphan),
 * up to max of them into pids; returns how many. No allocation. */
unsigned batchfit__proc_children(long *pids, unsigned max);

/* cgroup.c: per-trial cgroups for child processes. */
#define BATCHFIT__CGROUP_PATH_MAX 1024
typedef struct batchfit__cgroup {
    int version;                           /* 0: none, 1 or 2 */
    char parent[BATCHFIT__CGROUP_PATH_MAX]; /* where trial cgroups are made */
    char path[BATCHFIT__CGROUP_PATH_MAX];   /* the current trial's cgroup, "" if none */
    char why_not[256];                     /* why there is none */
} batchfit__cgroup;
int batchfit__cgroup_detect(batchfit__cgroup *cg);
/* A trial's cgroup under cg->parent, with a memory limit where
 * limit_bytes is not 0 (rounded up to a whole page: never under it);
 * no_swap: none of it swapped either (v2's memory.swap.max 0; v1's
 * memory.memsw.limit_in_bytes at the limit, or swappiness 0 where swap is
 * not accounted: a hard cap that swapping would not enforce). */
int batchfit__cgroup_create(batchfit__cgroup *cg, uint64_t limit_bytes, int no_swap);
int batchfit__cgroup_join_self(const batchfit__cgroup *cg, const char *procs_file);
int batchfit__cgroup_file(const batchfit__cgroup *cg, const char *name, char *out, size_t len);
/* The trial's anonymous + shared memory from memory.stat (page cache is
 * reclaimable: not counted); what the watchdog judges and the peak is
 * sampled from. */
int batchfit__cgroup_resident(const batchfit__cgroup *cg, uint64_t *bytes);
/* The kernel's high-water mark of the whole charge, page cache included. */
int batchfit__cgroup_peak(const batchfit__cgroup *cg, uint64_t *bytes);
int batchfit__cgroup_oom_kills(const batchfit__cgroup *cg, uint64_t *count);
/* Sends SIGKILL to every process in the cgroup (one pass; those forked
 * meanwhile need another); returns how many it reached. */
unsigned batchfit__cgroup_kill(const batchfit__cgroup *cg);
void batchfit__cgroup_destroy(batchfit__cgroup *cg);
/* Removes the trial cgroups under cg->parent whose owner (the pid in their
 * name) is gone, as a SIGKILLed batchfit leaves them, killing what still
 * runs in them first. Returns how many. */
unsigned batchfit__cgroup_sweep(const batchfit__cgroup *cg);
/* The memory limit on this process from its cgroups (its own and every one
 * above it, v2 and v1): the smallest limit and its cgroup's directory, and
 * the least room left under any of them (the limit less what the cgroup
 * holds, its clean page cache excepted) and that cgroup's directory.
 * Returns -1 when no cgroup limits this process's memory. */
typedef struct batchfit__memory_limit {
    uint64_t limit, room;
    uint64_t reclaimable; /* the room once dirty pages are written back too */
    char limit_where[BATCHFIT__CGROUP_PATH_MAX];
    char room_where[BATCHFIT__CGROUP_PATH_MAX];
} batchfit__memory_limit;
int batchfit__cgroup_memory_limit(batchfit__memory_limit *out);

/* guard.c: a process per trial that kills what the trial left running if
 * we die before we could (kill -9): its process group, the processes it
 * was told of (while each is still the same process) and its cgroup. */
typedef struct batchfit__guard {
    pid_t pid; /* -1: none */
    int fd;    /* our end of its socket, -1: none */
} batchfit__guard;
/* Starts a guard for the next trial (its cgroup, cg->path when not "");
 * -1 (g left with none) if it cannot be started. Started before the trial
 * is forked, it is then told the trial's group. */
int batchfit__guard_start(batchfit__guard *g, const batchfit__cgroup *cg);
void batchfit__guard_group(batchfit__guard *g, pid_t pgid);
/* Tells the guard the trial's processes as the last sample found them. */
void batchfit__guard_tell(batchfit__guard *g, const batchfit__proc_tree *tree);
/* The trial and what it left are gone (kill_everything): the guard is
 * killed (a guard killed does nothing) and reaped. */
void batchfit__guard_stop(batchfit__guard *g);

/* parse.c: a plain decimal number with optional fraction, no sign. */
int batchfit__parse_decimal(const char *text, double *out, const char **end);

/* search.c */
int batchfit__search_run(batchfit_ctx *ctx, const batchfit_options *opts,
                         batchfit_oracle_fn oracle, void *oracle_userdata,
                         batchfit_result *result);
/* The search for k identical devices: rounds of up to k trials (see
 * batchfit_search_parallel). */
int batchfit__search_run_parallel(batchfit_ctx *ctx, const batchfit_options *opts, unsigned k,
                                  batchfit_round_fn round, void *round_userdata,
                                  batchfit_result *result);

/* probe.c: settles result->budget from the device's free memory, the memory
 * budget, the VRAM limit and the margin; in_process: the trials run in this
 * process, whose peaks count what it holds already. */
int batchfit__settle_budget(batchfit_ctx *ctx, const batchfit_options *opts,
                            batchfit_device *device, int in_process, batchfit_result *result);

/* oom.c: out-of-memory signatures, POSIX extended regular expressions
 * matched against each line a child prints; the built-in rows first. */
typedef struct batchfit__oom_table_s batchfit__oom_table;
int batchfit__oom_table_create(batchfit_ctx *ctx, batchfit__oom_table **out);
/* A user pattern; BATCHFIT_E_PARSE if it does not compile (quoted). */
int batchfit__oom_table_add(batchfit__oom_table *table, const char *regex);
void batchfit__oom_table_free(batchfit__oom_table *table);
/* The source of the first row that matches the line, or NULL. */
const char *batchfit__oom_match(const batchfit__oom_table *table, const char *line);
/* The same, with where in line the match starts in *at (0 for a user's
 * pattern, compiled without positions). */
const char *batchfit__oom_match_at(const batchfit__oom_table *table, const char *line,
                                   size_t *at);
/* Whether the built-in row source names a failure in an accelerator's
 * memory (CUDA, ROCm, cuBLAS, cuDNN), not the host's. */
int batchfit__oom_on_device(const char *source);
/* Whether it names a failure in the host's memory (a CPU allocator, a
 * MemoryError, malloc), not a GPU's. Rows in neither list are either. */
int batchfit__oom_on_host(const char *source);
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
    int enforce;                 /* a hard cap of enforce_bytes: the cgroup's limit, else the
                                    group is stopped when its resident memory passes it */
    uint64_t enforce_bytes;
    /* RLIMIT_AS at enforce_bytes in the child, with or without enforce: a cap
     * on virtual memory (reservations, mappings, thread stacks count), far
     * below what a framework's resident memory can reach. Only on request. */
    int enforce_address_space;
    int crash_is_oom;
    double sample_interval;      /* seconds */
    const char *vram_limit_gb;   /* passed on as VRAM_LIMIT_GB when not NULL */
    int show_output;
    batchfit_cgroups cgroups;
    /* Without a cgroup, the host's shared memory grown during a trial
     * counts as the trial's (less what its processes map): only where this
     * runner's trials are the only ones on the host (not across MPI ranks,
     * whose trials run at once and may share it). On by default. */
    int host_shmem;
    const batchfit__oom_table *oom; /* NULL = the built-in table */
    batchfit_device *device;     /* the GPU or GPUs the trial uses (NULL: host memory) */
    /* Each GPU's own budget, in the device's order (NULL: budget_bytes for
     * each). The watchdog stops a trial when any GPU passes its own; a
     * trial's peak is the worst GPU's, scaled to budget_bytes. */
    const uint64_t *gpu_budget_bytes;
} batchfit__runner_options;
void batchfit__runner_options_init(batchfit__runner_options *opts);
int batchfit__runner_create(batchfit_ctx *ctx, const batchfit__runner_options *opts,
                            batchfit__runner **out);
void batchfit__runner_free(batchfit__runner *runner);
int batchfit__runner_has_placeholder(const batchfit__runner *runner);
const char *batchfit__runner_mechanisms(const batchfit__runner *runner);
/* How many times the last trial's watch loop woke up: a bound on it shows
 * the loop waits rather than spins. */
unsigned long batchfit__runner_wakeups(const batchfit__runner *runner);
/* seconds as a timespec nanosleep accepts (tv_nsec below 1e9, never
 * negative; at most a year). */
struct timespec;
void batchfit__timespec_from_seconds(double seconds, struct timespec *ts);
/* Runs the command once at batch and classifies how it ended into *trial
 * (trial->process filled). BATCHFIT_OK, BATCHFIT_E_ABORTED on an interrupt
 * (the group is killed first), BATCHFIT_E_TRIAL_ERROR when the command
 * could not be started (the cause in the last error), BATCHFIT_E_NO_MEMORY. */
int batchfit__runner_trial(batchfit__runner *runner, uint64_t batch, batchfit_trial *trial);
/* The last trial's peak on each GPU (*count of them; 0 without a GPU). */
const batchfit_gpu_peak *batchfit__runner_gpu_peaks(const batchfit__runner *runner,
                                                    unsigned *count);
/* peak scaled from a GPU's budget to the reference budget, rounded up, so
 * that it is within reference exactly when peak is within budget. */
uint64_t batchfit__scale_to_budget(uint64_t peak, uint64_t budget, uint64_t reference);
/* The interrupt request of batchfit_interrupt(): pending, and consumed. */
int batchfit__interrupt_pending(void);
void batchfit__interrupt_clear(void);

/* cache.c: the key is a hash of the whole material (never truncated). */
void batchfit__cache_key(const char *material, size_t len, char out[40]);
/* batchfit_cache_load, where a missing entry is no failure: it returns
 * BATCHFIT_E_NOT_FOUND with the last error untouched (a probe's every
 * first run logged it as an error and left it behind a success). */
int batchfit__cache_lookup(batchfit_ctx *ctx, const char *dir, const char *key,
                           batchfit_cache_entry *entry);
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
/* Copies the caller's options into own (a struct from an older header as
 * far as it goes, defaults past it), points *opts at the copy and checks it. */
int batchfit__options_take(batchfit_ctx *ctx, const batchfit_options **opts,
                           batchfit_options *own);

/* ranks can be used: struct_size, an allgather, size and rank in range
 * (agree.c; the agreement, trials across ranks and the options check). */
int batchfit__ranks_valid(const batchfit_ranks *ranks);

#endif
