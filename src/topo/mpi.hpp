// `probe nccl --mpi`: the job's rank, size and node-local rank from MPI, and NCCL's unique id broadcast from rank 0,
// the way nccl-tests runs under mpirun. MPI is reached through libgsqmpi.so (src/topo/mpi_plugin.cpp), built where
// Debian's libopenmpi-dev is installed and opened at run time.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

namespace gsq::topo {

class MpiSession {
 public:
  // Opens the plugin and calls MPI_Init. Throws Error(no_gpu) when the plugin is missing (a build without MPI) or
  // cannot load (Open MPI's libraries absent), naming the places looked in; Error(internal) when MPI_Init fails.
  MpiSession();
  ~MpiSession();  // MPI_Finalize
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }
  [[nodiscard]] int local_rank() const { return local_rank_; }
  [[nodiscard]] const std::filesystem::path& plugin() const { return plugin_; }
  // Rank 0's `text` (exactly `bytes` long on every rank) on every rank.
  [[nodiscard]] std::string broadcast(std::string text, size_t bytes) const;
  // Waits for every rank (MPI_Barrier).
  void barrier() const;
  // Ends every rank of the job with `code` (MPI_Abort): a rank that failed alone must not leave the others waiting in
  // NCCL's bootstrap.
  [[noreturn]] void abort(int code) const;

 private:
  std::shared_ptr<void> handle_;
  std::filesystem::path plugin_;
  int rank_ = 0, size_ = 1, local_rank_ = 0;
};

}  // namespace gsq::topo
