/* The cache: one small text file per key in a private directory, written
 * whole to a temporary file and renamed into place under a lock, so
 * concurrent probes never lose an entry or read half of one. A file that is
 * not ours, or is damaged, is reported and ignored. */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAGIC "batchfit-cache 1"
#define SUFFIX ".entry"

static int cache_dir(char *out, size_t len, char *err, size_t err_len)
{
    const char *explicit_dir = getenv("BATCHFIT_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    /* XDG: a relative XDG_CACHE_HOME is invalid and is ignored. A relative
     * BATCHFIT_CACHE_DIR is refused: the cache would follow the directory
     * batchfit runs in ("relcache" made one in each), and "~/x" (quoted,
     * so no shell expanded it) made a directory named "~". */
    if (explicit_dir && *explicit_dir && explicit_dir[0] != '/') {
        batchfit__errf(err, err_len,
                       "BATCHFIT_CACHE_DIR (%s) is relative: the cache would change with the "
                       "directory batchfit runs in; give an absolute path%s",
                       explicit_dir,
                       explicit_dir[0] == '~' ? " (a ~ no shell expanded: use $HOME)" : "");
        return BATCHFIT_E_INVALID_ARGUMENT;
    }
    if (explicit_dir && *explicit_dir)
        n = snprintf(out, len, "%s", explicit_dir);
    else if (xdg && xdg[0] == '/')
        n = snprintf(out, len, "%s/batchfit", xdg);
    else if (home && *home) {
        /* ~/.cache is made when missing, HOME itself never: a HOME that is
         * not there (a service account's /nonexistent) or is relative
         * would have the cache make directories where nobody looks. */
        struct stat st;
        if (home[0] != '/' || stat(home, &st) != 0 || !S_ISDIR(st.st_mode)) {
            /* A relative XDG_CACHE_HOME was passed over: say so, or the
             * advice to set it reads as if it had not been set. */
            batchfit__errf(err, err_len,
                           "no cache directory: HOME (%s) is not an existing absolute directory; "
                           "set BATCHFIT_CACHE_DIR or XDG_CACHE_HOME to an absolute path%s%s%s",
                           home, xdg && *xdg ? " (XDG_CACHE_HOME=" : "", xdg && *xdg ? xdg : "",
                           xdg && *xdg ? " is relative, and ignored)" : "");
            return BATCHFIT_E_INVALID_ARGUMENT;
        }
        n = snprintf(out, len, "%s/.cache/batchfit", home);
    } else {
        batchfit__errf(err, err_len,
                       "no cache directory: set BATCHFIT_CACHE_DIR, XDG_CACHE_HOME or HOME to an "
                       "absolute path%s%s%s",
                       xdg && *xdg ? " (XDG_CACHE_HOME=" : "", xdg && *xdg ? xdg : "",
                       xdg && *xdg ? " is relative, and ignored)" : "");
        return BATCHFIT_E_INVALID_ARGUMENT;
    }
    if (n < 0 || (size_t)n >= len) {
        out[0] = '\0'; /* never a cut path another directory's files would go to */
        batchfit__errf(err, err_len, "cache directory path is too long (%s)",
                       explicit_dir && *explicit_dir ? "BATCHFIT_CACHE_DIR"
                       : xdg && xdg[0] == '/'       ? "XDG_CACHE_HOME"
                                                    : "HOME");
        return BATCHFIT_E_INVALID_ARGUMENT;
    }
    return BATCHFIT_OK;
}

static uint64_t fnv1a(const char *s, size_t len, uint64_t seed)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325) ^ seed;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

void batchfit__cache_key(const char *material, size_t len, char out[40])
{
    snprintf(out, 40, "%016llx%016llx", (unsigned long long)fnv1a(material, len, 0),
             (unsigned long long)fnv1a(material, len, UINT64_C(0x9E3779B97F4A7C15)));
}

