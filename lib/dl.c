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

void *batchfit__dl_load(const char *const *paths, size_t npaths, const char *name,
                        const batchfit__dl_symbol *table, size_t count, void *target, char *error,
                        size_t error_len)
{
    void *handle = NULL;
    for (size_t i = 0; i < npaths && paths[i] && !handle; i++) {
        dlerror();
        handle = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        /* The first path's reason is the telling one. */
        if (!handle && i == 0) {
            const char *why = dlerror();
            snprintf(error, error_len, "cannot load %s%s%s%s: %s", paths[0],
                     npaths > 1 && paths[1] ? " (nor " : "", npaths > 1 && paths[1] ? paths[1] : "",
                     npaths > 1 && paths[1] ? ")" : "", why ? why : "not found");
        }
    }
    if (!handle)
        return NULL;
    const char *missing = NULL;
    if (batchfit__dl_bind(handle, table, count, target, &missing) != 0) {
        snprintf(error, error_len, "%s lacks %s", name, missing);
        dlclose(handle);
        return NULL;
    }
    return handle;
}

void batchfit__dl_named_by(char *error, size_t error_len, const char *variable)
{
    size_t n = strlen(error);
    if (n < error_len)
        snprintf(error + n, error_len - n, " (the library %s names)", variable);
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
