// What `probe p2p`, `probe nccl` and `probe nccl --sweep-env` do (step 5): the runs, NCCL's child processes (`--procs`,
// the TUNING pass, the Ring runs, the env sweep) and the ranks of a launched job; `probe` prints what they return.
#pragma once

#include "jobs/progress.hpp"
#include "topo/multigpu_probe.hpp"
#include "topo/nccl_sweep.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gsq::jobs {

struct MultiGpuOptions {
  int p2p_mib = 256;
  topo::NcclOptions nccl;  // --min-bytes, --max-bytes, --nccl-warmup, --nccl-iters (its collectives come from --ops)
  bool no_ring = false;    // --no-ring: no Ring run beside collectives NCCL ran on NVLS/Tree at large sizes
  std::string ops;
  bool library_only = false;
  bool sweep_env = false;
  std::vector<std::string> env_sets;  // --env NAME=VALUE[,NAME=VALUE]
  int trials = 3;
  int procs = 0;  // --procs N: N processes, one GPU each
  int rank = 0, nranks = 1, device = -1;
  std::string nccl_id;  // --nccl-id HEX: this process is rank --rank of --nranks
  std::string id_file;  // --nccl-id-file: rank and size from the launcher, the id through this file
  bool mpi = false;     // --mpi: rank, size and the id through MPI (the libgsqmpi.so plugin)
};

[[nodiscard]] topo::P2pResult run_p2p(const MultiGpuOptions& m, const Progress& note);

// What one `probe nccl` process has to show: its NCCL library (always), and the job's run where this process prints
// it (not a rank other than 0 of a launched job, not --library-only).
struct NcclJob {
  topo::NcclLibrary library;
  std::optional<topo::NcclRun> run;
};
[[nodiscard]] NcclJob run_nccl(const MultiGpuOptions& m, const Progress& note);

// Each setting in a fresh `gpusqueeze probe nccl --json` process (`env NAME=VALUE … gpusqueeze …`), trials
// interleaved so a drifting clock hits every setting alike, judged against the first (the baseline). Throws
// Error(no_gpu) on one GPU.
struct NcclSweep {
  std::string collective;
  std::vector<topo::SweepRow> rows;  // the baseline first
};
[[nodiscard]] NcclSweep run_nccl_sweep(const MultiGpuOptions& m, const Progress& note);

}  // namespace gsq::jobs
