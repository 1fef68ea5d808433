// Trace facts the analyses share (see trace_facts.hpp).
#include "analyze/trace_facts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <unordered_map>

namespace gsq::analyze::detail {

std::vector<Interval> merge(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.lo < b.lo; });
  std::vector<Interval> out;
  for (const auto& i : v) {
    if (i.hi <= i.lo) continue;
    if (!out.empty() && i.lo <= out.back().hi)
      out.back().hi = std::max(out.back().hi, i.hi);
    else
      out.push_back(i);
  }
  return out;
}

int64_t total(const std::vector<Interval>& v) {
  int64_t s = 0;
  for (const auto& i : v) s += i.hi - i.lo;
  return s;
}

int64_t covered(const std::vector<Interval>& merged, int64_t lo, int64_t hi) {
  auto it = std::upper_bound(merged.begin(), merged.end(), lo, [](int64_t x, const Interval& i) { return x < i.hi; });
  int64_t s = 0;
  for (; it != merged.end() && it->lo < hi; ++it) s += std::min(hi, it->hi) - std::max(lo, it->lo);
  return s;
}

bool is_layout_transpose(std::string_view kernel) {
  for (std::string_view k : {"nchwToNhwc", "nhwcToNchw", "NchwToNhwc", "NhwcToNchw", "nchw_to_nhwc", "nhwc_to_nchw"})
    if (kernel.find(k) != std::string_view::npos) return true;
  return false;
}

bool is_fp32_gemm(std::string_view kernel) {
  auto has = [&](std::string_view w) { return kernel.find(w) != std::string_view::npos; };
  if (has("tf32") || has("implicit_gemm") || has("fprop") || has("dgrad") || has("wgrad")) return false;
  return has("sgemm") || has("gemm_f32f32_f32f32");
}

bool is_fp32_attention(std::string_view kernel) {
  return kernel.find("fmha_") != std::string_view::npos && kernel.find("_f32") != std::string_view::npos;
}

bool is_nchw_batch_norm(std::string_view kernel) {
  // The kernel's own function name (not a functor named in its template arguments, as the per-channel elementwise
  // kernels' batch_norm_update_stats is), demangled or mangled.
  if (kernel.starts_with("void ")) kernel.remove_prefix(5);
  std::string_view fn = kernel.substr(0, kernel.find_first_of("<("));
  if (fn.starts_with("_ZN2at6native")) {  // _ZN2at6native<length><name>...
    fn.remove_prefix(13);
    size_t digits = 0, len = 0;
    for (; digits < fn.size() && fn[digits] >= '0' && fn[digits] <= '9'; ++digits) len = len * 10 + (fn[digits] - '0');
    fn = digits > 0 && digits + len <= fn.size() ? fn.substr(digits, len) : std::string_view{};
  } else if (fn.starts_with("at::native::")) {
    fn.remove_prefix(12);
  } else {
    return false;
  }
  return fn.starts_with("batch_norm_") && fn.ends_with("_kernel") && fn.find("channels_last") == std::string_view::npos;
}

bool is_launch_call(std::string_view n) {
  return n.starts_with("cudaLaunchKernel") || n.starts_with("cuLaunchKernel") || n == "cudaGraphLaunch" ||
         n == "cuGraphLaunch";
}

bool is_sync_call(std::string_view n) {
  return n == "cudaStreamSynchronize" || n == "cudaDeviceSynchronize" || n == "cudaEventSynchronize" ||
         n == "cudaMemcpy" || n == "cuStreamSynchronize" || n == "cuCtxSynchronize" || n == "cuEventSynchronize" ||
         n == "cudaMemcpy2D" || n == "cudaMemset";
}

bool is_gemm_kernel(std::string_view n) {
  for (std::string_view k : {"gemm", "Gemm", "GEMM", "cutlass", "xmma", "nvjet", "matmul", "wgmma", "mma"})
    if (n.find(k) != std::string_view::npos) return true;
  return false;
}

