/* Binding the entry points of a library loaded with dlopen: each slot takes
 * the first name that resolves (newest versioned names come first); a
 * required slot with no name resolving fails the whole bind. dlerror() is
 * cleared before each lookup so a stale error is never read as this one. */
#include "internal.h"

#include <dlfcn.h>
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
