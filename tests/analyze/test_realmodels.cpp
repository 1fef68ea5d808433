// The analyzer on real model code: torch.profiler recordings of the "before" variant of eight pairs of the real-model
// corpus (bench/realmodels/pairs.py, recorded on an H100 with `bash bench/device/realmodels.sh measure`; each fix
// measured untraced in the same call: bench/results/2026-12-06-h100-realmodels/realmodels.json). The verdict or the
// top-ranked finding must name the fix that was measured, and where a what-if models the fix, the predicted untraced
// step after it must meet the measured one. Pairs the analyzer still gets wrong are listed, with why, in that folder's
// accuracy.md; they are not asserted here.
#include "analyze/analysis.hpp"
#include "analyze/gsqt.hpp"
#include "analyze/kineto.hpp"
#include "analyze/whatif.hpp"

#include "support/fixtures.hpp"
#include "support/kineto_json.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

namespace gsq::analyze {
namespace {

Trace load(const std::string& pair) {
  return load_trace(test::fixture("realmodels/" + pair + "-before.pt.json.gz"));
}

// The warn/fail findings, largest saving first (the order users read them in).
std::string top_finding(const Analysis& a) {
  std::vector<const Finding*> fs;
  for (const auto& f : a.findings)
    if (f.severity == Severity::warn || f.severity == Severity::fail) fs.push_back(&f);
  std::stable_sort(fs.begin(), fs.end(), [](const Finding* x, const Finding* y) {
    return x->saving_ratio.value_or(0) > y->saving_ratio.value_or(0);
  });
  return fs.empty() ? "" : fs.front()->id;
}

using test::launch_json;
using test::step_json;

TEST(RealModels, TheVerdictOrTheTopFindingNamesTheMeasuredFix) {
  const struct {
    const char* pair;
    std::set<std::string> verdicts, findings;  // what names the fix the pair measured
  } cases[] = {
      {"graphs_mobilenet_infer", {"launch-bound"}, {"launch-bound"}},  // eager b1 → CUDA graph: −88%
      {"graphs_bert_infer", {"launch-bound"}, {"launch-bound"}},       // eager → CUDA graph: −83%
      {"h2d_resnet50_infer", {"transfer-bound"}, {"pageable-copy", "sync-copy", "unoverlapped-copy"}},  // −35%
      {"cl_resnet50_infer", {}, {"layout-conversions"}},      // NCHW → channels_last: −31%
      {"bf16_bert_infer", {}, {"fp32-gemm"}},                 // fp32 → bf16 autocast: −51%
      {"sdpa_gpt2_infer", {}, {"unfused-attention"}},         // eager attention → SDPA: −42%
      {"dl_resnet50_infer", {"host-bound"}, {"dataloader"}},  // num_workers=0 → 8 workers + pin_memory: −81%
  };
  for (const auto& c : cases) {
    const auto a = analyze(load(c.pair));
    const auto top = top_finding(a);
    EXPECT_TRUE(c.verdicts.count(a.verdict.cls) || c.findings.count(top))
        << c.pair << ": verdict " << a.verdict.cls << ", top finding " << top;
    EXPECT_NE(a.window.find("ProfilerStep#"), std::string::npos) << c.pair << ": judged over its steps";
  }
}

// Given the untraced before step (what `report -- CMD` measures with markers only), the replay of the fix predicts the
// untraced after step.
TEST(RealModels, TheFixesWhatIfPredictsTheMeasuredUntracedStep) {
  const struct {
    const char* pair;
    const char* fix;
    double before_ms, after_ms, within;
  } cases[] = {
      // The graph's kernels 0.26 µs apart (ReplayRates::graph_kernel_gap_ns): +8% here (−4% back to back), where the
      // nine graph recordings of five models are 3.4% off on average (7.7% back to back; bench/results/
      // 2026-12-07-cpu-graph-gap).
      {"graphs_mobilenet_infer", "graphs", 4.467, 0.520, 0.10},
      {"h2d_resnet50_infer", "pinned,prefetch", 12.195, 7.975, 0.10},
      {"item_resnet18_train", "sync", 15.313, 12.937, 0.10},
      // GPU-bound: the untraced step (7.95 ms) is longer than the replay (7.43 ms, the GPU's), so the GPU ran slower
      // untraced and its ops are slowed, not the host (the host × 1.087 this took before left the fixed step
      // host-bound at 7.56 ms); channels_last drops the conversions and halves the NCHW batch norms.
      {"cl_resnet50_infer", "layout", 7.947, 5.505, 0.05},
      // Eager attention → SDPA, each matmul-softmax-matmul run one op and one kernel costing its GEMMs (no constant
      // fitted): 16.46 ms (+12%) where 14.73 was measured; the untraced step is over the replay as recorded, so the GPU
      // is slowed, not the host (which, × 1.37, made the fixed step launch-bound at 18.9 ms, +29%).
      {"sdpa_gpt2_infer", "attention", 25.39, 14.73, 0.13},
  };
  for (const auto& c : cases) {
    const auto t = load(c.pair);
    Thresholds th;
    th.untraced_step_ns = static_cast<int64_t>(c.before_ms * 1e6);
    const auto a = analyze(t, th);
    const auto w = what_if(t, parse_fixes(c.fix), a.replay_graph);
    ASSERT_GE(w.rows.size(), 2U) << c.pair;  // as recorded, each fix, then all of them together
    // The as-recorded row is the untraced step given, unless the recorded GPU work alone exceeds it (h2d_resnet50's
    // pageable copies ran 4.6% slower recorded: the host's time is then all taken out and the floor remains).
    EXPECT_NEAR(static_cast<double>(w.rows[0].step_p50_ns) / 1e6 / c.before_ms, 1.0, 0.05) << c.pair;
    EXPECT_NEAR(static_cast<double>(w.rows.back().step_p50_ns) / 1e6 / c.after_ms, 1.0, c.within) << c.pair;
    EXPECT_NE(w.correction.find("untraced step given"), std::string::npos) << c.pair << ": " << w.correction;
    // The correction changes the replay, never the recording it is compared with.
    EXPECT_EQ(w.baseline.recorded_p50_ns, what_if(t, parse_fixes(c.fix)).baseline.recorded_p50_ns) << c.pair;
  }
  // The GPU-bound case is corrected on the GPU's side, within the corpus's spread (no warning).
  const auto t = load("cl_resnet50_infer");
  Thresholds th;
  th.untraced_step_ns = 7'947'000;
  const auto w = what_if(t, parse_fixes("layout"), analyze(t, th).replay_graph);
  EXPECT_NE(w.correction.find("GPU ops ×"), std::string::npos) << w.correction;
  EXPECT_EQ(w.correction.find("not be of the same program"), std::string::npos) << w.correction;
  th.untraced_step_ns = 9'500'000;  // 28% slower than recorded: more than runs of one program differ
  EXPECT_NE(
      what_if(t, parse_fixes("layout"), analyze(t, th).replay_graph).correction.find("not be of the same program"),
      std::string::npos);
}

// A CUDA graph replays everything between its first and last launch with no Python: the views, reshapes and other
// launch-free ops that torch.profiler records between the launches go too, not only the launches. Eager inference at
// batch 1 is launch-bound, so after graphs the step is the GPU's: the prediction meets the GPU floor. (Replaying only
// the items that launch kept those ops' host time: BERT 1.28 ms against its 0.56 ms floor; GPT-2 of the held-out
// batch 2.37 ms where 0.74 ms was measured.)
TEST(RealModels, AGraphReplaysTheLaunchFreeOpsBetweenItsLaunchesToo) {
  for (const char* pair : {"graphs_mobilenet_infer", "graphs_bert_infer"}) {
    const auto t = load(pair);
    const auto a = analyze(t);
    const auto w = what_if(t, parse_fixes("graphs"), a.replay_graph);
    ASSERT_EQ(w.rows.size(), 2U) << pair;
    const auto& g = w.rows[1];
    EXPECT_NEAR(static_cast<double>(g.step_p50_ns) / static_cast<double>(g.floor_p50_ns), 1.0, 0.05) << pair;
    EXPECT_EQ(g.critical, "gpu-bound") << pair;
    EXPECT_LT(g.step_p50_ns, w.rows[0].step_p50_ns / 5) << pair;  // eager b1 → graph: -88% and -83% measured
  }
}

// The DataLoader pair (ResNet-50 inference, CPU augmentation, num_workers=0: 51.7 ms a step untraced; with 8 workers
// and pinned memory 9.84 ms): its next() ranges replayed on 8 prefetching workers predict the measured step.
TEST(RealModels, MoreDataLoaderWorkersPredictTheMeasuredStep) {
  const auto t = load("dl_resnet50_infer");
  const auto a = analyze(t);
  const auto w = what_if(t, parse_fixes("workers:8"), a.replay_graph);
  ASSERT_EQ(w.rows.size(), 2U);
  EXPECT_EQ(w.rows[1].fixes, "workers:8");
  // A worker makes a batch kWorkerBatchSlowdown × slower than this trace's DataLoader range (measured on four input
  // pipelines, not on this pair): 12.6 ms predicted here against 9.84 measured. The DataLoader recordings spread
  // −29% to +39% around their measured steps (bench/results/2026-12-07-h100-realmodels-heldout-4, "DataLoader");
  // this bound says the model stays in that band.
  EXPECT_NEAR(static_cast<double>(w.rows[1].step_p50_ns) / 1e6 / 9.84, 1.0, 0.30);
  EXPECT_EQ(critical_verdict(replay(t).path), "host-bound");
}

// Without a measured untraced step, the profiler's cost per record comes out of the host time: ResNet-50 NCHW
// inference is GPU-bound untraced (7.95 ms, the GPU busy 7.5 ms of it); recorded, its host took 7.3 ms a step.
TEST(RealModels, TheProfilersCostComesOutOfTheHostTime) {
  const auto t = load("cl_resnet50_infer");
  const auto a = analyze(t);
  EXPECT_EQ(a.verdict.cls, "gpu-bound");
  const auto w = what_if(t, parse_fixes("layout"), a.replay_graph);
  EXPECT_NEAR(static_cast<double>(w.rows[0].step_p50_ns) / 1e6 / 7.947, 1.0, 0.10);
  // 210 records a ms of host time: the recorder's share of the host time on the corpus, not a cost per record.
  EXPECT_NE(w.correction.find("share of the host time"), std::string::npos) << w.correction;
  Thresholds none;
  none.recorder_record_ns = 0;
  EXPECT_NE(analyze(t, none).critical_path.correction.find("as recorded"), std::string::npos);
}

// The layout fix's saving: cuDNN's conversions and the share of PyTorch's NCHW batch-norm kernels their channels_last
// kernels save (kNhwcBatchNormRatio, from the corpus's two ResNet-50 pairs) is the GPU-side bound; where the critical
// path is judged, the finding's saving is the replay's of the fix, which ResNet-50 NCHW inference (GPU-bound) nearly
// reaches; the what-if's prediction meets the measured step (−31%). (This recording's first 11% of GPU time is work
// the host queued before the window: not another thread's, so the path is judged.)
TEST(RealModels, TheLayoutFixSavesTheConversionsAndTheNchwBatchNorms) {
  const auto t = load("cl_resnet50_infer");
  const auto a = analyze(t);
  const Finding* layout = nullptr;
  for (const auto& f : a.findings)
    if (f.id == "layout-conversions") layout = &f;
  ASSERT_NE(layout, nullptr);
  auto evidence = [&](const std::string& name) {
    for (const auto& e : layout->evidence)
      if (e.name == name) return std::stod(e.value);
    ADD_FAILURE() << "no evidence " << name;
    return 0.0;
  };
  const double conversions = evidence("conversion_ns"), batch_norms = evidence("nchw_batch_norm_ns");
  EXPECT_GT(batch_norms, conversions);  // ResNet-50 in NCHW: the batch norms cost more than the conversions
  const double bound = conversions + 0.46 * batch_norms;
  EXPECT_LE(evidence("saving_ns"), bound);
  EXPECT_GT(evidence("saving_ns"), 0.8 * bound);
  EXPECT_TRUE(std::any_of(layout->evidence.begin(), layout->evidence.end(),
                          [](const Evidence& e) { return e.name == "what_if" && e.value == "layout"; }));
  const auto w = what_if(t, parse_fixes("layout"), a.replay_graph);
  ASSERT_EQ(w.rows.size(), 2U);
  EXPECT_NEAR(static_cast<double>(w.rows[1].step_p50_ns) / 1e6 / 5.505, 1.0, 0.10);  // measured untraced
  EXPECT_TRUE(std::any_of(w.assumptions.begin(), w.assumptions.end(), [](const std::string& s) {
    return s.find("batch-norm kernels at 0.54") != std::string::npos;
  }));
  // Where the critical path is judged (ResNet-18 AMP training), the finding's saving is the replay's of the fix, as
  // for every finding whose fix the replay models: the GPU time it saves counts only where the GPU sets the step.
  const auto train = analyze(load("item_resnet18_train"));
  bool predicted = false;
  for (const auto& f : train.findings)
    if (f.id == "layout-conversions")
      for (const auto& e : f.evidence) predicted |= e.name == "what_if" && e.value == "layout";
  EXPECT_TRUE(predicted);
}

// The precision fixes as they change the kernels: TF32 runs the fp32 GEMMs at kTf32GemmRatio of their time, bf16
// autocast at kBf16GemmRatio plus their operands' casts (each a small op on the host too). ConvNeXt-T fp32 inference
// (held-out pair, bench/results/2026-12-07-h100-realmodels-heldout-2; 23.15 → 11.27 ms untraced with TF32) stays
// GPU-bound: the what-if meets the measured step, the fp32-gemm finding's saving is that replay's, and the fixed
// program's own recording (its GEMMs TF32) asks for nothing. BERT-base fp32 inference → bf16 autocast (19.18 → 9.35
// ms) becomes launch-bound: the casts' host time keeps the step near the measured one, where the GPU alone would take
// under 3 ms.
TEST(RealModels, ThePrecisionWhatIfsReplayTheGemmsAtTheirFixedCost) {
  const auto t = load("tf32_convnext_infer");
  Thresholds th;
  th.untraced_step_ns = 23'148'000;
  const auto a = analyze(t, th);
  const Finding* fp32 = nullptr;
  for (const auto& f : a.findings)
    if (f.id == "fp32-gemm") fp32 = &f;
  ASSERT_NE(fp32, nullptr);
  bool replayed = false;
  for (const auto& e : fp32->evidence) replayed |= e.name == "what_if" && e.value == "tf32";
  EXPECT_TRUE(replayed);
  const auto w = what_if(t, parse_fixes("tf32"), a.replay_graph);
  ASSERT_EQ(w.rows.size(), 2U);
  EXPECT_NEAR(static_cast<double>(w.rows[1].step_p50_ns) / 1e6 / 11.272, 1.0, 0.10);
  EXPECT_EQ(w.rows[1].critical, "gpu-bound");
  const auto fixed = analyze(load_trace(test::fixture("realmodels/tf32_convnext_infer-after.pt.json.gz")));
  EXPECT_FALSE(
      std::any_of(fixed.findings.begin(), fixed.findings.end(), [](const Finding& f) { return f.id == "fp32-gemm"; }));

  const auto bert = load("bf16_bert_infer");
  th.untraced_step_ns = 19'180'000;
  const auto wb = what_if(bert, parse_fixes("bf16,tf32"), analyze(bert, th).replay_graph);
  ASSERT_EQ(wb.rows.size(), 4U);  // as recorded, bf16, tf32, both
  EXPECT_EQ(wb.rows[1].fixes, "tf32");
  EXPECT_EQ(wb.rows[2].fixes, "bf16");
  EXPECT_NEAR(static_cast<double>(wb.rows[2].step_p50_ns) / 1e6 / 9.35, 1.0, 0.10);
  EXPECT_LT(wb.rows[2].floor_p50_ns, 3'000'000);
  // The GPU's work is less again under bf16 than TF32, but the casts' host time makes the step longer here.
  EXPECT_LT(wb.rows[2].floor_p50_ns, wb.rows[1].floor_p50_ns);
  EXPECT_GT(wb.rows[2].step_p50_ns, wb.rows[1].step_p50_ns);
}

// Kineto's public ResNet-50 sample with num_workers=0 (V100, PyTorch 1.9, tb_plugin samples): its step markers are
// legacy "Operator" events, and most of each step is the DataLoader's next() in the training process. The steps are
// found, the DataLoader's next() is a third of the critical path (as much as the kernels; with the CPU ops' dispatch
// the host holds 62% of it: host-bound, not the kernels), and the DataLoader finding (its measured fix, num_workers=4,
// is −28%) ranks first.
TEST(RealModels, ALegacyDataLoaderBoundTraceIsJudgedOverItsStepsAndNamesTheDataLoader) {
  const auto file = test::shared_data(
      "kineto/kineto.tb_plugin.samples.resnet50_num_workers_0--worker0.1623143089861.pt.trace.json.gz");
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "not present: " << file;
  const auto a = analyze(load_trace(file));
  EXPECT_EQ(a.step_ns.size(), 6U);
  EXPECT_EQ(a.verdict.cls, "host-bound") << a.verdict.summary;
  EXPECT_GT(a.critical_path.host_share, 0.3);
  EXPECT_EQ(top_finding(a), "dataloader");
}

// HTA's Triton example: one compiled region launched by one process, and a stray ProfilerStep#1 range from another
// process 13 s away. The window is the launching process's work (1.5 ms), not 13 s of "host idle".
TEST(RealModels, ARangeOfAProcessThatLaunchesNothingDoesNotStretchTheWindow) {
  const auto file = test::shared_data("kineto/hta.triton_example--triton_example.json.gz");
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "not present: " << file;
  const auto t = load_trace(file);
  const auto a = analyze(t);
  EXPECT_LT(a.breakdown.wall_ns, 100'000'000);
  EXPECT_GT(t.outside_window, 0U);
}

// A SYNTHETIC trace (made here): 50 ms of model loading with a long kernel, then two marked steps of 1 ms each, then
// teardown. Only the steps are judged; the GPU work launched in the last step and finishing after its marker counts.
TEST(RealModels, OnlyTheMarkedStepsAreJudged) {
  std::string ev =
      R"({"ph":"X","cat":"cpu_op","name":"load","pid":1,"tid":1,"ts":0,"dur":50000},)"
      R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":10,"dur":5,"args":{"correlation":1}},)"
      R"({"ph":"X","cat":"kernel","name":"init","pid":0,"tid":7,"ts":20,"dur":40000,"args":{"stream":7,"device":0,"correlation":1}},)";
  for (int s = 0; s < 2; ++s) {
    const int t0 = 60000 + 1000 * s;
    ev += fmt::format(
        R"({{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{}","pid":1,"tid":1,"ts":{},"dur":1000}},)"
        R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{}}}}},)"
        R"({{"ph":"X","cat":"kernel","name":"step","pid":0,"tid":7,"ts":{},"dur":900,"args":{{"stream":7,"device":0,"correlation":{}}}}},)",
        s, t0, t0 + 10, 10 + s, t0 + 300, 10 + s);
  }
  ev += R"({"ph":"X","cat":"cpu_op","name":"teardown","pid":1,"tid":1,"ts":70000,"dur":30000})";
  auto t = parse_kineto("{\"traceEvents\": [" + ev + "]}", "window");
  keep_steady_state(t);
  EXPECT_NE(t.window.find("ProfilerStep#0…ProfilerStep#1"), std::string::npos) << t.window;
  EXPECT_EQ(t.outside_window, 4U);  // load, its launch, its kernel, teardown
  const auto a = analyze(t);
  EXPECT_EQ(a.breakdown.wall_ns, 2'200'000);  // 60.0 ms → the last kernel's end at 62.2 ms
  EXPECT_EQ(a.kernels, 2U);
}

