// Theoretical ceilings from a device's own attributes: DRAM from memory clock and bus width, PCIe from generation and
// width.
#pragma once

#include <cstdint>

namespace gsq::gpu {

// DDR/HBM: two transfers per clock on every bit of the bus. H200: 3201 MHz × 2 × 6016 bit / 8 = 4.814 TB/s.
[[nodiscard]] constexpr double dram_peak_bytes_per_s(uint32_t mem_clock_mhz, uint32_t bus_width_bits) {
  return static_cast<double>(mem_clock_mhz) * 1e6 * 2.0 * static_cast<double>(bus_width_bits) / 8.0;
}

// One direction of a PCIe link after line encoding (8b/10b up to gen 2, 128b/130b gen 3–5, 242/256 FLIT gen 6), before
// packet headers: gen5 x16 = 32 GT/s × 16 × 128/130 / 8 = 63.0 GB/s. 0 for an unknown generation.
[[nodiscard]] constexpr double pcie_peak_bytes_per_s(uint32_t gen, uint32_t width) {
  double gts = 0, enc = 0;
  switch (gen) {
    case 1:
      gts = 2.5, enc = 8.0 / 10;
      break;
    case 2:
      gts = 5.0, enc = 8.0 / 10;
      break;
    case 3:
      gts = 8.0, enc = 128.0 / 130;
      break;
    case 4:
      gts = 16.0, enc = 128.0 / 130;
      break;
    case 5:
      gts = 32.0, enc = 128.0 / 130;
      break;
    case 6:
      gts = 64.0, enc = 242.0 / 256;
      break;
    default:
      return 0;
  }
  return gts * 1e9 * static_cast<double>(width) * enc / 8.0;
}

}  // namespace gsq::gpu
