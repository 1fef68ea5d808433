// GPU tests (CTest label `gpu`): NVML and the load phase on a real card. Elsewhere they skip and say why.
#include "core/error.hpp"
#include "doctor/checks.hpp"
#include "gpu/collect.hpp"
#include "probes/load_probe.hpp"

#include <gtest/gtest.h>

namespace gsq::gpu {
namespace {

std::optional<Nvml> open_or_skip_reason(std::string& why) {
  try {
    return Nvml::open();
  } catch (const Error& e) {
    why = e.what();
    return std::nullopt;
  }
}

TEST(GpuLive, SnapshotReadsEveryGpu) {
  std::string why;
  auto nvml = open_or_skip_reason(why);
  if (!nvml) GTEST_SKIP() << "no GPU: " << why;
  const Snapshot s = collect_snapshot(*nvml);
  ASSERT_FALSE(s.gpus.empty());
  for (const auto& g : s.gpus) {
    EXPECT_TRUE(g.name.ok());
    EXPECT_TRUE(g.uuid.ok());
    EXPECT_TRUE(g.pci_bus_id.ok());
    EXPECT_TRUE(g.memory_total_bytes.ok());
    EXPECT_GT(*g.memory_total_bytes, 1ULL << 30);
  }
  EXPECT_TRUE(s.host.driver_version.ok());
  // The snapshot must survive its own JSON.
  const nlohmann::json j = s;
  EXPECT_EQ(nlohmann::json(snapshot_from_json(j, "live")), j);
}

TEST(GpuLive, LoadPhaseRaisesTheClockAndSamples) {
  std::string why;
  auto nvml = open_or_skip_reason(why);
  if (!nvml) GTEST_SKIP() << "no GPU: " << why;
  Snapshot s = collect_snapshot(*nvml);
  probes::sample_under_load(*nvml, s, 1.0, {});
  for (const auto& g : s.gpus) {
    ASSERT_TRUE(g.under_load.ok()) << g.under_load.unsupported;
    EXPECT_GE(g.under_load->samples, 5u);
    EXPECT_GE(g.under_load->duration_s, 1.0);
    ASSERT_TRUE(g.under_load->sm_clock_max_mhz.ok());
    // Busy SMs run well above the idle clock (the H200 idles near 345 MHz and boosts to 1980).
    EXPECT_GT(*g.under_load->sm_clock_max_mhz, *g.sm_clock_max_mhz / 2);
  }
  EXPECT_NO_THROW((void)doctor::run_checks(s));
}

}  // namespace
}  // namespace gsq::gpu
