// The trace model shared by every importer (Kineto/PyTorch-profiler JSON today) and every analysis.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gsq::analyze {

enum class Kind : uint8_t { kernel, memcpy, memset, sync, runtime, cpu_op, annotation };
enum class CopyKind : uint8_t { none, htod, dtoh, dtod, ptop, other };
enum class MemKind : uint8_t { unknown, pageable, pinned, device, managed };

// One interval on a timeline. Times are nanoseconds on the trace's clock, relative to Trace::base_ns.
struct Event {
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = -1;  // links a runtime call to the GPU work it launched
  uint64_t bytes = 0;        // copies and memsets
  uint32_t name = 0;         // index into Trace::names
  int32_t pid = 0, tid = 0;
  int32_t device = -1, stream = -1;
  Kind kind = Kind::cpu_op;
  CopyKind copy = CopyKind::none;
  MemKind src = MemKind::unknown, dst = MemKind::unknown;
  [[nodiscard]] int64_t end_ns() const noexcept { return start_ns + dur_ns; }
  [[nodiscard]] bool on_gpu() const noexcept {
    return kind == Kind::kernel || kind == Kind::memcpy || kind == Kind::memset;
  }
};

class StringTable {
 public:
  uint32_t intern(std::string_view s);
  [[nodiscard]] const std::string& operator[](uint32_t i) const { return strings_[i]; }
  [[nodiscard]] size_t size() const noexcept { return strings_.size(); }

 private:
  std::vector<std::string> strings_;
  std::unordered_map<std::string, uint32_t> index_;
};

// A hardware counter sampled beside the trace (gpusqueeze traces recorded with --gpu-metrics), times like events'.
struct CounterTrack {
  std::string name, unit;  // "sm_active" / "ratio", "dram_bandwidth_utilization", "tensor_active", "power", ...
  std::vector<int64_t> t_ns;
  std::vector<double> values;
};

// A cudaStreamWaitEvent as Kineto records it (cuda_sync "Stream Wait Event", PyTorch >= 2.1 with sync events on):
// work queued on `stream` after the wait (the call with correlation `correlation`) starts only once the work on
// `wait_on_stream` recorded by the cudaEventRecord with correlation `record_correlation` is done.
struct StreamWait {
  int32_t device = -1, stream = -1, wait_on_stream = -1;
  int64_t correlation = -1, record_correlation = -1;
};

struct Trace {
  std::string origin;         // file it came from
  std::string source;         // "kineto"
  int rank = -1;              // from distributedInfo / the file name, -1 if unknown
  int64_t base_ns = 0;        // absolute time of t = 0 (baseTimeNanoseconds), 0 if unknown
  std::vector<Event> events;  // sorted by start_ns after import
  StringTable names;
  size_t skipped_events = 0;  // events of kinds the analyses do not use (python_function, flows, metadata)
  // Records the recorder lost (.gsqt stats: CUPTI's dropped records, the tracer's dropped CPU records); the analyses
  // then judge incomplete data and say so.
  uint64_t lost_gpu_records = 0, lost_cpu_records = 0;
  std::vector<CounterTrack> counters;
  std::vector<StreamWait> stream_waits;
  // The steady-state window the analyses judge: the span of the step markers (ProfilerStep#N) of the process that
  // launches the most work, and the GPU work launched inside it; empty when the trace has no step markers (then the
  // whole recording is judged). Events outside it (model load, warm-up, teardown) are left out.
  std::string window;
  size_t outside_window = 0;
  std::string gpu_name;              // the sampled GPU, when the counters say
  double dram_peak_bytes_per_s = 0;  // its DRAM peak from NVML (max memory clock × bus width), 0 if unknown
  [[nodiscard]] const std::string& name(const Event& e) const { return names[e.name]; }
};

// Keeps only the steady state: the span of the step markers of the process that launches the most GPU work (start-up,
// warm-up and teardown around the steps are not what a per-step verdict or saving is about), with the GPU work
// launched in that span (a GPU that lags the host finishes it after the last marker) and any other GPU work that ran
// until that work was done (cut at the first step's start). A trace without step markers is left whole. Sets
// Trace::window.
void keep_steady_state(Trace& t);

// Parses "Memcpy HtoD (Pageable -> Device)" style names into the copy kind and memory kinds.
void classify_copy(std::string_view name, Event& e);

// Shortens a demangled kernel name for grouping: drops template arguments and parameter lists, keeps namespaces and
// the function name, so instantiations that differ only in template noise land in one group.
[[nodiscard]] std::string normalize_kernel_name(std::string_view demangled);

}  // namespace gsq::analyze
