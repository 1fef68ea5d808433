// A causal model of a trace and what-if replays of it (the idea of Daydream, Zhu et al., USENIX ATC 2020: predict a
// fix by transforming the dependency graph a trace gives and replaying it).
//
// The graph: the launching thread's top-level CPU items in order, with the host gaps between them (Python, input
// preparation: work that is not a CUDA call); each item's CUDA calls; every launch feeds its GPU op (correlation id);
// GPU ops run in stream order and not before their launch returns; a synchronising call, or a copy the driver has to
// stage (pageable memory), waits for the GPU work it drains. The replay walks the items with the recorded durations,
// so the unmodified replay reproduces the recorded steps; a fix changes the graph and the replay says what follows.
// The critical path of each step falls out of the walk: host gaps, CPU op time (dispatch and launch overhead), and
// waiting on the GPU (split by what it waited for).
#pragma once

#include "analyze/analysis.hpp"
#include "analyze/model.hpp"
#include "core/table.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gsq::analyze {

struct Fixes {
  bool sync = false;       // the per-step syncs dropped (an .item()'s whole op; other syncs stop waiting)
  bool pinned = false;     // pageable input copies (host to device) from memory allocated pinned
                           // (DataLoader(pin_memory=True) pins in its workers), asynchronous, at the pinned rate
  bool fuse = false;       // each run of back-to-back elementwise ops becomes one op and one kernel
  bool graphs = false;     // launch-only ops replayed from a CUDA graph: a per-kernel cost instead of the dispatch
  bool host = false;       // host gaps moved to a worker thread that prepares the next step meanwhile
  bool layout = false;     // layout conversions gone (tensors kept in the layout their kernels want, e.g. channels_last
                           // at load): aten::contiguous items dropped, cuDNN's NCHW<->NHWC transposes cost nothing,
                           // PyTorch's NCHW batch norms at detail::kNhwcBatchNormRatio of their time
  bool prefetch = false;   // host-to-device copies from pinned memory issued one step ahead on a side stream (the next
                           // batch's copy overlaps this step's compute); the first kernel after each copy waits for it
  bool tf32 = false;       // fp32 GEMMs on the tensor cores in TF32 (torch.backends.cuda.matmul.allow_tf32 = True):
                           // their time × detail::kTf32GemmRatio
  bool bf16 = false;       // bf16 autocast: fp32 GEMMs × kBf16GemmRatio plus their operands' casts, fp32 attention
                           // × kBf16AttentionRatio; each GEMM's launch preceded by kAutocastCastsPerGemm small ops
  bool optimizer = false;  // a fused optimizer (fused=True) for one that steps one tensor at a time (foreach=False):
                           // each "Optimizer.step#" range's CPU ops become one op launching one kernel, which moves the
                           // bytes of the single-tensor kernels once (detail::fused_optimizer_pass_ratio)
  bool attention = false;  // fused attention (scaled_dot_product_attention) for attention computed by hand: each run of
                           // ops from a matmul through a softmax to the next matmul (forward, and its backward) becomes
                           // one op launching one kernel that costs the run's GEMMs (detail::attention_runs)
  std::vector<std::pair<std::string, double>> faster;  // kernels whose name contains the text run N× faster
  int workers = 0;  // DataLoader(num_workers=N): each batch's next() (its enumerate(DataLoader) range; without one, the
                    // host's time before the step's first input copy) done by one of N workers that prefetch; the
                    // loop waits only when they fall behind (0: off)
  // Not a fix: the host's own time (CPU ops, gaps, launches) taken as zero, leaving the GPU work, its order and the
  // waits — the step's floor. A profiler slows the host more than the GPU, so a step the replay finds launch- or
  // host-bound lies between the replay and this floor.
  bool host_free = false;
};
// The fixes --what-if names, in the order it lists them: parse_fixes, fixes_name and what_if's rows all read this one
// table (host_free is not among them: it measures, it is no change a user makes).
struct NamedFix {
  const char* name;
  bool Fixes::*member;
};
inline constexpr NamedFix kNamedFixes[] = {
    {"sync", &Fixes::sync},           {"pinned", &Fixes::pinned},      {"fuse", &Fixes::fuse},
    {"graphs", &Fixes::graphs},       {"host", &Fixes::host},          {"layout", &Fixes::layout},
    {"prefetch", &Fixes::prefetch},   {"tf32", &Fixes::tf32},          {"bf16", &Fixes::bf16},
    {"optimizer", &Fixes::optimizer}, {"attention", &Fixes::attention}};
