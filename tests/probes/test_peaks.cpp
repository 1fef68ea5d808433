// Byte accounting and peak formulas of the probes (CPU), checked against the H200 figures from its own attributes.
#include "gpu/peaks.hpp"
#include "probes/probe_kernels.hpp"
#include "support/fixtures.hpp"

#include <gtest/gtest.h>

namespace gsq {
namespace {

TEST(Peaks, HbmFromTheRecordedH200) {
  const auto s = gpu::load_snapshot(test::fixture("h200-snapshot.json"));
  const auto& g = s.gpus.at(0);
  // 3201 MHz × 2 × 6016 bit / 8 = 4814.304 GB/s
  EXPECT_NEAR(gpu::dram_peak_bytes_per_s(*g.mem_clock_max_mhz, *g.memory_bus_width_bits) / 1e9, 4814.304, 1e-6);
}

TEST(Peaks, PcieGenerationsAndWidths) {
  EXPECT_NEAR(gpu::pcie_peak_bytes_per_s(5, 16) / 1e9, 63.015, 0.001);
  EXPECT_NEAR(gpu::pcie_peak_bytes_per_s(4, 16) / 1e9, 31.508, 0.001);
  EXPECT_NEAR(gpu::pcie_peak_bytes_per_s(3, 16) / 1e9, 15.754, 0.001);
  EXPECT_NEAR(gpu::pcie_peak_bytes_per_s(5, 8) / 1e9, 31.508, 0.001);
  EXPECT_NEAR(gpu::pcie_peak_bytes_per_s(1, 1) / 1e9, 0.25, 1e-9);
  EXPECT_EQ(gpu::pcie_peak_bytes_per_s(9, 16), 0);
}

TEST(ByteAccounting, BabelStreamCounts) {
  using probes::MemOp;
  EXPECT_EQ(probes::bytes_moved(MemOp::read, 1000, 16), 16000);
  EXPECT_EQ(probes::bytes_moved(MemOp::write, 1000, 16), 16000);
  EXPECT_EQ(probes::bytes_moved(MemOp::copy, 1000, 16), 32000);
  EXPECT_EQ(probes::bytes_moved(MemOp::triad, 1000, 4), 12000);
}

}  // namespace
}  // namespace gsq