// A SYNTHETIC recording without step markers whose first call takes 400 ms of one-off start-up (a lazily loaded
// module, NCCL's init) before 200 ms of NCCL kernels: the replay of the whole run is mostly that call, so its
// launch-bound path must not decide the verdict (a public 2×RTX 4090 tensor-parallel trace read launch-bound so).
TEST(RealModels, AStartUpThatIsMostOfAnUnmarkedRunDoesNotDecideTheVerdict) {
  std::string ev = R"({"ph":"X","cat":"cpu_op","name":"aten::embedding","pid":1,"tid":1,"ts":0,"dur":400020},)"
                   R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":10,"dur":400000,)"
                   R"("args":{"correlation":1}},)"
                   R"({"ph":"X","cat":"kernel","name":"indexSelectLargeIndex","pid":0,"tid":7,"ts":400015,"dur":100,)"
                   R"("args":{"stream":7,"device":0,"correlation":1}},)";
  for (int i = 0; i < 20; ++i) {
    const int t0 = 400100 + 10000 * i;
    ev += fmt::format(
        R"({{"ph":"X","cat":"cpu_op","name":"c10d::allreduce_","pid":1,"tid":1,"ts":{},"dur":10}},)"
        R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,)"
        R"("args":{{"correlation":{}}}}},)"
        R"({{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_f32_RING_LL","pid":0,"tid":7,"ts":{},)"
        R"("dur":9990,"args":{{"stream":7,"device":0,"correlation":{}}}}},)",
        t0, t0 + 2, 2 + i, t0 + 8, 2 + i);
  }
  ev.pop_back();
  const auto a = analyze(parse_kineto("{\"traceEvents\": [" + ev + "]}", "startup"));
  EXPECT_GT(4 * a.breakdown.idle_startup_ns, a.breakdown.wall_ns);
  EXPECT_NE(a.verdict.cls, "launch-bound") << a.verdict.summary;
  EXPECT_TRUE(a.critical_path.replayed);
  EXPECT_FALSE(a.critical_path.ok);
  EXPECT_NE(a.critical_path.why.find("start-up"), std::string::npos);
}

