#include "probes/host_probes.hpp"

#include "bench/device_kernels.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "cuda/check.hpp"
#include "cuda/raii.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>

namespace gsq::probes {

namespace {

using Clock = std::chrono::steady_clock;

double ns_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
}

void finish(HostCost& c) {
  std::vector<double> sorted = c.samples_ns;
  std::sort(sorted.begin(), sorted.end());
  const auto s = stats::summarize(sorted);
  c.p50_ns = s.p50, c.p99_ns = s.p99;
  const auto ci = stats::median_ci_order_stats(sorted);
  c.ci_lo_ns = ci.lo, c.ci_hi_ns = ci.hi;
}

// `samples` samples of `per_sample` calls of `call`, each sample preceded by `before` (untimed) and ended by
// `after` (timed: what the calls left to finish, e.g. a synchronize, belongs to their cost when asked).
HostCost time_calls(std::string name, std::string what, std::string size, int samples, int per_sample,
                    const std::function<void()>& call, const std::function<void()>& before = {},
                    const std::function<void()>& after = {}) {
  HostCost c{std::move(name), std::move(what), std::move(size), {}, 0, 0, 0, 0};
  for (int w = 0; w < 3; ++w) {  // warm-up samples: lazy loading, pool growth, first-touch costs
    if (before) before();
    for (int i = 0; i < per_sample; ++i) call();
    if (after) after();
  }
  for (int s = 0; s < samples; ++s) {
    if (before) before();
    const auto t0 = Clock::now();
    for (int i = 0; i < per_sample; ++i) call();
    if (after) after();
    c.samples_ns.push_back(ns_since(t0) / per_sample);
  }
  finish(c);
  return c;
}

struct Graph {
  cudaGraphExec_t exec = nullptr;
  ~Graph() {
    if (exec) GSQ_CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(exec));
  }
};

}  // namespace

std::vector<HostCost> measure_host_costs(const std::string& group, int device, int samples,
                                         const std::function<void(const std::string&)>& progress) {
  if (group != "launch" && group != "alloc") throw_bad_input("host-cost group must be launch or alloc, not " + group);
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) throw_no_gpu("no NVIDIA GPU visible to CUDA");
  if (device < 0 || device >= n) throw_bad_input(fmt::format("--device {}: this machine has {} GPU(s)", device, n));
  GSQ_CUDA_CHECK(cudaSetDevice(device));
  cuda::Stream stream = cuda::Stream::create();
  cudaStream_t s = stream.get();
  auto sync = [s] { GSQ_CUDA_CHECK(cudaStreamSynchronize(s)); };
  std::vector<HostCost> out;
  auto say = [&](const std::string& m) {
    if (progress) progress(m);
  };

  if (group == "launch") {
    say("launch: enqueue cost of an empty kernel and of a graph of 100");
    out.push_back(time_calls(
        "launch.enqueue", "cudaLaunchKernel of an empty kernel, host time per call (queue not full)", "", samples, 100,
        [s] { bench::launch_empty_kernel(s); }, sync));
    cudaGraph_t g = nullptr;
    cuda::Stream capture = cuda::Stream::create();
    GSQ_CUDA_CHECK(cudaStreamBeginCapture(capture.get(), cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < 100; ++i) bench::launch_empty_kernel(capture.get());
    GSQ_CUDA_CHECK(cudaStreamEndCapture(capture.get(), &g));
    Graph graph;
    GSQ_CUDA_CHECK(cudaGraphInstantiate(&graph.exec, g, 0));
    GSQ_CUDA_CHECK(cudaGraphDestroy(g));
    HostCost gl = time_calls(
        "launch.graph_per_kernel", "cudaGraphLaunch of 100 empty kernels, host time per kernel", "", samples, 1,
        [&] { GSQ_CUDA_CHECK(cudaGraphLaunch(graph.exec, s)); }, sync);
    for (double& x : gl.samples_ns) x /= 100;
    finish(gl);
    out.push_back(std::move(gl));
    say("launch: synchronisation costs");
    out.push_back(time_calls("sync.stream_idle", "cudaStreamSynchronize on an idle stream", "", samples, 100, sync));
    out.push_back(time_calls("sync.device_idle", "cudaDeviceSynchronize with the device idle", "", samples, 100,
                             [] { GSQ_CUDA_CHECK(cudaDeviceSynchronize()); }));
    out.push_back(time_calls("sync.kernel_round_trip",
                             "launch an empty kernel + cudaStreamSynchronize: the host's round trip to the GPU", "",
                             samples, 20, [&] {
                               bench::launch_empty_kernel(s);
                               sync();
                             }));
    cuda::Event ev = cuda::Event::create();
    out.push_back(time_calls(
        "sync.event_record_query", "cudaEventRecord + cudaEventQuery (polling, no wait)", "", samples, 100,
        [&] {
          GSQ_CUDA_CHECK(cudaEventRecord(ev.get(), s));
          (void)cudaEventQuery(ev.get());
        },
        sync));
    return out;
  }

  // Allocation: the pool keeps what is freed (release threshold = max, a setting of this process's pool only).
  cudaMemPool_t pool = nullptr;
  GSQ_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  uint64_t keep = UINT64_MAX;
  GSQ_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  for (const char* size : {"4Ki", "1Mi", "64Mi", "1Gi"}) {
    const auto bytes = static_cast<size_t>(*bench::parse_size(size));
    say(fmt::format("alloc: {} bytes", size));
    const int per = bytes >= (1u << 30) ? 1 : 10;
    const int n_samples = bytes >= (1u << 30) ? std::min(samples, 30) : samples;
    out.push_back(time_calls("alloc.cudaMalloc+cudaFree", "cudaMalloc then cudaFree (synchronises the device)", size,
                             n_samples, per, [bytes] {
                               void* p = nullptr;
                               GSQ_CUDA_CHECK(cudaMalloc(&p, bytes));
                               GSQ_CUDA_CHECK(cudaFree(p));
                             }));
    out.push_back(time_calls(
        "alloc.cudaMallocAsync+cudaFreeAsync",
        "cudaMallocAsync then cudaFreeAsync on a stream, from the default pool (stream-ordered)", size, n_samples, per,
        [bytes, s] {
          void* p = nullptr;
          GSQ_CUDA_CHECK(cudaMallocAsync(&p, bytes, s));
          GSQ_CUDA_CHECK(cudaFreeAsync(p, s));
        },
        {}, sync));
  }
  return out;
}

