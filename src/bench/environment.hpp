// The machine around a bench run: the GPU's NVML handle and snapshot, the idle check, and pinning the launching
// thread near the GPU. Used by the runner only.
#pragma once

#include "gpu/collect.hpp"
#include "gpu/nvml.hpp"

#include <sched.h>

#include <functional>
#include <optional>
#include <string>

namespace gsq::bench::detail {

struct NvmlContext {
  gpu::Nvml nvml;
  uint32_t index;
  gpu::Snapshot snapshot;
};

// NVML opened for the GPU behind CUDA ordinal `cuda_ordinal`, or nullopt with the reason in `why`.
[[nodiscard]] std::optional<NvmlContext> open_nvml_for(int cuda_ordinal, std::string& why);
// Refuses (exit 2) when other compute processes or > 10% utilisation are on the GPU, unless `allow_busy`;
// `own_utilization`: the utilisation is this process's own recent work, so only other processes count.
void idle_check(const NvmlContext& ctx, bool allow_busy, const std::function<void(const std::string&)>& progress,
                bool own_utilization = false);

// Pins the calling thread to one CPU near the GPU for its lifetime and restores the previous mask afterwards.
// Not copyable or movable: it restores the mask of the thread that made it, in its destructor.
class CpuPin {
 public:
  explicit CpuPin(const std::string& gpu_cpulist);
  CpuPin(const CpuPin&) = delete;
  CpuPin& operator=(const CpuPin&) = delete;
  ~CpuPin();
  [[nodiscard]] int cpu() const noexcept { return cpu_; }

 private:
  cpu_set_t old_{};
  int cpu_ = -1;
};

}  // namespace gsq::bench::detail