// A SYNTHETIC recording without PyTorch's ops, as `gpusqueeze trace` makes one: only the launches and the kernels. An
// AdamW(foreach=False) step launches ATen's addcdiv_/addcmul_/lerp_ kernels one tensor at a time; the kernel names say
// so (the held-out GPT-2 pair's `gpusqueeze trace` recording: 444 of them a step, AdamW(fused=True) measured −32%).
TEST(RealModels, AnUnfusedOptimizerIsNamedFromItsKernelsWithoutOps) {
  const char* kernels[] = {
      "void at::native::vectorized_elementwise_kernel<4, at::native::addcdiv_cuda_kernel(at::TensorIteratorBase&, "
      "c10::Scalar const&)::{lambda()#2}>",
      "void at::native::vectorized_elementwise_kernel<4, at::native::addcmul_cuda_kernel(at::TensorIteratorBase&, "
      "c10::Scalar const&)::{lambda()#2}>",
      "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::lerp_scalar_kernel("
      "at::TensorIteratorBase&, c10::Scalar const&)::{lambda()#2}>"};
  auto trace = [&](bool fused) {
    std::string ev;
    int corr = 1, ts = 0;
    for (int step = 0; step < 2; ++step) {
      ev += step_json(step, ts, fused ? 60 : 3000);
      for (int i = 0; i < (fused ? 1 : 150); ++i, ++corr, ts += 20) {
        const std::string name =
            fused ? "void at::native::multi_tensor_apply_kernel<FusedAdamMathFunctor>" : kernels[i % 3];
        ev += launch_json(ts, corr, name, ts + 16, 3);
      }
    }
    ev.pop_back();
    return parse_kineto("{\"traceEvents\": [" + ev + "]}", "optimizer");
  };
  auto has = [](const Analysis& a, const char* id) {
    return std::any_of(a.findings.begin(), a.findings.end(), [&](const Finding& f) { return f.id == id; });
  };
  EXPECT_TRUE(has(analyze(trace(false)), "unfused-optimizer"));
  EXPECT_FALSE(has(analyze(trace(true)), "unfused-optimizer"));
}

