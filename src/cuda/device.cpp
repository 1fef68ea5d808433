// CUDA runtime queries used by snapshots (runtime version, PCI bus id → ordinal).
#include "cuda/device.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace gsq::cuda {

std::string cuda_runtime_version() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) return "unknown";
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

std::optional<int> cuda_ordinal_for_pci(const std::string& pci_bus_id) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return std::nullopt;
  auto norm = [](std::string s) {
    // NVML writes an 8-digit domain, CUDA a 4-digit one: compare from the bus number on, case-folded.
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const auto colon = s.find(':');
    return colon == std::string::npos ? s : s.substr(colon + 1);
  };
  for (int d = 0; d < count; ++d) {
    char buf[32] = {};
    if (cudaDeviceGetPCIBusId(buf, sizeof buf, d) == cudaSuccess && norm(buf) == norm(pci_bus_id)) return d;
  }
  return std::nullopt;
}

}  // namespace gsq::cuda
