// Cold-start analysis on phase files the tool recorded on this project's CPU machine (tests/fixtures/coldstart-cpu-*:
// `gpusqueeze coldstart --module`, PyTorch 2.15 with Inductor's C++ backend), and the checks around the caches.
#include "triage/coldstart.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "support/fixtures.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>

namespace gsq::triage {
namespace {

Phase phase(const std::string& name) {
  const auto f = test::fixture("coldstart-cpu-" + name + ".json");
  return read_phase(parse_any_json(read_text_file(f), f.string()), f.string());
}

const Finding* find(const ColdstartReport& r, const std::string& id) {
  for (const auto& f : r.findings)
    if (f.id == id) return &f;
  return nullptr;
}

TEST(Coldstart, RecordedPhasesShowWhatEachCacheSaves) {
  const auto r =
      analyze_coldstart("--module", {phase("eager"), phase("cold"), phase("warm-local"), phase("warm-portable")});
  const auto& cold = r.phases[1];
  const auto& local = r.phases[2];
  EXPECT_GT(cold.first_result_s, local.first_result_s);
  EXPECT_EQ(cold.counters.at("inductor.fxgraph_cache_miss"), 1);
  EXPECT_EQ(local.counters.at("inductor.fxgraph_cache_hit"), 1);
  EXPECT_EQ(local.counters.at("aot_autograd.autograd_cache_hit"), 1);
  EXPECT_GT(cold.artifact_saved_bytes, 0);
  EXPECT_EQ(r.phases[3].artifact_loaded_bytes, cold.artifact_saved_bytes);
  ASSERT_NE(find(r, "coldstart-warm-local"), nullptr);
  EXPECT_NE(find(r, "coldstart-warm-local")->title.find("67% of the cold start"), std::string::npos);
  ASSERT_NE(find(r, "coldstart-compile-cost"), nullptr);
  // Measured here: the artifact hits both caches but Inductor's C++ is compiled again, 6.2 s slower than local.
  ASSERT_NE(find(r, "coldstart-portable-slower"), nullptr);
  EXPECT_EQ(find(r, "coldstart-portable"), nullptr);
  EXPECT_EQ(find(r, "coldstart-warm-cache-missed"), nullptr);
  const auto j = to_json(r);
  EXPECT_EQ(j["schema"], kColdstartSchema);
  EXPECT_EQ(j["phases"].size(), 4u);
}

TEST(Coldstart, AWarmRunThatMissesEveryCacheIsAWarning) {
  auto local = phase("cold");  // a "warm" run that compiled everything again
  local.name = "warm-local";
  const auto r = analyze_coldstart("x", {phase("cold"), local});
  ASSERT_NE(find(r, "coldstart-warm-cache-missed"), nullptr);
  EXPECT_EQ(find(r, "coldstart-warm-cache-missed")->severity, Severity::warn);
}

TEST(Coldstart, BadPhaseFilesAreClearErrors) {
  auto j = parse_any_json(read_text_file(test::fixture("coldstart-cpu-cold.json")), "cold");
  auto wrong = j;
  wrong["schema"] = "gpusqueeze.bench/1";
  EXPECT_THROW((void)read_phase(wrong, "w"), Error);
  auto missing = j;
  missing.erase("first_result_s");
  try {
    (void)read_phase(missing, "m.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("m.json"), std::string::npos);
  }
  const std::string text = read_text_file(test::fixture("coldstart-cpu-cold.json"));
  EXPECT_THROW((void)parse_any_json(text.substr(0, text.size() / 2), "truncated"), Error);
}

TEST(Coldstart, ABundleFromAnotherMachineIsRefusedWithEveryDifference) {
  // SYNTHETIC manifest: the fields the harness writes, values of an H200 machine.
  const nlohmann::json bundle = {{"schema", kColdstartBundleSchema},
                                 {"manifest",
                                  {{"torch", "2.11.0+cu130"},
                                   {"triton", "3.6.0"},
                                   {"cuda", "13.0"},
                                   {"device", "NVIDIA H200"},
                                   {"compute_capability", "9.0"}}}};
  const auto here = phase("cold").environment;  // this CPU machine: PyTorch 2.15, no GPU
  const auto m = bundle_mismatches(bundle, here);
  ASSERT_EQ(m.size(), 5u);
  EXPECT_NE(m[0].find("torch: the bundle was made with '2.11.0+cu130', this machine has '2.15.0+cu132'"),
            std::string::npos);
  std::map<std::string, std::string> same;
  for (const auto& [k, v] : bundle["manifest"].items()) same[k] = v;
  EXPECT_TRUE(bundle_mismatches(bundle, same).empty());
  EXPECT_THROW((void)bundle_mismatches(nlohmann::json{{"schema", "other"}}, same), Error);
  EXPECT_THROW((void)bundle_mismatches(nlohmann::json{{"schema", 3683}}, same), Error);  // found by the fuzzer
}

TEST(Coldstart, ACacheFolderOthersCanWriteIsFlagged) {
  const auto dir = std::filesystem::temp_directory_path() / ("gsq-cache-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ::chmod(dir.c_str(), 0700);
  EXPECT_TRUE(cache_folder_findings(dir).empty());
  ::chmod(dir.c_str(), 0777);
  const auto f = cache_folder_findings(dir);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].id, "coldstart-cache-shared");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gsq::triage
