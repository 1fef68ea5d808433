// Snapshot record/replay: the H200 fixture round-trips, and bad files fail with a message naming the problem.
#include "core/error.hpp"
#include "support/fixtures.hpp"

#include <gtest/gtest.h>

namespace gsq::gpu {
namespace {

using test::h200_snapshot_json;

std::string bad_input_message(const nlohmann::json& j) {
  try {
    (void)snapshot_from_json(j, "case");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Snapshot, H200FixtureHasTheRecordedCard) {
  const Snapshot s = load_snapshot(test::fixture("h200-snapshot.json"));
  ASSERT_EQ(s.gpus.size(), 1u);
  const auto& g = s.gpus[0];
  EXPECT_EQ(*g.name, "NVIDIA H200");
  EXPECT_EQ(*g.architecture, "hopper");
  EXPECT_EQ(*g.pcie_width_max, 16u);
  EXPECT_EQ(*g.memory_bus_width_bits, 6016u);
  ASSERT_TRUE(g.under_load.ok());
  EXPECT_GT(g.under_load->samples, 10u);
  // The driver reports retired pages as not supported on the H200 (it remaps rows instead): kept as a reason.
  EXPECT_FALSE(g.retired_pages_double_bit.ok());
  EXPECT_NE(g.retired_pages_double_bit.unsupported.find("NOT_SUPPORTED"), std::string::npos);
}

TEST(Snapshot, JsonRoundTripIsLossless) {
  const nlohmann::json original = h200_snapshot_json();
  const Snapshot s = snapshot_from_json(original, "fixture");
  const nlohmann::json again = s;
  EXPECT_EQ(again, original);
}

TEST(Snapshot, TruncatedFileIsReportedAsTruncated) {
  const std::string text = h200_snapshot_json().dump();
  try {
    (void)parse_json_text(text.substr(0, text.size() / 2), "half.json", kSnapshotSchema);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST(Snapshot, GarbageIsNotJson) {
  try {
    (void)parse_json_text(
        "\x7f"
        "ELF binary",
        "a.out", kSnapshotSchema);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  }
}

TEST(Snapshot, WrongSchemaIsNamed) {
  auto j = h200_snapshot_json();
  j["schema"] = "gpusqueeze.bench/1";
  try {
    (void)parse_json_text(j.dump(), "x.json", kSnapshotSchema);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpusqueeze.bench/1"), std::string::npos) << e.what();
  }
}

TEST(Snapshot, WrongTypeNamesTheField) {
  auto j = h200_snapshot_json();
  j["gpus"][0]["pcie_width_current"] = "sixteen";
  const auto msg = bad_input_message(j);
  EXPECT_NE(msg.find("gpus[0].pcie_width_current"), std::string::npos) << msg;
}

TEST(Snapshot, MissingFieldNamesTheField) {
  auto j = h200_snapshot_json();
  j["host"].erase("driver_version");
  const auto msg = bad_input_message(j);
  EXPECT_NE(msg.find("host.driver_version"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing"), std::string::npos) << msg;
}

TEST(Snapshot, NestedFieldErrorsCarryThePath) {
  auto j = h200_snapshot_json();
  j["gpus"][0]["under_load"]["samples"] = -3.5;
  const auto msg = bad_input_message(j);
  EXPECT_NE(msg.find("gpus[0].under_load.samples"), std::string::npos) << msg;
}

TEST(Snapshot, UnsupportedIsAReasonNotANumber) {
  const nlohmann::json j = h200_snapshot_json();
  EXPECT_TRUE(j["gpus"][0]["numa_node"].is_object());
  EXPECT_TRUE(j["gpus"][0]["numa_node"].contains("unsupported"));
}

TEST(ClockEventReasons, NamesEachBitAndUnknownOnes) {
  EXPECT_TRUE(clock_event_reason_names(0).empty());
  EXPECT_EQ(clock_event_reason_names(0x1), std::vector<std::string>{"gpu_idle"});
  EXPECT_EQ(clock_event_reason_names(0x44), (std::vector<std::string>{"sw_power_cap", "hw_thermal_slowdown"}));
  EXPECT_EQ(clock_event_reason_names(0x1000), std::vector<std::string>{"unknown_0x1000"});
}

TEST(EnvVars, RecordsCudaTorchNcclButNotSecrets) {
  EXPECT_TRUE(is_recorded_env_var("PYTORCH_CUDA_ALLOC_CONF"));
  EXPECT_TRUE(is_recorded_env_var("CUDA_MODULE_LOADING"));
  EXPECT_TRUE(is_recorded_env_var("NCCL_P2P_DISABLE"));
  EXPECT_TRUE(is_recorded_env_var("LD_PRELOAD"));
  EXPECT_FALSE(is_recorded_env_var("AWS_SECRET_ACCESS_KEY"));
  EXPECT_FALSE(is_recorded_env_var("HOME"));
}

}  // namespace
}  // namespace gsq::gpu
