#include "test.h"

#include "internal.h"

#include <dlfcn.h>

typedef struct bound {
    void *first;
    void *second;
    void *optional;
} bound;

/* Binds from the C library already loaded: the newest name that resolves
 * wins, an optional miss leaves NULL, a required miss names the symbol. */
TEST(dl_binds_newest_names_first)
{
    void *self = dlopen(NULL, RTLD_NOW);
    CHECK(self != NULL);
    const batchfit__dl_symbol table[] = {
        {{"batchfit_no_such_symbol_v9", "malloc", NULL}, offsetof(bound, first), 1},
        {{"free", NULL, NULL}, offsetof(bound, second), 1},
        {{"batchfit_absent", NULL, NULL}, offsetof(bound, optional), 0},
    };
    bound b;
    memset(&b, 0xFF, sizeof b);
    const char *missing = NULL;
    CHECK_EQ(batchfit__dl_bind(self, table, 3, &b, &missing), 0);
    CHECK(b.first == dlsym(self, "malloc"));
    CHECK(b.second == dlsym(self, "free"));
    CHECK(b.optional == NULL);
    const batchfit__dl_symbol required[] = {
        {{"batchfit_required_missing", NULL, NULL}, offsetof(bound, first), 1},
    };
    CHECK_EQ(batchfit__dl_bind(self, required, 1, &b, &missing), -1);
    CHECK_STR(missing, "batchfit_required_missing");
    dlclose(self);
}