// SGD's single-tensor step launches mul_/add_ kernels, no addcdiv_: it is named from the launches inside its recorded
// step (synthetic trace: 150 launches in "Optimizer.step#SGD.step", and the same launches without the range).
TEST(RealModels, AnUnfusedSgdIsNamedFromTheLaunchesInsideItsStep) {
  auto trace = [&](bool range) {
    std::string ev;
    int corr = 1, ts = 0;
    for (int step = 0; step < 2; ++step) {
      ev += step_json(step, ts, 3100);
      if (range)
        ev += fmt::format(R"({{"ph":"X","cat":"user_annotation","name":"Optimizer.step#SGD.step","pid":1,"tid":1,)"
                          R"("ts":{},"dur":3050}},)",
                          ts + 10);
      for (int i = 0; i < 150; ++i, ++corr, ts += 20)
        ev += launch_json(ts + 20, corr,
                          i % 2 ? "void at::native::vectorized_elementwise_kernel<4, MulFunctor>"
                                : "void at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add>",
                          ts + 36, 3);
      ts += 100;
    }
    ev.pop_back();
    return parse_kineto("{\"traceEvents\": [" + ev + "]}", "sgd");
  };
  auto find = [](const Analysis& a) -> const Finding* {
    for (const auto& f : a.findings)
      if (f.id == "unfused-optimizer") return &f;
    return nullptr;
  };
  const auto with_range = analyze(trace(true));
  const auto* f = find(with_range);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("(SGD)"), std::string::npos) << f->title;
  EXPECT_NE(f->fix.find("torch.optim.SGD(params, fused=True)"), std::string::npos);
  EXPECT_EQ(find(analyze(trace(false))), nullptr);  // mul_/add_ kernels alone could be anything
}

