// Doctor's load phase: NVML readings every 100 ms while the FMA kernel keeps the GPU busy.
#include "probes/load_probe.hpp"

#include "cuda/device.hpp"
#include "gpu/collect.hpp"
#include "probes/load_kernel.hpp"

#include <chrono>

namespace gsq::probes {

using gpu::LiveReading;
using gpu::LoadSample;
using gsq::Field;

namespace {
struct TickContext {
  const gpu::Nvml* nvml;
  uint32_t index;
  std::vector<LiveReading> readings;
};
void on_tick(void* p) {
  auto* ctx = static_cast<TickContext*>(p);
  ctx->readings.push_back(gpu::read_live(*ctx->nvml, ctx->index));
}
}  // namespace

void sample_under_load(const gpu::Nvml& nvml, gpu::Snapshot& s, double seconds,
                       const std::function<void(uint32_t)>& progress) {
  for (auto& g : s.gpus) {
    if (!g.pci_bus_id.ok()) {
      g.under_load = Field<LoadSample>::none("no PCI bus id to find the GPU in CUDA");
      continue;
    }
    const auto ordinal = cuda::cuda_ordinal_for_pci(*g.pci_bus_id);
    if (!ordinal) {
      g.under_load =
          Field<LoadSample>::none("CUDA does not see this GPU (CUDA_VISIBLE_DEVICES, MIG, or no CUDA driver)");
      continue;
    }
    if (progress) progress(g.index);
    TickContext ctx{&nvml, g.index, {}};
    const auto start = std::chrono::steady_clock::now();
    const std::string err = run_load(*ordinal, seconds, 100, &on_tick, &ctx);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!err.empty()) {
      g.under_load = Field<LoadSample>::none(err);
    } else if (ctx.readings.empty()) {
      g.under_load = Field<LoadSample>::none("no NVML reading during the load");
    } else {
      g.under_load = gpu::summarize_load(ctx.readings, took);
    }
  }
}

}  // namespace gsq::probes
