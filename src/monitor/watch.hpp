// The exporter's watcher (step 7 → step 2): when the GPUs a serving process uses stay under-used for a while, ask
// that process (started with `gpusqueeze trace --on-demand`) for a trace window and analyse it, so the evidence of
// why is on disk before anyone logs in.
#pragma once

#include "analyze/analysis.hpp"
#include "monitor/exporter.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace gsq::monitor {

struct WatchOptions {
  int pid = 0;              // the process traced on demand
  double below = 0.5;       // busy fraction under which the GPU counts as under-used
  double for_s = 60;        // ... for this long
  double capture_s = 10;    // window length
  double cooldown_s = 600;  // no new capture this soon after one
  std::string control_dir = "/tmp";
  double grace_s = 15;
};

// Decides when to capture from successive collections. Busy = GPM SM activity when the collection has it, else
// NVML utilization; of the GPUs where `pid` holds memory (all GPUs when it holds none visible to NVML, e.g. another
// PID namespace), the busiest one counts.
class Watcher {
 public:
  explicit Watcher(WatchOptions o) : o_(std::move(o)) {}
  // Feeds one collection taken at `now_s` (seconds on any steady clock); true when a capture should start now.
  bool observe(const Collection& c, double now_s);
  void captured(double now_s) { last_capture_s_ = now_s, low_since_s_.reset(); }
  // What observe() last saw: "SM activity 12% (GPU 0)" or why it saw nothing.
  [[nodiscard]] const std::string& last_reading() const noexcept { return reading_; }
  [[nodiscard]] const WatchOptions& options() const noexcept { return o_; }

 private:
  WatchOptions o_;
  std::optional<double> low_since_s_, last_capture_s_;
  std::string reading_;
};

// The busy fraction the watcher uses for one GPU of a collection; nullopt when neither GPM nor NVML gave one.
[[nodiscard]] std::optional<double> gpu_busy(const Collection& c, size_t gpu, std::string* source = nullptr);

struct CaptureResult {
  std::filesystem::path trace, analysis_file;
  int64_t start_ns = 0, end_ns = 0;
  size_t records = 0;
  analyze::Analysis analysis;
};

// Asks `pid` for `seconds` of trace, analyses just that window and writes the analysis JSON beside the trace
// (TRACE.captureSTART.analysis.json). Throws Error(bad_input) as trace::request_capture does.
[[nodiscard]] CaptureResult capture_and_analyze(int pid, double seconds, const std::filesystem::path& control_dir,
                                                double grace_s, const std::function<void(const std::string&)>& note);

}  // namespace gsq::monitor
