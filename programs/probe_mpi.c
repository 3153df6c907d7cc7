/* --mpi: the probe as one rank of an MPI job. libbatchfit-mpi is loaded
 * with dlopen, so batchfit itself never links MPI; every rank probes its own
 * device, then the ranks agree (batchfit_agree) through one all-gather. */
#include "probe.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*start_fn)(int *, char ***, batchfit_ranks *, int *, char *, size_t);
typedef void (*finish_fn)(batchfit_ranks *);
typedef void (*abort_fn)(batchfit_ranks *, int);
typedef void (*announce_fn)(const batchfit_ranks *);
typedef int (*peer_fn)(const batchfit_ranks *);
typedef int (*local_size_fn)(const batchfit_ranks *);

struct probe_mpi {
    void *handle;
    batchfit_ranks ranks;
    int local_rank;
    finish_fn finish;
    abort_fn abort_job;
    announce_fn announce;
    peer_fn peer_failed;
    local_size_fn local_size; /* NULL: a plugin from before it (one rank a node assumed) */
};

/* Where the plugin is: BATCHFIT_MPI_LIBRARY alone when it is set (a wrong
 * one is the user's to hear about, not a cue to load another), else beside
 * this program (the build tree), the installed library directory, then the
 * loader's path. */
static void *load(const char *env, char *why, size_t why_len)
{
    if (env && *env) {
        void *h = dlopen(env, RTLD_NOW | RTLD_GLOBAL);
        if (!h)
            snprintf(why, why_len, "%s", dlerror());
        return h;
    }
    char self[PATH_MAX], candidates[2][PATH_MAX + 32];
    size_t n = 0;
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len > 0) {
        self[len] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            snprintf(candidates[n++], sizeof candidates[0], "%s/libbatchfit-mpi.so", self);
            snprintf(candidates[n++], sizeof candidates[0], "%s/../lib/libbatchfit-mpi.so", self);
        }
    }
    for (size_t i = 0; i < n; i++) {
        void *h = dlopen(candidates[i], RTLD_NOW | RTLD_GLOBAL);
        if (h)
            return h;
    }
    void *h = dlopen("libbatchfit-mpi.so", RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        snprintf(why, why_len, "%s", dlerror());
    return h;
}

int probe_mpi_start(probe_mpi **out)
{
    char why[1024] = "not found";
    *out = NULL;
    probe_mpi *m = calloc(1, sizeof *m);
    if (!m)
        return probe_bad_value("--mpi: out of memory");
    const char *env = getenv("BATCHFIT_MPI_LIBRARY");
    m->handle = load(env, why, sizeof why);
    if (!m->handle) {
        free(m);
        if (env && *env)
            fprintf(stderr, "batchfit probe: --mpi: cannot load the library the environment "
                            "variable BATCHFIT_MPI_LIBRARY names: %s\n",
                    why);
        else
            fprintf(stderr, "batchfit probe: --mpi: cannot load libbatchfit-mpi.so (%s); build "
                            "it with MPI installed (make builds it when mpicc exists) or set "
                            "BATCHFIT_MPI_LIBRARY\n",
                    why);
        return EXIT_USAGE;
    }
    start_fn start = (start_fn)(uintptr_t)dlsym(m->handle, "batchfit_mpi_start");
    m->finish = (finish_fn)(uintptr_t)dlsym(m->handle, "batchfit_mpi_finish");
    m->abort_job = (abort_fn)(uintptr_t)dlsym(m->handle, "batchfit_mpi_abort");
    m->announce = (announce_fn)(uintptr_t)dlsym(m->handle, "batchfit_mpi_announce_failure");
    m->peer_failed = (peer_fn)(uintptr_t)dlsym(m->handle, "batchfit_mpi_peer_failed");
    m->local_size = (local_size_fn)(uintptr_t)dlsym(m->handle, "batchfit_mpi_local_size");
    if (!start || !m->finish || !m->abort_job || !m->announce || !m->peer_failed) {
        dlclose(m->handle);
        free(m);
        return probe_bad_value(env && *env ? "--mpi: the library BATCHFIT_MPI_LIBRARY names "
                                             "lacks batchfit_mpi_start and its kin"
                                           : "--mpi: libbatchfit-mpi.so lacks "
                                             "batchfit_mpi_start and its kin");
    }
    if (start(NULL, NULL, &m->ranks, &m->local_rank, why, sizeof why) != 0) {
        dlclose(m->handle);
        free(m);
        fprintf(stderr, "batchfit probe: --mpi: %s\n", why);
        return EXIT_USAGE;
    }
    *out = m;
    return -1;
}

int probe_mpi_rank(const probe_mpi *m)
{
    return m ? m->ranks.rank : 0;
}

int probe_mpi_size(const probe_mpi *m)
{
    return m ? m->ranks.size : 1;
}

int probe_mpi_local_rank(const probe_mpi *m)
{
    return m ? m->local_rank : 0;
}

int probe_mpi_local_size(const probe_mpi *m)
{
    return m && m->local_size ? m->local_size(&m->ranks) : 1;
}

const batchfit_ranks *probe_mpi_ranks(const probe_mpi *m)
{
    return m ? &m->ranks : NULL;
}

int probe_mpi_peer_failed(probe_mpi *m)
{
    return m && m->peer_failed(&m->ranks);
}

void probe_mpi_announce_failure(probe_mpi *m)
{
    if (m)
        m->announce(&m->ranks);
}

void probe_mpi_abort(probe_mpi *m, batchfit_ctx *ctx)
{
    /* This rank could not take part: end the job rather than leave the
     * others waiting. */
    fprintf(stderr, "batchfit probe: rank %d: %s\n", m->ranks.rank, batchfit_ctx_last_error(ctx));
    m->abort_job(&m->ranks, EXIT_INTERNAL);
}

int probe_mpi_agree(probe_mpi *m, batchfit_ctx *ctx, batchfit_agree_mode mode,
                    batchfit_result *result)
{
    int rc = batchfit_agree(ctx, &m->ranks, mode, result);
    if (rc == BATCHFIT_E_NO_MEMORY)
        probe_mpi_abort(m, ctx);
    return rc;
}

void probe_mpi_finish(probe_mpi *m)
{
    if (!m)
        return;
    m->finish(&m->ranks);
    /* libmpi stays loaded: unloading it after MPI_Finalize is not safe. */
    free(m);
}
