// Resource usage of compiled kernels (from cuobjdump --dump-resource-usage) and theoretical occupancy per SM
// architecture, computed the way the CUDA occupancy calculator does: warps, registers, shared memory and blocks per
// SM each cap the resident blocks; the smallest cap is the limiter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gsq::probes {

struct ArchLimits {
  int sm = 0;  // 90 for sm_90
  int max_warps_per_sm = 64, max_blocks_per_sm = 32;
  int regs_per_sm = 65536, reg_alloc_unit = 256, max_regs_per_thread = 255, max_threads_per_block = 1024;
  int smem_per_sm = 0, max_smem_per_block = 0;  // bytes; the largest carveout and the opt-in maximum per block
  int smem_alloc_unit = 128, reserved_smem_per_block = 0;
};
[[nodiscard]] std::optional<ArchLimits> arch_limits(int sm);
[[nodiscard]] std::string known_archs();  // "sm_70, sm_75, …" for error messages

struct KernelResources {
  std::string mangled, name;                                      // name: demangled
  int arch = 0;                                                   // 0 when the dump did not say
  int regs = 0, stack = 0, shared = 0, local = 0, constant0 = 0;  // shared: static, without the reserved 1 KiB
};
// Parses cuobjdump --dump-resource-usage output. Throws bad_input when it holds no resource usage at all.
[[nodiscard]] std::vector<KernelResources> parse_resource_usage(std::string_view dump);

struct Occupancy {
  int block_threads = 0;
  int blocks_per_sm = 0;  // 0: the block cannot launch (see limiter)
  int active_warps = 0, max_warps = 0;
  double ratio = 0;  // active warps / max warps per SM
  int by_warps = 0, by_regs = 0, by_smem = 0, by_blocks = 0;
  std::string limiter;  // "warps", "registers", "shared memory", "blocks per SM", or why it cannot launch
};
[[nodiscard]] Occupancy theoretical_occupancy(const ArchLimits& arch, int block_threads, int regs_per_thread,
                                              int64_t smem_per_block);

// cuobjdump on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin, or from the nvidia-cuda-cuobjdump wheel; "" if none.
[[nodiscard]] std::string find_cuobjdump();
// Runs cuobjdump on FILE and parses it; throws bad_input (not a CUDA binary) or no_gpu-class errors with a fix.
[[nodiscard]] std::vector<KernelResources> read_resource_usage(const std::string& file);

}  // namespace gsq::probes
