// The machine around a bench run: NVML for the GPU, the idle check, the CPU pin (see environment.hpp).
#include "bench/environment.hpp"

#include "core/error.hpp"
#include "cuda/device.hpp"
#include "host/facts.hpp"

#include <fmt/format.h>
#include <pthread.h>

namespace gsq::bench::detail {

std::optional<NvmlContext> open_nvml_for(int cuda_ordinal, std::string& why) {
  try {
    auto nvml = gpu::Nvml::open();
    gpu::Snapshot s = gpu::collect_snapshot(nvml);
    for (const auto& g : s.gpus) {
      if (g.pci_bus_id.ok() && cuda::cuda_ordinal_for_pci(*g.pci_bus_id) == cuda_ordinal) {
        const uint32_t index = g.index;
        return NvmlContext{std::move(nvml), index, std::move(s)};
      }
    }
    why = "no NVML device matches the CUDA device's PCI bus id";
  } catch (const Error& e) {
    why = e.what();
  }
  return std::nullopt;
}

void idle_check(const NvmlContext& ctx, bool allow_busy, const std::function<void(const std::string&)>& progress,
                bool own_utilization) {
  const auto& g = ctx.snapshot.gpus[ctx.index];
  std::vector<std::string> others;
  if (g.processes.ok()) {
    for (const auto& p : *g.processes)
      if (p.pid != static_cast<uint32_t>(::getpid()))
        others.push_back(fmt::format("pid {} {}", p.pid, p.name.empty() ? "?" : p.name));
  }
  const bool busy_util = !own_utilization && g.utilization_gpu_pct.ok() && *g.utilization_gpu_pct > 10;
  if (others.empty() && !busy_util) return;
  std::string what;
  for (const auto& o : others) what += (what.empty() ? "" : ", ") + o;
  if (busy_util) what += fmt::format("{}utilization {}%", what.empty() ? "" : "; ", *g.utilization_gpu_pct);
  const std::string msg =
      fmt::format("GPU {} is busy ({}): a baseline on a shared GPU is not a baseline", g.index, what);
  if (!allow_busy) throw_bad_input(msg + "; stop those processes, pick another GPU, or pass --allow-busy");
  if (progress) progress("warning: " + msg + " (--allow-busy)");
}

CpuPin::CpuPin(const std::string& gpu_cpulist) {
  if (pthread_getaffinity_np(pthread_self(), sizeof old_, &old_) != 0) return;
  for (int c : host::parse_cpulist(gpu_cpulist)) {
    if (c < 0 || c >= CPU_SETSIZE || !CPU_ISSET(c, &old_)) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0) cpu_ = c;
    return;
  }
}

CpuPin::~CpuPin() {
  if (cpu_ >= 0) pthread_setaffinity_np(pthread_self(), sizeof old_, &old_);
}

}  // namespace gsq::bench::detail
