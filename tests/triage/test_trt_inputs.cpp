// The TensorRT audit's model and trace inputs: ONNX models (synthetic, made by tests/fixtures/make_synthetic_onnx.py:
// no real model is published in ../shared/data) against NVIDIA's published trtexec logs, and the input shapes a public
// ResNet-50 PyTorch-profiler trace (Kineto's tb_plugin samples, record_shapes) fed the model.
#include "triage/trt_inputs.hpp"

#include "analyze/kineto.hpp"
#include "core/error.hpp"
#include "core/json_io.hpp"
#include "support/fixtures.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

namespace gsq::triage {
namespace {

namespace fs = std::filesystem;

#define NEED(path) \
  if (!fs::exists(path)) GTEST_SKIP() << (path) << " not present (shared test data)"

OnnxModel model(const std::string& name) {
  return read_onnx(read_text_file(test::fixture(name)), name);
}

std::vector<TrtRun> cookbook_runs() {
  std::vector<TrtRun> runs;
  for (int i = 1; i <= 8; ++i) {
    const auto f = test::shared_data("trtexec") / fmt::format("nvidia-cookbook-result-0{}.log", i);
    auto r = parse_trtexec_log(read_text_file(f), f.string());
    runs.insert(runs.end(), r.begin(), r.end());
  }
  return runs;
}

const fs::path kResnetTrace =
    test::shared_data("kineto/kineto.tb_plugin.samples.resnet50_num_workers_0--worker0.1623143089861.pt.trace.json.gz");

TEST(OnnxModel, InputsAreTheGraphInputsThatAreNotWeights) {
  if (!onnx_supported()) GTEST_SKIP() << "built without libonnx-dev";
  const auto m = model("synthetic-mnist-dynamic.onnx");
  EXPECT_EQ(m.producer, "gpusqueeze-synthetic");
  EXPECT_EQ(m.opset, 17);
  ASSERT_EQ(m.inputs.size(), 1u);  // W is an initializer listed as an input: not one the user feeds
  EXPECT_EQ(m.inputs[0].name, "x");
  EXPECT_EQ(m.inputs[0].dtype, "FLOAT");
  EXPECT_EQ(m.inputs[0].shape(), "batchx1x28x28");
  EXPECT_TRUE(m.inputs[0].dynamic());
}

TEST(OnnxModel, WhatIsNotAModelIsRefused) {
  if (!onnx_supported()) GTEST_SKIP() << "built without libonnx-dev";
  for (const std::string& bytes : {std::string(), std::string("\x0a\xff\xff\xff", 4), std::string("not a model")}) {
    try {
      (void)read_onnx(bytes, "x.onnx");
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input);
    }
  }
  // A truncated real model: every prefix is refused or read, never a crash.
  const auto whole = read_text_file(test::fixture("synthetic-mnist-dynamic.onnx"));
  for (size_t n = 1; n < whole.size(); ++n) {
    try {
      (void)read_onnx(whole.substr(0, n), "cut.onnx");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input);
    }
  }
}

TEST(OnnxModel, BuildsOfTheModelAreFoundByInputsWhenTheFileNameDiffers) {
  if (!onnx_supported()) GTEST_SKIP() << "built without libonnx-dev";
  NEED(test::shared_data("trtexec/nvidia-cookbook-result-01.log"));
  const auto runs = cookbook_runs();
  const auto m = model("synthetic-mnist-dynamic.onnx");
  const auto builds = builds_of(m, "synthetic-mnist-dynamic.onnx", runs);
  // Runs 1, 2 and 4 build model-trained.onnx (input x); run 8 builds model-addscalar.onnx (input inputT0).
  EXPECT_EQ(builds, (std::vector<size_t>{0, 1, 3}));
  std::vector<Finding> out;
  onnx_findings(m, runs, builds, out);
  EXPECT_TRUE(out.empty()) << out.front().title;  // run 2's profile fits; runs 1 and 4 have trt-auto-shape instead
}

