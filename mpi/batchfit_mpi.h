/*
 * batchfit_mpi.h - batchfit's agreement across the ranks of an MPI job.
 *
 * libbatchfit-mpi implements the core library's batchfit_ranks interface
 * with MPI, so that batchfit_agree() can run over a communicator; the core
 * library and the batchfit command never link MPI (the command loads this
 * library with dlopen when --mpi is given).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef BATCHFIT_MPI_H
#define BATCHFIT_MPI_H

#include <batchfit.h>
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Fills ranks for comm: its own duplicate of comm, so batchfit's messages
 * never mix with the program's; *local_rank (may be NULL) is the rank among
 * the processes on this node (an MPI_COMM_TYPE_SHARED split), the usual GPU
 * index. Returns 0, or an MPI error code. Release with batchfit_mpi_ranks_free. */
int batchfit_mpi_ranks(MPI_Comm comm, batchfit_ranks *ranks, int *local_rank);
/* How many of the ranks share this rank's node (the MPI_COMM_TYPE_SHARED
 * split's size): ranks that probe the host share its memory. */
int batchfit_mpi_local_size(const batchfit_ranks *ranks);
void batchfit_mpi_ranks_free(batchfit_ranks *ranks);

/* Tells the other ranks, without waiting, that this rank failed, so they
 * can stop their probes after the current trial; and asks whether any
 * other rank did. */
void batchfit_mpi_announce_failure(const batchfit_ranks *ranks);
int batchfit_mpi_peer_failed(const batchfit_ranks *ranks);

/* For programs without MPI of their own (the batchfit command): MPI_Init
 * (when not initialised yet) and batchfit_mpi_ranks over MPI_COMM_WORLD;
 * finish releases them and calls MPI_Finalize; abort ends every rank of the
 * job with exit_code (MPI_Abort). These use no MPI type, so a program can
 * call them through dlsym. */
int batchfit_mpi_start(int *argc, char ***argv, batchfit_ranks *ranks, int *local_rank,
                       char *error, size_t error_len);
void batchfit_mpi_finish(batchfit_ranks *ranks);
void batchfit_mpi_abort(batchfit_ranks *ranks, int exit_code);

#ifdef __cplusplus
}
#endif

#endif /* BATCHFIT_MPI_H */
