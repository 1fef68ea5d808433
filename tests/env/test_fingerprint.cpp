// Fingerprint and drift over the H200 fixture and edited copies.
#include "env/fingerprint.hpp"

#include "support/fixtures.hpp"

#include <gtest/gtest.h>

namespace gsq::env {
namespace {

using test::edited;

const gpu::Snapshot& base() {
  static const gpu::Snapshot s = gpu::load_snapshot(test::fixture("h200-snapshot.json"));
  return s;
}

std::vector<std::string> drifted_fields(const gpu::Snapshot& after) {
  std::vector<std::string> out;
  for (const auto& d : drift(locked_fields(base()), locked_fields(after))) out.push_back(d.field);
  return out;
}

TEST(Fingerprint, SameSnapshotSameFingerprintNoDrift) {
  EXPECT_EQ(fingerprint(locked_fields(base())), fingerprint(locked_fields(base())));
  EXPECT_TRUE(drifted_fields(base()).empty());
  EXPECT_EQ(fingerprint(locked_fields(base())).size(), 16u);
}

TEST(Fingerprint, MovingReadingsDoNotDrift) {
  EXPECT_TRUE(drifted_fields(edited("/gpus/0/temperature_c", 80)).empty());
  EXPECT_TRUE(drifted_fields(edited("/gpus/0/power_draw_w", 650.0)).empty());
  EXPECT_TRUE(drifted_fields(edited("/gpus/0/sm_clock_mhz", 1410)).empty());
  EXPECT_TRUE(drifted_fields(edited("/gpus/0/pcie_gen_current", 1)).empty());  // idle power saving
}

TEST(Fingerprint, DriverUpdateDrifts) {
  const auto s = edited("/host/driver_version", "580.200.01");
  EXPECT_EQ(drifted_fields(s), std::vector<std::string>{"host.driver_version"});
  EXPECT_NE(fingerprint(locked_fields(s)), fingerprint(locked_fields(base())));
}

TEST(Fingerprint, SettingChangesDrift) {
  EXPECT_EQ(drifted_fields(edited("/gpus/0/power_limit_w", 500.0)), std::vector<std::string>{"gpus[0].power_limit_w"});
  EXPECT_EQ(drifted_fields(edited("/gpus/0/ecc_mode_current", false)),
            std::vector<std::string>{"gpus[0].ecc_mode_current"});
  EXPECT_EQ(drifted_fields(edited("/gpus/0/pcie_width_current", 8)),
            std::vector<std::string>{"gpus[0].pcie_width_current"});
  EXPECT_EQ(drifted_fields(edited("/gpus/0/sm_clock_app_mhz", 1500)),
            std::vector<std::string>{"gpus[0].sm_clock_app_mhz"});
}

TEST(Fingerprint, EnvVarAddedChangedAndRemoved) {
  const auto added = drift(locked_fields(base()), locked_fields(edited("/host/env/CUDA_MODULE_LOADING", "EAGER")));
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0].field, "host.env.CUDA_MODULE_LOADING");
  EXPECT_EQ(added[0].before, "(absent)");
  EXPECT_EQ(added[0].after, "EAGER");

  const auto changed = drift(locked_fields(base()), locked_fields(edited("/host/env/TORCH_CUDA_ARCH_LIST", "8.0;9.0")));
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].before, "9.0a");

  auto j = test::h200_snapshot_json();
  j["host"]["env"].erase("TORCH_CUDA_ARCH_LIST");
  const auto removed = drift(locked_fields(base()), locked_fields(gpu::snapshot_from_json(j, "x")));
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].after, "(absent)");
}

TEST(Fingerprint, ProfilingParameterIsLocked) {
  EXPECT_EQ(drifted_fields(edited("/host/nvidia_params/RmProfilingAdminOnly", "1")),
            std::vector<std::string>{"host.nvidia_params.RmProfilingAdminOnly"});
}

TEST(EnvDocument, RecordedDocumentMatchesTheSnapshotRecordedWithIt) {
  // Both files were written on the H200 in one device run; the fields of the env document are recomputed from it.
  const FieldMap saved = fields_from_file(test::fixture("h200-env.json"));
  const nlohmann::json doc = read_json_file(test::fixture("h200-env.json"), kFingerprintSchema);
  EXPECT_EQ(fingerprint(saved), doc.at("fingerprint").get<std::string>());
  EXPECT_EQ(drift(saved, locked_fields(base())).size(), 0u);
}

TEST(EnvDocument, AcceptsABareSnapshot) {
  EXPECT_EQ(fields_from_file(test::fixture("h200-snapshot.json")), locked_fields(base()));
}

}  // namespace
}  // namespace gsq::env