void batchfit__cache_material(batchfit__buf *b, const batchfit_options *o, batchfit_device *device,
                              const char *const *argv, const char *settings)
{
    batchfit_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    batchfit_device_describe(device, &info);
    uint64_t total = 0, free_bytes = 0;
    batchfit_device_memory(device, &total, &free_bytes);
    batchfit__buf_printf(b, "batchfit %s\ndevice %s %s %s %s %llu\n", BATCHFIT_VERSION_STRING,
                         batchfit_device_spec(device), info.kind, info.name, info.uuid,
                         (unsigned long long)total);
    /* Several GPUs: each is part of what the answer depends on. */
    for (unsigned i = 0; batchfit__device_is_list(device) && i < batchfit__device_gpus(device);
         i++) {
        batchfit_device *gpu = batchfit__device_gpu(device, i);
        batchfit_device_describe(gpu, &info);
        batchfit_device_memory(gpu, &total, &free_bytes);
        batchfit__buf_printf(b, "gpu %s %s %s %llu\n", batchfit_device_spec(gpu), info.name,
                             info.uuid, (unsigned long long)total);
    }
    if (o->cache_key)
        batchfit__buf_printf(b, "key %s\n", o->cache_key);
    else
        for (size_t i = 0; argv && argv[i]; i++)
            batchfit__buf_printf(b, "arg %s\n", argv[i]);
    batchfit__buf_printf(
        b,
        "settings margin=%.17g/%llu vram=%llu budget=%llu lattice=%d/%llu min=%llu max=%llu "
        "samples=%llu spread=%.17g strategy=%s max_trials=%u upper_limit=%llu estimate=%llu\n",
        o->margin_fraction, (unsigned long long)o->margin_bytes,
        (unsigned long long)o->vram_limit_bytes, (unsigned long long)o->memory_budget_bytes,
        (int)o->lattice, (unsigned long long)o->lattice_multiple, (unsigned long long)o->min_batch,
        (unsigned long long)o->requested_max, (unsigned long long)o->samples, o->peak_spread,
        batchfit_strategy_name(o->strategy), o->max_trials, (unsigned long long)o->upper_limit,
        (unsigned long long)o->first_guess);
    if (settings)
        batchfit__buf_printf(b, "%s\n", settings);
}

static int valid_key(const char *key)
{
    size_t n = strlen(key);
    if (n != 32)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((key[i] >= '0' && key[i] <= '9') || (key[i] >= 'a' && key[i] <= 'f')))
            return 0;
    return 1;
}

/* mkdir -p with mode 0700 for what it creates. */
static int make_dir(const char *dir, char *err, size_t err_len)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s", dir) >= sizeof path) {
        batchfit__errf(err, err_len, "cache directory path is too long");
        return BATCHFIT_E_INVALID_ARGUMENT;
    }
    for (char *p = path + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(path, 0700) != 0 && errno != EEXIST) {
                batchfit__errf(err, err_len, "cache directory %s: %s", path, strerror(errno));
                return BATCHFIT_E_INVALID_ARGUMENT;
            }
            *p = c;
            if (c == '\0')
                break;
        }
    }
    return BATCHFIT_OK;
}

/* Opens the cache directory, trusting it only when it is ours and nobody
 * else may write in it: otherwise another user could plant links at the
 * names we open and make us (perhaps root) write or read where they chose.
 * A link to such a directory is refused like the directory. Returns the
 * directory's descriptor; every file in it is then opened relative to it,
 * never following a link. */
static int open_dir(const char *dir, int create, char *err, size_t err_len, int *fd_out)
{
    *fd_out = -1;
    if (create) {
        int rc = make_dir(dir, err, err_len);
        if (rc)
            return rc;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return BATCHFIT_E_NOT_FOUND;
        batchfit__errf(err, err_len, "cache directory %s: %s", dir, strerror(errno));
        return BATCHFIT_E_INVALID_ARGUMENT;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
        int owned = st.st_uid == geteuid();
        batchfit__errf(err, err_len,
                       "cache directory %s is %s (mode %04o); the cache is off: use a private "
                       "directory (BATCHFIT_CACHE_DIR)",
                       dir, owned ? "writable by others" : "owned by another user",
                       (unsigned)(st.st_mode & 07777));
        close(fd);
        return BATCHFIT_E_INVALID_ARGUMENT;
    }
    *fd_out = fd;
    return BATCHFIT_OK;
}

static int lock_dir(int dir_fd)
{
    int fd = openat(dir_fd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0)
        flock(fd, LOCK_EX);
    return fd;
}

static void unlock_dir(int fd)
{
    if (fd >= 0) {
        flock(fd, LOCK_UN);
        close(fd);
    }
}

