// The FMA load kernel's host entry (load_kernel.cu): no NVML or snapshot types, so nvcc compiles it alone.
#pragma once

#include <string>

namespace gsq::probes {

// Runs the FMA load kernel on `ordinal` for about `seconds`, calling `tick` every `tick_ms` meanwhile. Returns an empty
// string on success, else the CUDA error text (the caller records it as the field's reason; nothing throws across).
[[nodiscard]] std::string run_load(int ordinal, double seconds, int tick_ms, void (*tick)(void*), void* ctx);

}  // namespace gsq::probes
