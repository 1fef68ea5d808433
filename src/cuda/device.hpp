// The CUDA runtime's view of the GPUs: versions, device count, and the map from an NVML index to a CUDA ordinal.
#pragma once

#include <optional>
#include <string>

namespace gsq::cuda {

[[nodiscard]] std::string cuda_runtime_version();  // "13.0", the runtime linked into gpusqueeze

// The CUDA ordinal of the device on `pci_bus_id` ("00000000:1A:00.0"), or nullopt when CUDA cannot see it.
[[nodiscard]] std::optional<int> cuda_ordinal_for_pci(const std::string& pci_bus_id);

}  // namespace gsq::cuda
