// NVIDIA XID codes (the driver's error reports: NVML events, the kernel log's "NVRM: Xid (PCI:…): N, …" lines).
#pragma once

#include <string>

namespace gsq {

// What an XID code means for whoever runs the node, and the first thing to do (NVIDIA's XID catalogue,
// docs.nvidia.com/deploy/xid-errors): the common ones; others point at the catalogue.
[[nodiscard]] std::string xid_advice(double code);

}  // namespace gsq