// "sync,pinned,fuse,graphs,host,layout,prefetch,tf32,bf16,optimizer,attention,kernel:gemm=2" → Fixes. Throws
// Error(bad_input) naming the unknown word.
[[nodiscard]] Fixes parse_fixes(const std::string& list);
[[nodiscard]] std::string fixes_name(const Fixes& f);
// Whether the fixes change the kernels themselves (fusing, layout, precision, a fused optimizer or attention, a kernel
// made faster); the others (sync, pinned, prefetch, host, workers, graphs) change only when and how they are launched.
[[nodiscard]] bool changes_kernels(const Fixes& f);

// Rates the fixes assume, and where they come from (printed with every prediction).
struct ReplayRates {
  double pinned_h2d_bytes_per_s = 25e9;  // PCIe with pinned memory
  int64_t graph_per_kernel_ns = 1000;    // a kernel replayed from a CUDA graph
  // The GPU's own gap between consecutive kernels of a replayed graph, which an eager recording cannot show (its gaps
  // are launches): the smallest of the median gaps in the corpus's four graph replays (H100 torch.profiler recordings:
  // EfficientNet-B0 0.26 µs, ResNet-50 and Swin-T 0.42, ViT-B/16 0.45; bench/realmodels/graph_gaps.py). With the
  // kernels back to back the replay was 4-11% under the measured step on nine graph recordings (BERT-base 40%); with
  // it, 3.4% off on average (bench/results/2026-12-07-cpu-graph-gap).
  int64_t graph_kernel_gap_ns = 260;
  std::string source = "stated defaults (PCIe Gen4 x16 pinned 25 GB/s, 1 µs per graph kernel)";
  bool recorder_corrected = true;  // false: replay the host as recorded (the replay's fidelity check)
};

// A profiler slows the host: every recorded CPU op and CUDA call costs the recorder time the untraced program does
// not spend. The replay takes it out of the host's own time (gaps, CPU ops, calls; never the GPU's) by one factor:
//  - from an untraced step time measured for the same program (`analyze --untraced-step MS`, or `report -- CMD`'s
//    marker-only run): the factor whose as-recorded replay gives that step — except where the GPU sets the replayed
//    step and the untraced one is longer: the GPU's ops are then slowed instead (ReplayGraph::gpu_scale);
//  - else the recorder's share of the host time on the real-model corpus (kKinetoHostScale, kGsqtHostScale), or a cost
//    per record given with `--recorder-cost NS` (each CPU op, CUDA call and range the recorder wrote on the launching
//    threads): factor = 1 − cost × records / host time (0 = as recorded).
struct RecorderCorrection {
  int64_t untraced_step_ns = 0;
  double record_ns = -1;   // < 0: the recorder's default
  double host_scale = -1;  // >= 0: the factor itself (diff --fixes: BEFORE's host replayed at AFTER's speed)
  std::string host_scale_why = {};
};
// The corpora's defaults: the factor the host's time is replayed at, torch.profiler (Kineto) and `gpusqueeze trace`.
// Each is the median, over the recordings whose untraced step the host limits (the factor that gives the untraced step
// lies in (0, 1)), of that factor, over four H100 sets (held-out sets 3 and 4, the re-recorded corpus pairs, the CNN
// autocast pairs; bench/results/2026-12-07-cpu-recorder-share): 66 Kineto recordings and 27 gpusqueeze ones. The
// recorder's cost is a share of the host's time more than a cost per record: the cost per record those factors imply
// falls from 2.9 to 1.2 µs as records get denser (51 to 258 a millisecond of host time) while the share stays within
// 0.22-0.28; left out pair by pair, the share puts the "as recorded" step within 5% of the untraced one on 55 of 96
// Kineto recordings (a cost per record: 44) and 24 of 48 gpusqueeze ones (19). Sparser Kineto recordings than the
// corpus's (under kShareFromRecordsPerMs: a host loop of the program's own Python between few ops, which the profiler
// does not slow) keep the cost per record, kKinetoRecordCostNs (the median over the three earlier sets, 38 recordings,
// 0.4-6.5 µs). A rough correction; --untraced-step makes it exact.
inline constexpr double kKinetoHostScale = 0.741, kGsqtHostScale = 0.904;
inline constexpr double kShareFromRecordsPerMs = 75, kKinetoRecordCostNs = 1'500;
// The rates for the trace's GPU: an H100/H200 (PCIe Gen5) gets the pinned rate measured on this project's H200.
[[nodiscard]] ReplayRates rates_for(const Trace& t);

// A gap of up to 100 µs between the launching thread's CPU ops or CUDA calls is the per-op cost of Python and the
// framework (launch-bound: CUDA graphs or compilation remove it), a longer one is host work of the program's own (input
// preparation, logging: host-bound). From the `gpusqueeze trace` recordings of the real-model corpus
// (bench/results/2026-12-06-h100-realmodels): eager inference that CUDA graphs fixed had 80-98% of its gap time in gaps
// ≤ 100 µs, DataLoader-bound steps 8-10%.
inline constexpr int64_t kDispatchGapNs = 100'000;

