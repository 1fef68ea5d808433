// `probe p2p`, `probe nccl` and `probe nccl --sweep-env` (step 5), called from `probe`.
#pragma once

#include "topo/multigpu_probe.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gsq::cli {

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

int run_p2p(const MultiGpuOptions& m, bool json);
int run_nccl(const MultiGpuOptions& m, bool json);
// Each setting in a fresh `gpusqueeze probe nccl --json` process (`env NAME=VALUE … gpusqueeze …`), trials
// interleaved so a drifting clock hits every setting alike; exit 3 when not even the baseline ran.
int run_nccl_sweep(const MultiGpuOptions& m, bool json);

}  // namespace gsq::cli
