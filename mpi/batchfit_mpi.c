/* libbatchfit-mpi: batchfit's ranks interface over an MPI communicator. */
#include "batchfit_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAILURE_TAG 0x6266 /* "bf": a rank announces its failure */

typedef struct mpi_ranks {
    MPI_Comm comm;
    int announced;
    int started;    /* batchfit_mpi_start initialised MPI */
    int local_size; /* the processes on this node */
} mpi_ranks;

static int allgather(void *userdata, const void *mine, void *all, size_t len)
{
    mpi_ranks *m = userdata;
    if (len > (size_t)0x7fffffff)
        return -1;
    return MPI_Allgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, m->comm) ==
                   MPI_SUCCESS
               ? 0
               : -1;
}

int batchfit_mpi_ranks(MPI_Comm comm, batchfit_ranks *ranks, int *local_rank)
{
    memset(ranks, 0, sizeof *ranks);
    mpi_ranks *m = calloc(1, sizeof *m);
    if (!m)
        return MPI_ERR_NO_MEM;
    int rc = MPI_Comm_dup(comm, &m->comm);
    if (rc != MPI_SUCCESS) {
        free(m);
        return rc;
    }
    /* A failing collective returns its code instead of ending the process,
     * so the caller can report it and end the job itself. */
    MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(m->comm, &ranks->rank);
    MPI_Comm_size(m->comm, &ranks->size);
    MPI_Comm node;
    int node_rank = 0;
    m->local_size = 1;
    if (MPI_Comm_split_type(m->comm, MPI_COMM_TYPE_SHARED, ranks->rank, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_rank(node, &node_rank);
        MPI_Comm_size(node, &m->local_size);
        MPI_Comm_free(&node);
    }
    if (local_rank)
        *local_rank = node_rank;
    ranks->struct_size = sizeof *ranks;
    ranks->allgather = allgather;
    ranks->userdata = m;
    return MPI_SUCCESS;
}

/* Receives every failure notice still queued for this rank. */
static void drain(mpi_ranks *m)
{
    int flag = 1;
    while (flag) {
        MPI_Status st;
        if (MPI_Iprobe(MPI_ANY_SOURCE, FAILURE_TAG, m->comm, &flag, &st) != MPI_SUCCESS)
            return;
        if (flag) {
            char byte;
            MPI_Recv(&byte, 1, MPI_BYTE, st.MPI_SOURCE, FAILURE_TAG, m->comm, MPI_STATUS_IGNORE);
        }
    }
}

int batchfit_mpi_local_size(const batchfit_ranks *ranks)
{
    const mpi_ranks *m = ranks ? ranks->userdata : NULL;
    return m ? m->local_size : 1;
}

void batchfit_mpi_ranks_free(batchfit_ranks *ranks)
{
    mpi_ranks *m = ranks ? ranks->userdata : NULL;
    if (!m)
        return;
    /* Every rank is past the agreement here, so no notice is still on its
     * way: take in what arrived, then free the communicator. */
    MPI_Barrier(m->comm);
    drain(m);
    MPI_Comm_free(&m->comm);
    free(m);
    ranks->userdata = NULL;
}

void batchfit_mpi_announce_failure(const batchfit_ranks *ranks)
{
    mpi_ranks *m = ranks->userdata;
    if (m->announced)
        return;
    m->announced = 1;
    static const char byte = 1; /* outlives the sends */
    for (int r = 0; r < ranks->size; r++) {
        if (r == ranks->rank)
            continue;
        /* A one-byte message goes out eagerly: the send completes without
         * the receiver, so no request is left to wait for. */
        MPI_Request req;
        if (MPI_Isend((void *)&byte, 1, MPI_BYTE, r, FAILURE_TAG, m->comm, &req) == MPI_SUCCESS)
            MPI_Request_free(&req);
    }
}

int batchfit_mpi_peer_failed(const batchfit_ranks *ranks)
{
    mpi_ranks *m = ranks->userdata;
    int flag = 0;
    /* One probe drives MPI's progress engine once, which may only take
     * the notice part of the way in (a first message between two ranks
     * sets up their connection): a rank failed at once and the other ran
     * a whole trial more. A few rounds take it in; each is microseconds. */
    for (int round = 0; round < 64 && !flag; round++)
        MPI_Iprobe(MPI_ANY_SOURCE, FAILURE_TAG, m->comm, &flag, MPI_STATUS_IGNORE);
    return flag;
}

int batchfit_mpi_start(int *argc, char ***argv, batchfit_ranks *ranks, int *local_rank,
                       char *error, size_t error_len)
{
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized && MPI_Init(argc, argv) != MPI_SUCCESS) {
        snprintf(error, error_len, "MPI_Init failed");
        return -1;
    }
    int rc = batchfit_mpi_ranks(MPI_COMM_WORLD, ranks, local_rank);
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        snprintf(error, error_len, "cannot set up the ranks: %s", text);
        if (!initialized)
            MPI_Finalize();
        return -1;
    }
    ((mpi_ranks *)ranks->userdata)->started = !initialized;
    return 0;
}

void batchfit_mpi_finish(batchfit_ranks *ranks)
{
    mpi_ranks *m = ranks->userdata;
    int started = m && m->started;
    batchfit_mpi_ranks_free(ranks);
    if (started)
        MPI_Finalize();
}

void batchfit_mpi_abort(batchfit_ranks *ranks, int exit_code)
{
    mpi_ranks *m = ranks->userdata;
    MPI_Abort(m ? m->comm : MPI_COMM_WORLD, exit_code);
}