// A DataLoader worker makes a batch more slowly than the training process made it with num_workers=0 (the time a
// trace's enumerate(DataLoader) range shows): it runs torch's ops on one intra-op thread (the DataLoader sets
// torch.set_num_threads(1) in each) and writes the batch to shared memory for the main process to pin. Per batch, on an
// H100 host of 16 cores (bench/results/2026-12-07-h100-worker-rate, bench/realmodels/worker_rate.py): transforms.v2
// on uint8 tensors 1.50× with one worker and 1.57× a worker with eight at batch 64 (2.23× with eight at batch 128), PIL
// JPEG decoding 1.25× and 1.26×; the training process on one thread alone gave 1.43×, 1.48× and 1.23× of its own.
inline constexpr double kWorkerBatchSlowdown = 1.5;

struct CriticalPath {
  int64_t host_ns = 0;                   // gaps over kDispatchGapNs on the launching thread: input preparation
  int64_t cpu_ops_ns = 0;                // CPU op time that is not waiting, and shorter gaps: dispatch and launches
  int64_t wait_kernels_ns = 0;           // the thread blocked on kernels (a sync drained them)
  int64_t wait_copies_ns = 0;            // the thread blocked on copies (a staged or synchronous copy)
  std::map<std::string, int64_t> by_op;  // top-level CPU op → its non-waiting time
  [[nodiscard]] int64_t total() const { return host_ns + cpu_ops_ns + wait_kernels_ns + wait_copies_ns; }
};

struct Replay {
  std::string model;  // how the trace was judged: "replay of thread T, N steps (ProfilerStep#)", or why not
  bool ok = false;    // false: no launching thread or no GPU work to replay
  std::vector<int64_t> recorded_step_ns, step_ns;
  int64_t step_p50_ns = 0, recorded_p50_ns = 0, wall_ns = 0;
  CriticalPath path;  // summed over the steps
  std::vector<std::string> assumptions;
  double launched_gpu_share = 0;  // of the GPU time in the replayed span, the part the replayed thread launched
};

[[nodiscard]] Replay replay(const Trace& t, const Fixes& fixes = {}, const ReplayRates& rates = {});
// The graph built once, replayed under several fixes (what-if tables, predicted savings).
struct ReplayGraph;
[[nodiscard]] std::shared_ptr<const ReplayGraph> build_graph(const Trace& t, const RecorderCorrection& c = {});
[[nodiscard]] Replay replay(const Trace& t, const ReplayGraph& graph, const Fixes& fixes, const ReplayRates& rates);

// The critical path as a verdict word: the side with more of the path (the host's time, or its waits on the GPU),
// then that side's larger class: host-bound (gaps: the program's own work), launch-bound (CPU op overhead), gpu-bound
// (waiting on kernels), transfer-bound (waiting on copies).
[[nodiscard]] std::string critical_verdict(const CriticalPath& p);

// Judges an analysis by the critical path: the verdict becomes the path's largest class, and the findings whose fix
// the replay models (sync-point, sync-copy → sync; pageable-copy → pinned; host-idle → host; launch-bound → graphs;
// unoverlapped-copy → pinned,prefetch; layout-conversions → layout) get the saving a replay with that fix predicts
// (evidence saving_kind=predicted); the others keep their upper bound (saving_kind=upper bound).
void judge_by_critical_path(const Trace& t, Analysis& a, const RecorderCorrection& c = {});

// `analyze --what-if`: the replay as recorded, each requested fix alone, and all of them together (replayed as one
// graph, not summed).
struct WhatIfRow {
  std::string fixes;
  int64_t step_p50_ns = 0, wall_ns = 0;
  double saving_ratio = 0;   // of the replayed step P50 as recorded
  int64_t floor_p50_ns = 0;  // the same fixes with the host's own time at zero (Fixes::host_free)
  std::string critical;      // the critical path's largest class after the fix
};
struct WhatIf {
  Replay baseline;         // as recorded, with the recorder's cost taken out (the predicted untraced step)
  std::string correction;  // how the recorder's cost was taken out (ReplayGraph::correction)
  std::vector<WhatIfRow> rows;
  std::vector<std::string> assumptions;
};
// `graph`: the one analyze() judged the trace on (Analysis::replay_graph), else it is built here.
[[nodiscard]] WhatIf what_if(const Trace& t, const Fixes& requested, std::shared_ptr<const ReplayGraph> graph = {},
                             const RecorderCorrection& c = {});
[[nodiscard]] nlohmann::json to_json(const WhatIf& w);
[[nodiscard]] std::string render_markdown(const WhatIf& w);

}  // namespace gsq::analyze
