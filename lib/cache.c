/* The cache: one small text file per key in a private directory, written
 * whole to a temporary file and renamed into place under a lock, so
 * concurrent probes never lose an entry or read half of one. A file that is
 * not ours, or is damaged, is reported and ignored. */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
    if (explicit_dir && *explicit_dir)
        n = snprintf(out, len, "%s", explicit_dir);
    else if (xdg && *xdg)
        n = snprintf(out, len, "%s/batchfit", xdg);
    else if (home && *home)
        n = snprintf(out, len, "%s/.cache/batchfit", home);
    else {
        batchfit__errf(err, err_len,
                       "no cache directory: set BATCHFIT_CACHE_DIR, XDG_CACHE_HOME or HOME");
        return BATCHFIT_E_INVALID_ARGUMENT;
    }
    if (n < 0 || (size_t)n >= len) {
        batchfit__errf(err, err_len, "cache directory path is too long");
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
    snprintf(path, sizeof path, "%s", dir);
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

static int lock_dir(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
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

/* BATCHFIT_OK and *e when stored, BATCHFIT_E_NOT_FOUND when not, or an
 * error code with err. */
static int load_entry(const char *dir, const char *key, batchfit_cache_entry *e, char *err,
                      size_t err_len)
{
    if (!dir || !key || !e || !valid_key(key)) {
        batchfit__errf(err, err_len, "cache: invalid key \"%s\"", key ? key : "");
        return BATCHFIT_E_INVALID_ARGUMENT;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s" SUFFIX, dir, key);
    FILE *f = fopen(path, "r");
    if (!f)
        return BATCHFIT_E_NOT_FOUND;
    memset(e, 0, sizeof *e);
    char line[1024];
    int magic = 0, have_batch = 0;
    while (fgets(line, sizeof line, f)) {
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
        const char *name = line, *value = space + 1;
        if (strcmp(name, "key") == 0)
            snprintf(e->key, sizeof e->key, "%s", value);
        else if (strcmp(name, "version") == 0)
            snprintf(e->version, sizeof e->version, "%s", value);
        else if (strcmp(name, "batch_size") == 0)
            have_batch = sscanf(value, "%llu", (unsigned long long *)&e->batch_size) == 1;
        else if (strcmp(name, "budget_bytes") == 0)
            sscanf(value, "%llu", (unsigned long long *)&e->budget_bytes);
        else if (strcmp(name, "fit") == 0)
            e->fit.valid = sscanf(value, "%lf %lf %lf %u", &e->fit.intercept_bytes,
                                  &e->fit.bytes_per_sample, &e->fit.max_residual_bytes,
                                  &e->fit.points) == 4;
        else if (strcmp(name, "created") == 0)
            sscanf(value, "%lld", (long long *)&e->created);
        else if (strcmp(name, "description") == 0)
            snprintf(e->description, sizeof e->description, "%s", value);
    }
    fclose(f);
    if (magic != 1 || !have_batch || e->batch_size == 0 || strcmp(e->key, key) != 0) {
        batchfit__errf(err, err_len, "cache entry %s is %s; ignoring it", path,
                       magic != 1 ? "not a batchfit cache file" : "damaged");
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
    int rc = make_dir(dir, err, err_len);
    if (rc)
        return rc;
    int lock = lock_dir(dir);
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s/.tmp.%s.%ld", dir, e->key, (long)getpid());
    snprintf(path, sizeof path, "%s/%s" SUFFIX, dir, e->key);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        batchfit__errf(err, err_len, "cache: cannot write %s: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        unlock_dir(lock);
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
    if (e->fit.valid)
        fprintf(f, "fit %.17g %.17g %.17g %u\n", e->fit.intercept_bytes, e->fit.bytes_per_sample,
                e->fit.max_residual_bytes, e->fit.points);
    fprintf(f, "created %lld\ndescription %s\n", (long long)(e->created ? e->created : time(NULL)),
            desc);
    int bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        batchfit__errf(err, err_len, "cache: cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        unlock_dir(lock);
        return BATCHFIT_E_INVALID_ARGUMENT;
    }
    unlock_dir(lock);
    return BATCHFIT_OK;
}

/* Calls fn(dir, key) for each entry file. */
static int each_entry(const char *dir, int (*fn)(const char *dir, const char *key, void *ud),
                      void *ud)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    int count = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        size_t n = strlen(ent->d_name);
        if (n != 32 + strlen(SUFFIX) || strcmp(ent->d_name + 32, SUFFIX) != 0)
            continue;
        char key[40];
        memcpy(key, ent->d_name, 32);
        key[32] = '\0';
        count += fn(dir, key, ud);
    }
    closedir(d);
    return count;
}

typedef struct list_state {
    void (*fn)(const batchfit_cache_entry *, void *);
    void *userdata;
} list_state;

static int list_one(const char *dir, const char *key, void *ud)
{
    list_state *st = ud;
    batchfit_cache_entry e;
    if (load_entry(dir, key, &e, NULL, 0) != BATCHFIT_OK)
        return 0;
    st->fn(&e, st->userdata);
    return 1;
}

int batchfit_cache_list(batchfit_ctx *ctx, const char *dir,
                        void (*fn)(const batchfit_cache_entry *, void *), void *userdata,
                        size_t *count)
{
    if (!dir || !fn)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "cache list: no directory given");
    list_state st = {fn, userdata};
    int n = each_entry(dir, list_one, &st);
    if (n < 0)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "cache: cannot read %s: %s", dir,
                              strerror(errno));
    if (count)
        *count = (size_t)n;
    return BATCHFIT_OK;
}

static int remove_one(const char *dir, const char *key, void *ud)
{
    (void)ud;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s" SUFFIX, dir, key);
    return unlink(path) == 0;
}

int batchfit_cache_clear(batchfit_ctx *ctx, const char *dir, size_t *removed)
{
    if (!dir)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "cache clear: no directory given");
    int lock = -1;
    struct stat st;
    if (stat(dir, &st) == 0)
        lock = lock_dir(dir);
    int n = each_entry(dir, remove_one, NULL);
    int e = errno;
    unlock_dir(lock);
    if (n < 0)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "cache: cannot read %s: %s", dir,
                              strerror(e));
    if (removed)
        *removed = (size_t)n;
    return BATCHFIT_OK;
}

int batchfit_cache_dir(batchfit_ctx *ctx, char *out, size_t len)
{
    char err[BATCHFIT_ERRMSG_MAX] = "";
    if (!out || len == 0)
        return batchfit__fail(ctx, BATCHFIT_E_INVALID_ARGUMENT, "cache dir: no output given");
    return batchfit__fail_with(ctx, cache_dir(out, len, err, sizeof err), err);
}

int batchfit_cache_load(batchfit_ctx *ctx, const char *dir, const char *key,
                        batchfit_cache_entry *entry)
{
    char err[BATCHFIT_ERRMSG_MAX] = "";
    int rc = load_entry(dir, key, entry, err, sizeof err);
    if (rc == BATCHFIT_E_NOT_FOUND)
        return batchfit__fail(ctx, rc, "cache: no entry %s in %s", key, dir);
    return batchfit__fail_with(ctx, rc, err);
}

int batchfit__cache_store(batchfit_ctx *ctx, const char *dir, const batchfit_cache_entry *entry)
{
    char err[BATCHFIT_ERRMSG_MAX] = "";
    return batchfit__fail_with(ctx, store_entry(dir, entry, err, sizeof err), err);
}
