// Runs the load kernel on each GPU while sampling NVML, and stores the summary in the snapshot.
#pragma once

#include "gpu/nvml.hpp"
#include "gpu/snapshot.hpp"

#include <functional>
#include <string>

namespace gsq::probes {

// `progress(gpu_index)` is called as each GPU's load starts. Failures become the field's "unsupported" reason.
void sample_under_load(const gpu::Nvml& nvml, gpu::Snapshot& s, double seconds,
                       const std::function<void(uint32_t)>& progress);

}  // namespace gsq::probes
