// Doctor on the recorded H200 snapshot (all pass) and on edited copies, each giving its finding.
#include "doctor/checks.hpp"

#include "support/fixtures.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace gsq::doctor {
namespace {

using test::edited;

const Finding& find(const std::vector<Finding>& fs, const std::string& id) {
  const auto it = std::find_if(fs.begin(), fs.end(), [&](const Finding& f) { return f.id == id; });
  if (it == fs.end()) throw std::runtime_error("no finding " + id);
  return *it;
}

Severity severity_of(const gpu::Snapshot& s, const std::string& id) {
  return find(run_checks(s), id).severity;
}

TEST(Doctor, RecordedH200PassesEverything) {
  const auto findings = run_checks(gpu::load_snapshot(test::fixture("h200-snapshot.json")));
  EXPECT_LE(worst(findings), Severity::info);
  for (const auto& f : findings) {
    EXPECT_LE(f.severity, Severity::info) << f.id << ": " << f.title;
    EXPECT_FALSE(f.title.empty()) << f.id;
  }
  // The VM has no cpufreq: that check says it cannot judge rather than passing silently.
  EXPECT_EQ(find(findings, "cpu-governor").severity, Severity::info);
  // Every catalogued check that applies to a single PCIe GPU ran.
  for (const auto& c : check_catalog()) {
    if (std::string(c.id) == "nvlink-health" || std::string(c.id) == "nccl-env") continue;  // nothing to say here
    EXPECT_NO_THROW((void)find(findings, c.id)) << c.id;
  }
}

TEST(Doctor, PcieX8Fails) {
  const auto s = edited("/gpus/0/pcie_width_current", 8);
  const Finding f = find(run_checks(s), "pcie-link-width");
  EXPECT_EQ(f.severity, Severity::fail);
  EXPECT_NE(f.title.find("x8 of x16"), std::string::npos) << f.title;
  EXPECT_FALSE(f.fix.empty());
  EXPECT_FALSE(f.source.empty());
}

TEST(Doctor, PcieGenDropUnderLoadFailsButIdleDropOnlyInforms) {
  EXPECT_EQ(severity_of(edited("/gpus/0/under_load/pcie_gen_max_seen", 4), "pcie-link-gen"), Severity::fail);
  auto j = test::h200_snapshot_json();
  j["gpus"][0]["under_load"] = {{"unsupported", "doctor --no-load"}};
  j["gpus"][0]["pcie_gen_current"] = 1;
  EXPECT_EQ(severity_of(gpu::snapshot_from_json(j, "x"), "pcie-link-gen"), Severity::info);
}

TEST(Doctor, ThermalSlowdownBitFails) {
  const Finding f =
      find(run_checks(edited("/gpus/0/under_load/clock_event_reasons_mask", 0x40)), "clock-events-under-load");
  EXPECT_EQ(f.severity, Severity::fail);
  EXPECT_NE(f.title.find("hw_thermal_slowdown"), std::string::npos) << f.title;
}

TEST(Doctor, PowerCapWarnsIdleBitIgnored) {
  EXPECT_EQ(severity_of(edited("/gpus/0/under_load/clock_event_reasons_mask", 0x4), "clock-events-under-load"),
            Severity::warn);
  EXPECT_EQ(severity_of(edited("/gpus/0/under_load/clock_event_reasons_mask", 0x1), "clock-events-under-load"),
            Severity::pass);
}

TEST(Doctor, HotGpuWarnsThenFails) {
  EXPECT_EQ(severity_of(edited("/gpus/0/under_load/temperature_max_c", 84), "temperature-margin"), Severity::warn);
  EXPECT_EQ(severity_of(edited("/gpus/0/under_load/temperature_max_c", 90), "temperature-margin"), Severity::fail);
}

TEST(Doctor, EccUncorrectableFailsAndEccOffWarns) {
  const Finding f = find(run_checks(edited("/gpus/0/ecc_volatile_uncorrected", 2)), "ecc-errors");
  EXPECT_EQ(f.severity, Severity::fail);
  EXPECT_NE(f.title.find("2 uncorrectable"), std::string::npos) << f.title;
  EXPECT_EQ(severity_of(edited("/gpus/0/ecc_aggregate_uncorrected", 1), "ecc-errors"), Severity::warn);
  EXPECT_EQ(severity_of(edited("/gpus/0/ecc_mode_current", false), "ecc-errors"), Severity::warn);
}

TEST(Doctor, RowRemapFailureFailsPendingWarns) {
  EXPECT_EQ(severity_of(edited("/gpus/0/remap_failure", true), "row-remapping"), Severity::fail);
  EXPECT_EQ(severity_of(edited("/gpus/0/remap_pending", true), "row-remapping"), Severity::warn);
}

// DCGM's rate: a count since boot is information (the lent H200 showed 1 and was healthy); replays while busy warn,
// more than 8 a minute of load fail.
TEST(Doctor, PcieReplaysSinceBootInformGrowingWarnsPastDcgmsRateFails) {
  EXPECT_EQ(severity_of(edited("/gpus/0/pcie_replay_counter", 12), "pcie-replays"), Severity::info);
  EXPECT_EQ(severity_of(edited("/gpus/0/under_load/pcie_replay_delta", 3), "pcie-replays"), Severity::warn);
  EXPECT_EQ(severity_of(edited("/gpus/0/under_load/pcie_replay_delta", 9), "pcie-replays"), Severity::fail);
}

TEST(Doctor, PersistenceOffWarns) {
  const Finding f = find(run_checks(edited("/gpus/0/persistence_mode", false)), "persistence-mode");
  EXPECT_EQ(f.severity, Severity::warn);
  EXPECT_NE(f.fix.find("nvidia-persistenced"), std::string::npos);
}

TEST(Doctor, ExclusiveComputeModeWarns) {
  EXPECT_EQ(severity_of(edited("/gpus/0/compute_mode", "exclusive_process"), "compute-mode"), Severity::warn);
}

TEST(Doctor, AnotherProcessWarnsAndIsNamed) {
  const nlohmann::json procs =
      nlohmann::json::array({{{"pid", 4242}, {"used_memory_bytes", 8589934592ULL}, {"name", "python3"}}});
  const Finding f = find(run_checks(edited("/gpus/0/processes", procs)), "other-processes");
  EXPECT_EQ(f.severity, Severity::warn);
  EXPECT_NE(f.evidence[0].value.find("4242 python3 (8.0 GiB)"), std::string::npos) << f.evidence[0].value;
}

TEST(Doctor, ProfilingAdminOnlyWarnsForNonRoot) {
  auto j = test::h200_snapshot_json();
  j["host"]["nvidia_params"]["RmProfilingAdminOnly"] = "1";
  j["host"]["uid"] = 1000;
  const Finding f = find(run_checks(gpu::snapshot_from_json(j, "x")), "profiling-permission");
  EXPECT_EQ(f.severity, Severity::warn);
  EXPECT_NE(f.fix.find("NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos);
  // As root the counters still work: say so without alarming.
  EXPECT_EQ(severity_of(edited("/host/nvidia_params/RmProfilingAdminOnly", "1"), "profiling-permission"),
            Severity::info);
}

TEST(Doctor, AspmPowersaveWarns) {
  EXPECT_EQ(severity_of(edited("/host/aspm_policy", "powersupersave"), "pcie-aspm"), Severity::warn);
  EXPECT_EQ(severity_of(edited("/host/aspm_policy", "performance"), "pcie-aspm"), Severity::pass);
}

TEST(Doctor, SmallBar1Warns) {
  EXPECT_EQ(severity_of(edited("/gpus/0/bar1_total_bytes", 268435456), "bar1-size"), Severity::warn);
}

TEST(Doctor, OldDriverForRuntimeFails) {
  EXPECT_EQ(severity_of(edited("/host/cuda_driver_version", "12.4"), "driver-cuda-version"), Severity::fail);
  // Minor-version compatibility: a 13.0 driver runs a 13.x runtime.
  EXPECT_EQ(severity_of(edited("/host/cuda_runtime_version", "13.1"), "driver-cuda-version"), Severity::pass);
}

TEST(Doctor, PowersaveGovernorWarns) {
  EXPECT_EQ(severity_of(edited("/host/cpu_governor", "powersave"), "cpu-governor"), Severity::warn);
  EXPECT_EQ(severity_of(edited("/host/cpu_governor", "performance"), "cpu-governor"), Severity::pass);
}

TEST(Doctor, ProcessOnFarNumaNodeWarns) {
  auto j = test::h200_snapshot_json();
  j["gpus"][0]["cpu_affinity"] = "0-7";
  j["host"]["process_cpu_affinity"] = "8-15";
  EXPECT_EQ(severity_of(gpu::snapshot_from_json(j, "x"), "numa-affinity"), Severity::warn);
  j["host"]["process_cpu_affinity"] = "0-15";
  EXPECT_EQ(severity_of(gpu::snapshot_from_json(j, "x"), "numa-affinity"), Severity::info);
}

TEST(Doctor, NvlinkDownFailsErrorsWarn) {
  const nlohmann::json up = {
      {"link", 0},           {"active", true}, {"replay_errors", 0}, {"recovery_errors", 0}, {"crc_flit_errors", 0},
      {"crc_data_errors", 0}};
  nlohmann::json down = up;
  down["link"] = 1;
  down["active"] = false;
  EXPECT_EQ(severity_of(edited("/gpus/0/nvlinks", nlohmann::json::array({up, down})), "nvlink-health"), Severity::fail);
  nlohmann::json noisy = up;
  noisy["crc_flit_errors"] = 7;
  EXPECT_EQ(severity_of(edited("/gpus/0/nvlinks", nlohmann::json::array({up, noisy})), "nvlink-health"),
            Severity::warn);
}

TEST(Doctor, UnsupportedInputsInformInsteadOfPassing) {
  const Finding f = find(
      run_checks(edited("/gpus/0/pcie_width_current", nlohmann::json{{"unsupported", "NVML_ERROR_NOT_SUPPORTED"}})),
      "pcie-link-width");
  EXPECT_EQ(f.severity, Severity::info);
  EXPECT_NE(f.title.find("cannot be checked"), std::string::npos);
}

TEST(Doctor, NcclVariablesThatDoNotExistOrDebugSwitchesAreSaid) {
  auto s = gpu::load_snapshot(test::fixture("h200-snapshot.json"));
  s.host.env["NCCL_SOCKET_TIMEOUT"] = "600";
  s.host.env["NCCL_IB_DISABLE"] = "1";
  s.host.env["NCCL_P2P_DISABLE"] = "0";  // a debugging switch left off: fine
  s.host.env["NCCL_MIN_CTAS"] = "8";     // a real knob
  std::vector<Finding> nccl;
  for (const auto& f : run_checks(s))
    if (f.id == "nccl-env") nccl.push_back(f);
  ASSERT_EQ(nccl.size(), 2u);
  EXPECT_NE(nccl[0].title.find("NCCL_IB_DISABLE=1"), std::string::npos);
  EXPECT_EQ(nccl[0].severity, Severity::warn);
  EXPECT_NE(nccl[1].title.find("does not exist"), std::string::npos);
}

}  // namespace
}  // namespace gsq::doctor