/* A whole decimal number without sign or junk, at most max. */
static int read_u64(const char *text, uint64_t max, uint64_t *out)
{
    if (*text < '0' || *text > '9')
        return 0;
    uint64_t v = 0;
    for (; *text >= '0' && *text <= '9'; text++) {
        if (v > (max - (uint64_t)(*text - '0')) / 10)
            return 0;
        v = v * 10 + (uint64_t)(*text - '0');
    }
    if (*text)
        return 0;
    *out = v;
    return 1;
}

/* The fitted line of an entry is a hint for the search: it must describe
 * memory a device could have (finite, non-negative slope and residual,
 * sizes below 2^62 bytes, at least two points). */
static int fit_describes_memory(const batchfit_fit *fit)
{
    double limit = 4611686018427387904.0; /* 2^62 bytes */
    return isfinite(fit->intercept_bytes) && isfinite(fit->bytes_per_sample) &&
           isfinite(fit->max_residual_bytes) && fabs(fit->intercept_bytes) < limit &&
           fit->bytes_per_sample >= 0 && fit->bytes_per_sample < limit &&
           fit->max_residual_bytes >= 0 && fit->max_residual_bytes < limit && fit->points >= 2 &&
           fit->points <= 1000;
}

static int read_fit(const char *value, batchfit_fit *fit)
{
    unsigned points;
    char tail;
    if (sscanf(value, "%lf %lf %lf %u %c", &fit->intercept_bytes, &fit->bytes_per_sample,
               &fit->max_residual_bytes, &points, &tail) != 4)
        return 0;
    fit->points = points;
    fit->valid = fit_describes_memory(fit);
    return fit->valid;
}

/* BATCHFIT_OK and *e when stored, BATCHFIT_E_NOT_FOUND when not, or an
 * error code with err. Every field is checked: a file that says anything
 * a probe could not have written is damaged. */
static int load_entry(const char *dir, const char *key, batchfit_cache_entry *e, char *err,
                      size_t err_len)
{
    if (!dir || !e) {
        batchfit__errf(err, err_len, "cache load: no %s given", !dir ? "directory" : "entry");
        return BATCHFIT_E_INVALID_ARGUMENT;
    }
    if (!key || !valid_key(key)) {
        batchfit__errf(err, err_len,
                       "cache: invalid key \"%.64s%s\" (a key is 32 lowercase hex digits; see batchfit cache "
                       "list)",
                       key ? key : "", key && strlen(key) > 64 ? "..." : "");
        return BATCHFIT_E_INVALID_ARGUMENT;
    }
    int dir_fd;
    int rc = open_dir(dir, 0, err, err_len, &dir_fd);
    if (rc)
        return rc;
    char name[64];
    snprintf(name, sizeof name, "%s" SUFFIX, key);
    /* Never blocking: a FIFO of that name held the probe, and cache list,
     * for ever. Only a regular file is an entry. */
    int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    close(dir_fd);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        batchfit__errf(err, err_len, "cache entry %s/%s is not a regular file; ignoring it", dir,
                       name);
        return BATCHFIT_E_PARSE;
    }
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        int why = errno;
        if (fd >= 0)
            close(fd);
        if (why == ENOENT)
            return BATCHFIT_E_NOT_FOUND;
        batchfit__errf(err, err_len, "cache entry %s/%s cannot be read (%s); ignoring it", dir,
                       name,
                       why == ELOOP ? "a symbolic link, which the cache does not follow"
                                    : strerror(why));
        return BATCHFIT_E_PARSE;
    }
    memset(e, 0, sizeof *e);
    char line[1024];
    int magic = 0, have_batch = 0, bad = 0;
    while (!bad && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *space = strchr(line, ' ');
        if (!magic) {
            magic = strcmp(line, MAGIC) == 0 ? 1 : -1;
            if (magic < 0)
                break;
            continue;
        }
        if (!space)
            continue;
        *space = '\0';
        const char *field = line, *value = space + 1;
        uint64_t v = 0;
        if (strcmp(field, "key") == 0) {
            snprintf(e->key, sizeof e->key, "%s", value);
        } else if (strcmp(field, "version") == 0) {
            snprintf(e->version, sizeof e->version, "%s", value);
        } else if (strcmp(field, "batch_size") == 0) {
            /* 2^40 samples, as for an estimate: beyond any batch trained. */
            have_batch = read_u64(value, UINT64_C(1) << 40, &e->batch_size) && e->batch_size > 0;
            bad = !have_batch;
        } else if (strcmp(field, "budget_bytes") == 0) {
            bad = !read_u64(value, UINT64_MAX, &e->budget_bytes);
        } else if (strcmp(field, "fit") == 0) {
            bad = !read_fit(value, &e->fit);
        } else if (strcmp(field, "created") == 0) {
            bad = !read_u64(value, INT64_MAX, &v);
            e->created = (int64_t)v;
        } else if (strcmp(field, "description") == 0) {
            snprintf(e->description, sizeof e->description, "%s", value);
        }
    }
    fclose(f);
    if (magic != 1 || bad || !have_batch || strcmp(e->key, key) != 0) {
        batchfit__errf(err, err_len, "cache entry %s/%s is %s; ignoring it", dir, name,
                       magic != 1 ? "not a batchfit cache file" : "damaged");
        memset(e, 0, sizeof *e);
        return BATCHFIT_E_PARSE;
    }
    return BATCHFIT_OK;
}

