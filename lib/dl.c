/* Binding the entry points of a library loaded with dlopen: each slot takes
 * the first name that resolves (newest versioned names come first); a
 * required slot with no name resolving fails the whole bind. dlerror() is
 * cleared before each lookup so a stale error is never read as this one. */
#include "internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int batchfit__dl_bind(void *handle, const batchfit__dl_symbol *table, size_t count, void *target,
                      const char **missing)
{
    for (size_t i = 0; i < count; i++) {
        const batchfit__dl_symbol *sym = &table[i];
        void *fn = NULL;
        for (int k = 0; k < 3 && sym->names[k] && !fn; k++) {
            dlerror();
            fn = dlsym(handle, sym->names[k]);
            if (dlerror())
                fn = NULL;
        }
        if (!fn && sym->required) {
            *missing = sym->names[0];
            return -1;
        }
        memcpy((char *)target + sym->offset, &fn, sizeof fn);
    }
    return 0;
}

/* A path as a message shows it: a long one (a deep checkout) keeps its
 * start and its end, the library's own name, so what follows it in the
 * message (whose setting it was, why it failed) fits a short copy too. */
const char *batchfit__dl_shown_path(char *out, size_t len, const char *path)
{
    enum { HEAD = 28, TAIL = 64 };
    size_t n = strlen(path);
    if (n <= HEAD + TAIL + 3 || len < HEAD + TAIL + 4)
        return path;
    snprintf(out, len, "%.*s...%s", (int)HEAD, path, path + n - TAIL);
    return out;
}

void *batchfit__dl_load(const char *const *paths, size_t npaths, const char *name,
                        const char *named_by, const batchfit__dl_symbol *table, size_t count,
                        void *target, char *error, size_t error_len)
{
    /* The variable's note stands beside the path it explains, before the
     * loader's text, so a short copy of the message (a device's 256-byte
     * note) still says whose setting it was. */
    char by[64] = "";
    if (named_by)
        snprintf(by, sizeof by, " (the library %s names)", named_by);
    void *handle = NULL;
    for (size_t i = 0; i < npaths && paths[i] && !handle; i++) {
        dlerror();
        handle = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        /* The first path's reason is the telling one. glibc's text begins
         * with the path again ("PATH: cannot open shared object file"). */
        if (!handle && i == 0) {
            const char *why = dlerror();
            size_t n = strlen(paths[0]);
            if (why && strncmp(why, paths[0], n) == 0 && strncmp(why + n, ": ", 2) == 0)
                why += n + 2;
            int nor = npaths > 1 && paths[1];
            char first[128], second[128];
            const char *other = nor ? batchfit__dl_shown_path(second, sizeof second, paths[1]) : "";
            snprintf(error, error_len, "cannot load %s%s%s%s%s: %s",
                     batchfit__dl_shown_path(first, sizeof first, paths[0]), by,
                     nor ? " (nor " : "", other, nor ? ")" : "",
                     why ? why : "not found");
        }
    }
    if (!handle)
        return NULL;
    const char *missing = NULL;
    if (batchfit__dl_bind(handle, table, count, target, &missing) != 0) {
        char named[128];
        snprintf(error, error_len, "%s%s lacks %s",
                 batchfit__dl_shown_path(named, sizeof named, name), by, missing);
        dlclose(handle);
        return NULL;
    }
    return handle;
}

void batchfit__dl_unload(void *handle, void *target, size_t size, char *error, size_t error_len)
{
    if (handle)
        dlclose(handle);
    char keep[BATCHFIT_ERRMSG_MAX];
    batchfit__copy(keep, sizeof keep, error);
    memset(target, 0, size);
    batchfit__copy(error, error_len, keep);
}