nlohmann::json host_costs_json(const std::vector<HostCost>& costs, const std::string& gpu_name) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& c : costs)
    rows.push_back({{"name", c.name},
                    {"what", c.what},
                    {"size", c.size},
                    {"p50_ns", c.p50_ns},
                    {"p99_ns", c.p99_ns},
                    {"p50_ci95_ns", {c.ci_lo_ns, c.ci_hi_ns}},
                    {"samples_ns", c.samples_ns}});
  return {{"schema", "gpusqueeze.host-costs/1"},
          {"gpu", gpu_name},
          {"timer", "std::chrono::steady_clock around many calls per sample; per-call figures"},
          {"results", rows}};
}

Table host_costs_table(const std::vector<HostCost>& costs) {
  Table t;
  t.header = {"probe", "size", "P50 per call", "95% CI of P50", "P99", "what"};
  auto us = [](double ns) { return fmt::format("{:.2f} µs", ns / 1e3); };
  for (const auto& c : costs)
    t.rows.push_back({c.name, c.size, us(c.p50_ns), fmt::format("{:.2f}–{:.2f}", c.ci_lo_ns / 1e3, c.ci_hi_ns / 1e3),
                      us(c.p99_ns), c.what});
  return t;
}

namespace {
double median_of(const bench::Result& r, const std::string& mode) {
  for (const auto& m : r.measurements) {
    if (m.mode != mode) continue;
    const auto k = m.kept();
    return k.empty() ? 0 : stats::percentile(k, 0.5);
  }
  return 0;
}
}  // namespace

std::optional<L2Transition> l2_transition(const bench::Run& run) {
  std::vector<std::pair<int64_t, double>> bw;  // size → bytes/s (batch mode)
  for (const auto& r : run.results) {
    if (r.name != "l2.read" || !r.skipped.empty() || !r.axes.contains("bytes")) continue;
    const auto size = bench::parse_size(r.axes.at("bytes"));
    const double ns = median_of(r, "batch");
    if (size && ns > 0) bw.emplace_back(*size, r.bytes_per_launch / (ns * 1e-9));
  }
  if (bw.size() < 3) return std::nullopt;
  std::sort(bw.begin(), bw.end());
  L2Transition t;
  for (const auto& [size, b] : bw) t.l2_bytes_per_s = std::max(t.l2_bytes_per_s, b);
  t.hbm_bytes_per_s = bw.back().second;
  // The edge is where the rate crosses halfway from the plateau down to HBM's: on an H200 HBM reads run at over 80% of
  // the L2's rate, so a fixed fraction of the plateau would call 1 GiB L2-resident.
  const double mid = 0.5 * (t.l2_bytes_per_s + t.hbm_bytes_per_s);
  for (const auto& [size, b] : bw)
    if (b > mid) t.last_l2_size = size;
  // Small sizes are slow too (a launch's fixed cost dominates), so HBM begins only past the plateau.
  for (const auto& [size, b] : bw) {
    if (size > t.last_l2_size && b <= mid) {
      t.first_hbm_size = size;
      break;
    }
  }
  return t;
}

std::vector<std::pair<std::string, double>> overlap_speedups(const bench::Run& run) {
  std::map<std::string, std::map<std::string, double>> by_memory;  // memory → schedule → median ns
  for (const auto& r : run.results) {
    if (r.name != "overlap.copy_compute" || !r.skipped.empty()) continue;
    const double batch = median_of(r, "batch");
    by_memory[r.axes.at("memory")][r.axes.at("schedule")] = batch > 0 ? batch : median_of(r, "cold");
  }
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [memory, sched] : by_memory)
    if (sched.contains("serial") && sched.contains("streams") && sched.at("streams") > 0)
      out.emplace_back(memory, sched.at("serial") / sched.at("streams"));
  return out;
}

}  // namespace gsq::probes