bool is_attention_softmax_kernel(std::string_view n) {
  const auto has = [&](std::string_view k) { return n.find(k) != std::string_view::npos; };
  return (has("softmax") || has("SoftMax") || has("Softmax")) && !has("log_softmax") && !has("LogSoftMax") &&
         !has("LogSoftmax") && !has("cross_entropy");
}

std::string size_bucket(uint64_t bytes) {
  if (bytes <= 4096) return "a ≤4 KiB";
  if (bytes <= 65536) return "b 4–64 KiB";
  if (bytes <= (1u << 20)) return "c 64 KiB–1 MiB";
  if (bytes <= (16u << 20)) return "d 1–16 MiB";
  return "e >16 MiB";
}

std::string copy_kind_name(CopyKind k) {
  switch (k) {
    case CopyKind::htod:
      return "HtoD";
    case CopyKind::dtoh:
      return "DtoH";
    case CopyKind::dtod:
      return "DtoD";
    case CopyKind::ptop:
      return "PtoP";
    default:
      return "other";
  }
}

std::vector<int32_t> outermost_ops(const Trace& t) {
  std::vector<int32_t> out(t.events.size(), -1);
  std::unordered_map<int64_t, std::vector<size_t>> by_thread;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const auto k = t.events[i].kind;
    if (k == Kind::cpu_op || k == Kind::runtime)
      by_thread[(int64_t{t.events[i].pid} << 32) | uint32_t(t.events[i].tid)].push_back(i);
  }
  for (auto& [key, idx] : by_thread) {
    std::vector<size_t> stack;  // open CPU ops, outermost first
    for (size_t i : idx) {
      const Event& e = t.events[i];
      while (!stack.empty() && t.events[stack.back()].end_ns() <= e.start_ns) stack.pop_back();
      if (e.kind == Kind::cpu_op)
        stack.push_back(i);
      else if (!stack.empty())
        out[i] = static_cast<int32_t>(stack.front());
    }
  }
  return out;
}

std::unordered_map<int32_t, size_t> launches_by_pid(const Trace& t) {
  std::unordered_map<int32_t, size_t> launches;
  for (const auto& e : t.events)
    if (e.kind == Kind::runtime && is_launch_call(t.name(e))) ++launches[e.pid];
  return launches;
}

std::optional<int32_t> main_launching_pid(const Trace& t) {
  return main_launching_pid(launches_by_pid(t));
}

std::optional<int32_t> main_launching_pid(const std::unordered_map<int32_t, size_t>& launches) {
  if (launches.empty()) return std::nullopt;
  return std::max_element(launches.begin(), launches.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; })
      ->first;
}

std::vector<OptimizerRange> optimizer_step_ranges(const Trace& t) {
  std::vector<OptimizerRange> out;
  const auto pid = main_launching_pid(t);
  if (!pid) return out;
  for (const auto& e : t.events)
    // A range (user_annotation); older recorders write record_function ranges as CPU ops.
    if ((e.kind == Kind::annotation || e.kind == Kind::cpu_op) && e.pid == *pid && is_optimizer_step_range(t.name(e))) {
      const auto& n = t.name(e);  // "Optimizer.step#AdamW.step"
      const auto hash = n.find('#'), dot = n.find('.', hash + 1);
      out.push_back({e.start_ns, e.end_ns(), n.substr(hash + 1, dot == std::string::npos ? dot : dot - hash - 1)});
    }
  std::sort(out.begin(), out.end(), [](const OptimizerRange& a, const OptimizerRange& b) { return a.start < b.start; });
  // Launches by start time (`gpusqueeze trace` records the range on NVTX's thread id, the launches on CUDA's).
  for (const auto& e : t.events)
    if (e.kind == Kind::runtime && e.pid == *pid && is_launch_call(t.name(e)))
      if (const auto r = std::upper_bound(out.begin(), out.end(), e.start_ns,
                                          [](int64_t v, const OptimizerRange& x) { return v < x.start; });
          r != out.begin() && e.start_ns < std::prev(r)->end)
        ++std::prev(r)->launches;
  return out;
}

}  // namespace gsq::analyze::detail