static int store_entry(const char *dir, const batchfit_cache_entry *e, char *err, size_t err_len)
{
    if (!dir || !e || !valid_key(e->key) || e->batch_size == 0) {
        batchfit__errf(err, err_len, "cache: invalid entry");
        return BATCHFIT_E_INVALID_ARGUMENT;
    }
    int dir_fd;
    int rc = open_dir(dir, 1, err, err_len, &dir_fd);
    if (rc)
        return rc;
    int lock = lock_dir(dir_fd);
    /* A fresh name, created exclusively: never an existing file or link. */
    char tmp[96], name[64];
    snprintf(name, sizeof name, "%s" SUFFIX, e->key);
    int fd = -1;
    for (unsigned attempt = 0; fd < 0 && attempt < 100; attempt++) {
        snprintf(tmp, sizeof tmp, ".tmp.%s.%ld.%u", e->key, (long)getpid(), attempt);
        fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        batchfit__errf(err, err_len, "cache: cannot write in %s: %s", dir, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlinkat(dir_fd, tmp, 0);
        }
        unlock_dir(lock);
        close(dir_fd);
        return BATCHFIT_E_INVALID_ARGUMENT;
    }
    /* The description is one line: newlines become spaces. */
    char desc[sizeof e->description];
    snprintf(desc, sizeof desc, "%s", e->description);
    for (char *p = desc; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    fprintf(f, MAGIC "\nkey %s\nversion %s\nbatch_size %llu\nbudget_bytes %llu\n", e->key,
            BATCHFIT_VERSION_STRING, (unsigned long long)e->batch_size,
            (unsigned long long)e->budget_bytes);
    /* Only a line the reader takes: a program whose memory does not grow
     * fits a slope of noise, a few bytes below 0, and its entry was then
     * read back as damaged and its answer searched again. */
    if (e->fit.valid && fit_describes_memory(&e->fit))
        fprintf(f, "fit %.17g %.17g %.17g %u\n", e->fit.intercept_bytes, e->fit.bytes_per_sample,
                e->fit.max_residual_bytes, e->fit.points);
    fprintf(f, "created %lld\ndescription %s\n", (long long)(e->created ? e->created : time(NULL)),
            desc);
    int bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad || renameat(dir_fd, tmp, dir_fd, name) != 0) {
        batchfit__errf(err, err_len, "cache: cannot write %s/%s: %s", dir, name, strerror(errno));
        unlinkat(dir_fd, tmp, 0);
        unlock_dir(lock);
        close(dir_fd);
        return BATCHFIT_E_INVALID_ARGUMENT;
    }
    unlock_dir(lock);
    close(dir_fd);
    return BATCHFIT_OK;
}

/* Calls fn for each entry file of the (trusted) directory; returns how
 * many fn counted, or -1 with errno. */
static int each_entry(int dir_fd, const char *dir,
                      int (*fn)(int dir_fd, const char *dir, const char *key, void *ud), void *ud)
{
    int fd = dup(dir_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int count = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        size_t n = strlen(ent->d_name);
        if (n != 32 + strlen(SUFFIX) || strcmp(ent->d_name + 32, SUFFIX) != 0)
            continue;
        char key[40];
        memcpy(key, ent->d_name, 32);
        key[32] = '\0';
        count += fn(dir_fd, dir, key, ud);
    }
    closedir(d);
    return count;
}

typedef struct list_state {
    batchfit_ctx *ctx;
    void (*fn)(const batchfit_cache_entry *, void *);
    void *userdata;
} list_state;