// Attention by hand in short sequences: its softmax kernels a small share of the step but one a layer (synthetic
// trace: a 400 µs GEMM, then `per_step` softmax kernels of `dur` µs, each step); a classifier's one softmax kernel a
// step, of the same share, is not attention.
TEST(RealModels, AttentionByHandIsNamedFromItsSoftmaxKernelsPerLayer) {
  auto trace = [&](int per_step, int softmax_us) {
    std::string ev;
    int corr = 1, ts = 0;
    auto kernel = [&](const char* name, int dur) {
      ev += launch_json(ts, corr, name, ts + 6, dur);
      ++corr, ts += dur + 10;
    };
    for (int step = 0; step < 3; ++step) {
      ev += step_json(step, ts, 410 + (softmax_us + 10) * per_step + 5);
      kernel("sm90_xmma_gemm_bf16bf16_bf16f32", 400);
      for (int i = 0; i < per_step; ++i)
        kernel("void (anonymous namespace)::softmax_warp_forward<float, float>", softmax_us);
      ts += 5;
    }
    ev.pop_back();
    return parse_kineto("{\"traceEvents\": [" + ev + "]}", "attention");
  };
  auto has = [](const Analysis& a) {
    return std::any_of(a.findings.begin(), a.findings.end(),
                       [](const Finding& f) { return f.id == "unfused-attention"; });
  };
  EXPECT_TRUE(has(analyze(trace(8, 1))));   // 8 × 1 µs: 2.0% of kernel time, one a layer
  EXPECT_FALSE(has(analyze(trace(1, 8))));  // one of 8 µs: 2.0%, a classifier's
  EXPECT_TRUE(has(analyze(trace(1, 40))));  // one of 40 µs: 9.1%, over 5% whatever the count
}

}  // namespace
}  // namespace gsq::analyze