namespace gsq::analyze {

void keep_steady_state(Trace& t) {
  // The process that launches the most work; its step markers (on any of its threads: the Python thread marks steps,
  // autograd's thread may launch more).
  const auto launches = detail::launches_by_pid(t);
  const auto main_pid = detail::main_launching_pid(launches);
  if (!main_pid) return;
  const int32_t pid = *main_pid;
  int64_t lo = INT64_MAX, host_hi = INT64_MIN;
  size_t steps = 0;
  std::string first, last;
  for (const auto& e : t.events) {
    if (e.kind != Kind::annotation || e.pid != pid || !detail::is_step_marker(t.name(e))) continue;
    ++steps;
    if (e.start_ns < lo) lo = e.start_ns, first = t.name(e);
    if (e.end_ns() > host_hi) host_hi = e.end_ns(), last = t.name(e);
  }
  if (steps == 0) {
    // No steps: the whole recording, less the CPU events of processes that launch nothing (a stray range another
    // process recorded would stretch the window with idle time that is not this program's).
    const size_t before = t.events.size();
    std::erase_if(t.events,
                  [&](const Event& e) { return !e.on_gpu() && e.kind != Kind::sync && !launches.count(e.pid); });
    t.outside_window = before - t.events.size();
    if (t.outside_window)
      t.window = fmt::format(
          "the whole recording (no step markers); {} events of processes that launch no GPU work "
          "left out",
          t.outside_window);
    return;
  }
  // GPU work launched inside the steps ends the window.
  std::unordered_map<int64_t, bool> launched_inside;
  for (const auto& e : t.events)
    if (e.kind == Kind::runtime && e.correlation >= 0)
      launched_inside[e.correlation] = e.start_ns >= lo && e.start_ns < host_hi;
  int64_t hi = host_hi;
  for (const auto& e : t.events)
    if (e.on_gpu() && e.correlation >= 0)
      if (const auto c = launched_inside.find(e.correlation); c != launched_inside.end() && c->second)
        hi = std::max(hi, e.end_ns());
  std::vector<Event> kept;
  kept.reserve(t.events.size());
  for (Event e : t.events) {
    bool keep = false;
    if (e.on_gpu()) {
      // The work launched inside, and whatever else ran in the window: a GPU that lags the host is still busy with
      // work launched before the first step when it begins (leaving that out would show idle time that was not).
      const auto c = launched_inside.find(e.correlation);
      keep = (c != launched_inside.end() && c->second) || (e.end_ns() > lo && e.start_ns < hi);
      if (keep && e.start_ns < lo) e.dur_ns = e.end_ns() - lo, e.start_ns = lo;
    } else if (e.kind == Kind::sync) {
      keep = e.start_ns >= lo && e.start_ns < hi;
    } else {
      keep = e.start_ns >= lo && e.start_ns < host_hi;
    }
    if (keep)
      kept.push_back(e);
    else
      ++t.outside_window;
  }
  for (auto& c : t.counters) {
    std::vector<int64_t> ts;
    std::vector<double> vs;
    for (size_t i = 0; i < c.t_ns.size() && i < c.values.size(); ++i)
      if (c.t_ns[i] >= lo && c.t_ns[i] < hi) ts.push_back(c.t_ns[i]), vs.push_back(c.values[i]);
    c.t_ns = std::move(ts), c.values = std::move(vs);
  }
  std::stable_sort(kept.begin(), kept.end(), [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  t.events = std::move(kept);
  t.window = steps == 1 ? fmt::format("{} of process {}", first, pid)
                        : fmt::format("{}…{} of process {} ({} steps)", first, last, pid, steps);
  if (t.outside_window)
    t.window +=
        fmt::format("; {} events outside it (start-up, warm-up, teardown, other processes) left out", t.outside_window);
}

}  // namespace gsq::analyze
