// libgsqmpi.so: the few MPI calls `probe nccl --mpi` needs, built only where MPI is installed (Debian's
// libopenmpi-dev) and opened at run time, so the program itself needs no MPI to start. A C interface: MPI's handles
// are implementation types that stay inside this library.
#include <mpi.h>

#include <cstdio>

extern "C" {

// MPI_Init; this process's rank and size in MPI_COMM_WORLD and its rank among the processes of its node
// (MPI_COMM_TYPE_SHARED). 0 on success, else MPI's error with its text in `why`.
__attribute__((visibility("default"))) int gsq_mpi_start(int* rank, int* size, int* local_rank, char* why,
                                                         int why_len) {
  int rc = MPI_Init(nullptr, nullptr);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(MPI_COMM_WORLD, rank);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_size(MPI_COMM_WORLD, size);
  MPI_Comm node = MPI_COMM_NULL;
  if (rc == MPI_SUCCESS) rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, *rank, MPI_INFO_NULL, &node);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(node, local_rank);
  if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
  if (rc != MPI_SUCCESS) {
    int len = 0;
    char text[MPI_MAX_ERROR_STRING] = {};
    MPI_Error_string(rc, text, &len);
    std::snprintf(why, static_cast<size_t>(why_len), "%s", text);
  }
  return rc;
}

// Rank 0's `bytes` bytes at `buf` to every rank.
__attribute__((visibility("default"))) int gsq_mpi_bcast(void* buf, int bytes) {
  return MPI_Bcast(buf, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

__attribute__((visibility("default"))) int gsq_mpi_barrier() {
  return MPI_Barrier(MPI_COMM_WORLD);
}

__attribute__((visibility("default"))) void gsq_mpi_abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
}

__attribute__((visibility("default"))) void gsq_mpi_end() {
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
}
}