TEST(OnnxModel, ProfilesThatContradictTheModelAreFailures) {
  if (!onnx_supported()) GTEST_SKIP() << "built without libonnx-dev";
  NEED(test::shared_data("trtexec/nvidia-cookbook-result-02.log"));
  auto runs = cookbook_runs();
  const auto m = model("synthetic-mnist-dynamic.onnx");
  auto edited = runs[1];  // the profile x=1x1x28x28+4x1x28x28+16x1x28x28, edited in memory:
  edited.profiles[0].min_opt_max[2] = {16, 3, 28, 28};  // a fixed dimension changed
  std::vector<Finding> out;
  onnx_findings(m, {edited}, {0}, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].id, "trt-profile-contradicts-model");
  EXPECT_NE(out[0].title.find("dimension 1 is 3 where the model fixes 1"), std::string::npos) << out[0].title;
  edited.profiles[0].input = "X";  // a misspelt input: the real x has no profile either
  out.clear();
  onnx_findings(m, {edited}, {0}, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].id, "trt-profile-unknown-input");
  EXPECT_EQ(out[0].severity, Severity::fail);
  EXPECT_EQ(out[1].id, "trt-dynamic-input-unprofiled");
}

TEST(TraceShapes, TheResnetTraceFedThirtyTwoImagesEveryStep) {
  if (!onnx_supported()) GTEST_SKIP() << "built without libonnx-dev";
  NEED(kResnetTrace);
  const auto m = model("synthetic-resnet-input.onnx");
  const auto templates = shape_templates({}, &m);
  ASSERT_EQ(templates.size(), 1u);
  const auto seen = shapes_from_trace(analyze::read_maybe_gzip(kResnetTrace), "resnet", templates);
  ASSERT_EQ(seen.size(), 1u);
  ASSERT_EQ(seen[0].shapes.size(), 1u);
  EXPECT_EQ(dims_text(seen[0].shapes[0].first), "32x3x224x224");
  EXPECT_EQ(seen[0].shapes[0].second, 6);  // ProfilerStep#4…#9

  // Against a profile whose opt is 8× the served batch (a synthetic build, made here): trt-opt-far names the shape.
  TrtRun r;
  r.command = "trtexec --onnx=resnet50.onnx";
  r.profiles.push_back({0, "input", {{1, 3, 224, 224}, {256, 3, 224, 224}, {256, 3, 224, 224}}});
  std::vector<Finding> out;
  opt_findings(seen, {r}, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].id, "trt-opt-far");
  EXPECT_NE(out[0].fix.find("--optShapes=input:32x3x224x224"), std::string::npos);
  r.profiles[0].min_opt_max[1] = {32, 3, 224, 224};
  out.clear();
  opt_findings(seen, {r}, out);
  EXPECT_TRUE(out.empty());
}

TEST(TraceShapes, ProfilesGiveTemplatesByTheirFixedDimensions) {
  TrtRun r;
  r.profiles.push_back({0, "x", {{1, 1, 28, 28}, {4, 1, 28, 28}, {16, 1, 28, 28}}});
  r.profiles.push_back({0, "all_dynamic", {{1, 1}, {4, 4}, {16, 16}}});
  const auto t = shape_templates({r}, nullptr);
  ASSERT_EQ(t.size(), 1u);  // nothing fixes all_dynamic: it cannot be recognised in a trace
  EXPECT_EQ(t[0].input, "x");
  EXPECT_FALSE(t[0].dims[0].has_value());
  EXPECT_EQ(t[0].dims[3], 28);
}

TEST(TraceShapes, ATraceWithoutShapesIsRefusedWithHowToRecordThem) {
  const auto host_slow = analyze::read_maybe_gzip(test::fixture("torch-host-slow.json.gz"));
  try {
    (void)shapes_from_trace(host_slow, "host-slow", {{"x", {std::nullopt, 8}}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("record_shapes=True"), std::string::npos);
  }
  EXPECT_THROW((void)shapes_from_trace("{\"traceEvents\": 3}", "bad", {}), Error);
}

}  // namespace
}  // namespace gsq::triage
