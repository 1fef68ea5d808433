// TensorRT audit on trtexec logs and exports published by others (../shared/data/trtexec: NVIDIA's cookbook runs of
// TensorRT 10.16.1 on an H100 PCIe, and a DETR INT8 build; sources beside each file).
#include "triage/trtexec.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "support/fixtures.hpp"

#include <gtest/gtest.h>

#include <filesystem>

namespace gsq::triage {
namespace {

namespace fs = std::filesystem;

fs::path data(const std::string& name) {
  return test::shared_data("trtexec") / name;
}

#define NEED(name)                  \
  const fs::path file = data(name); \
  if (!fs::exists(file)) GTEST_SKIP() << file << " not present (shared test data)"

TrtAudit audit_of(const fs::path& file, const std::vector<std::string>& shapes = {}) {
  return audit_trt(parse_trtexec_log(read_text_file(file), file.string()), {}, {}, shapes);
}

const Finding* find(const TrtAudit& a, const std::string& id) {
  for (const auto& f : a.findings)
    if (f.id == id) return &f;
  return nullptr;
}

TEST(TrtAudit, WorkspaceSpelledMiBBecameOneKibibyteAndTheBuilderSaidItNeededMore) {
  NEED("nvidia-cookbook-result-02.log");
  const auto a = audit_of(file);
  ASSERT_EQ(a.runs.size(), 1u);
  EXPECT_NEAR(*a.runs[0].workspace_mib, 0.000976562, 1e-9);  // "Memory Pools: workspace: 0.000976562 MiB"
  const Finding* tiny = find(a, "trt-workspace-tiny");
  ASSERT_NE(tiny, nullptr);
  EXPECT_EQ(tiny->severity, Severity::fail);
  bool spelled = false;
  for (const auto& e : tiny->evidence) spelled = spelled || e.value == "--memPoolSize=workspace:1024MiB";
  EXPECT_TRUE(spelled);
  EXPECT_NE(find(a, "trt-workspace-short"), nullptr);
  EXPECT_GE(a.runs[0].workspace_needed_bytes, 852992u);  // "Exceeded mem budget of 2688. Need 852992"
  EXPECT_NE(find(a, "trt-weak-typing"), nullptr);        // --fp16 on TensorRT 10.16.1
  EXPECT_EQ(find(a, "trt-no-timing-cache"), nullptr);    // --timingCacheFile given
  ASSERT_EQ(a.runs[0].profiles.size(), 1u);
  EXPECT_EQ(a.runs[0].profiles[0].min_opt_max[2], (std::vector<int64_t>{16, 1, 28, 28}));
}

TEST(TrtAudit, ShapesOutsideEveryProfileAreAnError) {
  NEED("nvidia-cookbook-result-02.log");
  const auto a = audit_of(file, {"x:8x1x28x28", "x:32x1x28x28"});  // 8 inside 1…16, 32 outside
  int outside = 0;
  for (const auto& f : a.findings) outside += f.id == "trt-shape-outside-profiles";
  EXPECT_EQ(outside, 1);
}

TEST(TrtAudit, DynamicInputWithoutShapesIsBuiltAtOne) {
  NEED("nvidia-cookbook-result-01.log");
  const auto a = audit_of(file);
  ASSERT_EQ(a.runs[0].auto_shapes.size(), 1u);
  EXPECT_EQ(a.runs[0].auto_shapes[0], (std::pair<std::string, std::string>{"x", "1x1x28x28"}));
  EXPECT_NE(find(a, "trt-auto-shape"), nullptr);
  EXPECT_NE(find(a, "trt-unstable"), nullptr);  // "coefficient of variance = 6.58751%"
  EXPECT_NEAR(*a.runs[0].compute_cov_percent, 6.58751, 1e-6);
  EXPECT_EQ(a.runs[0].trt_version, "10.16.1");
  EXPECT_EQ(a.runs[0].device, "NVIDIA H100 PCIe");
  EXPECT_EQ(a.runs[0].result, "PASSED");
}

TEST(TrtAudit, EnqueueBoundRunSuggestsCudaGraphsAndEveryLineIsReadOrCounted) {
  NEED("nvidia-cookbook-result-08.log");
  const auto a = audit_of(file);
  const Finding* enq = find(a, "trt-enqueue-bound");
  ASSERT_NE(enq, nullptr);
  EXPECT_NE(enq->fix.find("--useCudaGraph"), std::string::npos);
  EXPECT_NEAR(*a.runs[0].throughput_qps, 27315.5, 1e-6);
  size_t skipped = 0;
  for (const auto& [why, n] : a.runs[0].skipped) skipped += n;
  EXPECT_EQ(a.runs[0].recognized + skipped, a.runs[0].lines);
  EXPECT_LT(a.runs[0].skipped.at("other"), a.runs[0].lines / 10);
}

TEST(TrtAudit, ProfileRanksLayersAndFindsTheReformatShare) {
  NEED("detr-profile.json");
  const auto times = parse_trt_profile(parse_any_json(read_text_file(file), file.string()), file.string());
  const auto a = audit_trt({}, times, {}, {});
  ASSERT_GT(a.layer_times.size(), 800u);
  EXPECT_GE(a.layer_times[0].percentage, a.layer_times[1].percentage);
  EXPECT_NEAR(a.reformat_share, 0.1163, 0.001);  // 247 "Reformatting CopyNode" layers
  EXPECT_NE(find(a, "trt-reformat-layers"), nullptr);
}

TEST(TrtAudit, DetailedLayerInfoGivesTypesAndTactics) {
  NEED("nvidia-cookbook-model-trained-exportLayerInfo.json");
  const auto layers = parse_trt_layers(parse_any_json(read_text_file(file), file.string()), file.string());
  ASSERT_EQ(layers.size(), 9u);
  EXPECT_EQ(layers[0].type, "CaskConvolution");
  EXPECT_EQ(layers[0].output_types, std::vector<std::string>{"Float"});
  EXPECT_FALSE(layers[0].tactic.empty());
  // An FP32 engine: FP32 layers are expected there, not a finding.
  EXPECT_EQ(find(audit_trt({}, {}, layers, {}), "trt-fp32-layers"), nullptr);
}

TEST(TrtAudit, AProfileWhoseShapesDifferInRankIsSkippedNotReadPast) {
  // SYNTHETIC, the shape of the input the fuzzer found: min and opt of rank 4, max of rank 1.
  const std::string log =
      "&&&& RUNNING TensorRT.trtexec [TensorRT v101601] # trtexec --onnx=m.onnx\n"
      "[07/07/2026-02:10:59] [I] Input build shape (profile 0): x=1x1x28x28+4x1x28x28+16\n"
      "&&&& PASSED TensorRT.trtexec [TensorRT v101601] # trtexec --onnx=m.onnx\n";
  const auto a = audit_trt(parse_trtexec_log(log, "t.log"), {}, {}, {"x:8x1x28x28"});
  for (const auto& f : a.findings) EXPECT_NE(f.id, "trt-shape-outside-profiles");
}

TEST(TrtAudit, WhatIsNotATrtexecFileIsRefused) {
  EXPECT_THROW((void)parse_trtexec_log("hello\nworld\n", "x.log"), Error);
  EXPECT_THROW((void)parse_trt_profile(nlohmann::json::object(), "p.json"), Error);
  EXPECT_THROW((void)parse_trt_layers(nlohmann::json::array(), "l.json"), Error);
}

}  // namespace
}  // namespace gsq::triage
