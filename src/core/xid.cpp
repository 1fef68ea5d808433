// NVIDIA XID codes: what each common one means for whoever runs the node.
#include "core/xid.hpp"

#include <fmt/format.h>

namespace gsq {

std::string xid_advice(double code) {
  if (!(code >= 0 && code < 1e6)) return "XID of an unknown code: see NVIDIA's XID catalogue";
  switch (static_cast<int>(code)) {
    case 79:
      return "XID 79: the GPU fell off the bus — drain the node, check power and seating, reset or replace it";
    case 48:
      return "XID 48: double-bit ECC error — drain the node, reset the GPU; replace it if it repeats";
    case 94:
      return "XID 94: contained ECC error — the affected process was stopped; reset the GPU when it drains";
    case 95:
      return "XID 95: uncontained ECC error — drain the node and reset the GPU before running more work";
    case 63:
    case 64:
      return "XID 63/64: row remapping event — reset the GPU when idle to apply it; replace if remapping fails";
    case 74:
      return "XID 74: NVLink error — check the link's error counters (`nvidia-smi nvlink -e`) and reseat";
    case 92:
      return "XID 92: high single-bit ECC rate — watch the node; replace the GPU if the rate stays high";
    case 13:
    case 31:
    case 43:
    case 45:
      return "XID 13/31/43/45: an application fault or a stopped program (bad address, illegal instruction) — a "
             "program's bug, not the GPU's, unless it repeats across programs";
    case 119:
    case 120:
      return "XID 119/120: GSP firmware error or timeout — update the driver; reset the GPU";
    default:
      return fmt::format("XID {:.0f}: see NVIDIA's XID catalogue (docs.nvidia.com/deploy/xid-errors)", code);
  }
}

}  // namespace gsq
