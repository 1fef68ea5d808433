// Trace facts the analyses share (see trace_facts.hpp).
#include "analyze/trace_facts.hpp"

#include <algorithm>
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

}  // namespace gsq::analyze::detail
