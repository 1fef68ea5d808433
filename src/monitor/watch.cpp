#include "monitor/watch.hpp"

#include "analyze/gsqt.hpp"
#include "core/json_io.hpp"
#include "trace/capture.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gsq::monitor {

std::optional<double> gpu_busy(const Collection& c, size_t gpu, std::string* source) {
  if (gpu < c.counters.size())
    for (const auto& [name, v] : c.counters[gpu].gpm)
      if (name == "sm_active") {
        if (source) *source = "SM activity";
        return v;
      }
  if (gpu < c.snapshot.gpus.size() && c.snapshot.gpus[gpu].utilization_gpu_pct.ok()) {
    if (source) *source = "NVML utilization";
    return *c.snapshot.gpus[gpu].utilization_gpu_pct / 100.0;
  }
  return std::nullopt;
}

bool Watcher::observe(const Collection& c, double now_s) {
  std::vector<size_t> gpus;
  for (size_t i = 0; i < c.snapshot.gpus.size(); ++i) {
    const auto& p = c.snapshot.gpus[i].processes;
    if (p.ok() &&
        std::any_of(p->begin(), p->end(), [&](const auto& q) { return static_cast<int64_t>(q.pid) == o_.pid; }))
      gpus.push_back(i);
  }
  const bool on_some = !gpus.empty();
  if (!on_some)
    for (size_t i = 0; i < c.snapshot.gpus.size(); ++i) gpus.push_back(i);
  std::optional<double> busiest;
  size_t at = 0;
  std::string source;
  for (size_t i : gpus) {
    std::string s;
    const auto b = gpu_busy(c, i, &s);
    if (b && (!busiest || *b > *busiest)) busiest = b, at = i, source = s;
  }
  if (!busiest) {
    reading_ = "no SM activity or utilization in this collection";
    low_since_s_.reset();
    return false;
  }
  reading_ = fmt::format("{} {:.0f}% (GPU {}{})", source, *busiest * 100, at,
                         on_some ? "" : fmt::format(", pid {} not in NVML's process list: all GPUs", o_.pid));
  if (*busiest >= o_.below) {
    low_since_s_.reset();
    return false;
  }
  if (!low_since_s_) low_since_s_ = now_s;
  if (now_s - *low_since_s_ < o_.for_s) return false;
  if (last_capture_s_ && now_s - *last_capture_s_ < o_.cooldown_s) return false;
  return true;
}

CaptureResult capture_and_analyze(int pid, double seconds, const std::filesystem::path& control_dir, double grace_s,
                                  const std::function<void(const std::string&)>& note) {
  const auto w = trace::request_capture(pid, seconds, control_dir, grace_s, note);
  const auto file = trace::window_of(trace::read_trace(w.trace), w.start_ns, w.end_ns);
  CaptureResult r;
  r.trace = w.trace;
  r.start_ns = w.start_ns;
  r.end_ns = w.end_ns;
  r.records = file.records.size();
  r.analysis = analyze::analyze(analyze::from_gsqt(file));
  r.analysis_file = fmt::format("{}.capture{}.analysis.json", w.trace.string(), w.start_ns);
  write_json_file(r.analysis_file, analyze::to_json(r.analysis));
  return r;
}

}  // namespace gsq::monitor