static int list_one(int dir_fd, const char *dir, const char *key, void *ud)
{
    (void)dir_fd;
    list_state *st = ud;
    batchfit_cache_entry e;
    char err[BATCHFIT_ERRMSG_MAX] = "";
    if (load_entry(dir, key, &e, err, sizeof err) != BATCHFIT_OK) {
        /* Said, not listed: a probe of that key ignores and replaces it. */
        batchfit__log(st->ctx, BATCHFIT_LOG_WARN, "%s",
                      err[0] ? err : "cache: an entry that cannot be read; ignoring it");
        return 0;
    }
    st->fn(&e, st->userdata);
    return 1;
}

/* Removes one entry; one that cannot be removed (a directory in its
 * place, a read-only directory) is warned of, not passed over in silence. */
static int remove_one(int dir_fd, const char *dir, const char *key, void *ud)
{
    batchfit_ctx *ctx = ud;
    char name[64];
    snprintf(name, sizeof name, "%s" SUFFIX, key);
    if (unlinkat(dir_fd, name, 0) == 0)
        return 1;
    batchfit__log(ctx, BATCHFIT_LOG_WARN, "cache clear: cannot remove %s/%s: %s", dir, name,
                  strerror(errno));
    return 0;
}

/* Runs fn over the entries of dir under its lock (when it exists). */
static int over_entries(batchfit_ctx *ctx, const char *dir,
                        int (*fn)(int dir_fd, const char *dir, const char *key, void *ud),
                        void *ud, size_t *count)
{
    char err[BATCHFIT_ERRMSG_MAX] = "";
    int dir_fd;
    if (count)
        *count = 0;
    int rc = open_dir(dir, 0, err, sizeof err, &dir_fd);
    if (rc == BATCHFIT_E_NOT_FOUND)
        return BATCHFIT_OK;
    if (rc)
        return batchfit__fail_with(ctx, rc, err);
    int lock = lock_dir(dir_fd);
    int n = each_entry(dir_fd, dir, fn, ud);
    int e = errno;
    unlock_dir(lock);
    close(dir_fd);
    if (n < 0)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "cache: cannot read %s: %s", dir,
                              strerror(e));
    if (count)
        *count = (size_t)n;
    return BATCHFIT_OK;
}

int batchfit_cache_list(batchfit_ctx *ctx, const char *dir,
                        void (*fn)(const batchfit_cache_entry *, void *), void *userdata,
                        size_t *count)
{
    if (!dir || !fn)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "cache list: no %s given",
                              !dir ? "directory" : "callback");
    list_state st = {ctx, fn, userdata};
    return over_entries(ctx, dir, list_one, &st, count);
}

int batchfit_cache_clear(batchfit_ctx *ctx, const char *dir, size_t *removed)
{
    if (!dir)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "cache clear: no directory given");
    return over_entries(ctx, dir, remove_one, ctx, removed);
}

int batchfit_cache_dir(batchfit_ctx *ctx, char *out, size_t len)
{
    char err[BATCHFIT_ERRMSG_MAX] = "";
    if (!out || len == 0)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "cache dir: no output given");
    return batchfit__fail_with(ctx, cache_dir(out, len, err, sizeof err), err);
}

int batchfit__cache_lookup(batchfit_ctx *ctx, const char *dir, const char *key,
                           batchfit_cache_entry *entry)
{
    char err[BATCHFIT_ERRMSG_MAX] = "";
    int rc = load_entry(dir, key, entry, err, sizeof err);
    if (rc == BATCHFIT_E_NOT_FOUND) {
        batchfit__log(ctx, BATCHFIT_LOG_DEBUG, "cache: no entry %s in %s", key, dir);
        return rc;
    }
    return batchfit__fail_with(ctx, rc, err);
}

int batchfit_cache_load(batchfit_ctx *ctx, const char *dir, const char *key,
                        batchfit_cache_entry *entry)
{
    int rc = batchfit__cache_lookup(ctx, dir, key, entry);
    if (rc == BATCHFIT_E_NOT_FOUND)
        return batchfit__fail(ctx, rc, "cache: no entry %s in %s", key, dir);
    return rc;
}

int batchfit__cache_store(batchfit_ctx *ctx, const char *dir, const batchfit_cache_entry *entry)
{
    char err[BATCHFIT_ERRMSG_MAX] = "";
    return batchfit__fail_with(ctx, store_entry(dir, entry, err, sizeof err), err);
}
