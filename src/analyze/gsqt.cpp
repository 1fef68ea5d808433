#include "analyze/gsqt.hpp"

#include "analyze/kineto.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace gsq::analyze {

namespace {
MemKind mem_kind(uint8_t cupti) {
  switch (cupti) {
    case 1:
      return MemKind::pageable;
    case 2:
      return MemKind::pinned;
    case 3:
    case 6:
      return MemKind::device;
    case 5:
    case 7:
      return MemKind::managed;
    default:
      return MemKind::unknown;
  }
}
CopyKind copy_kind(uint8_t cupti) {
  switch (cupti) {
    case 1:
      return CopyKind::htod;
    case 2:
      return CopyKind::dtoh;
    case 8:
      return CopyKind::dtod;
    case 10:
      return CopyKind::ptop;
    default:
      return CopyKind::other;
  }
}
}  // namespace

Trace from_gsqt(const trace::TraceFile& f) {
  using trace::RecordKind;
  Trace t;
  t.origin = f.path.string();
  t.source = "gpusqueeze";
  t.rank = f.header.value("rank", -1);
  auto count = [&f](const char* key) -> uint64_t {
    if (!f.stats.is_object() || !f.stats.contains(key) || !f.stats[key].is_number_integer()) return 0;
    return f.stats[key].is_number_unsigned() ? f.stats[key].get<uint64_t>()
                                             : static_cast<uint64_t>(std::max<int64_t>(0, f.stats[key].get<int64_t>()));
  };
  t.lost_gpu_records = count("cupti_dropped_records");
  t.lost_cpu_records = count("cpu_dropped_records");
  const int32_t pid = f.header.value("pid", 0);
  // A record without a start time (an API exit whose entry the tracer never saw, from older tracers) has no place on
  // the timeline: skipped and counted, so it cannot drag t = 0 back to the clock's epoch.
  auto timeless = [](const trace::Record& r) { return r.start_ns <= 0 || r.end_ns < r.start_ns; };
  int64_t base = std::numeric_limits<int64_t>::max();
  for (const auto& r : f.records)
    if (!timeless(r)) base = std::min(base, r.start_ns);
  t.base_ns = base == std::numeric_limits<int64_t>::max() ? 0 : base;
  for (const auto& c : f.counters) {
    CounterTrack ct{c.name, c.unit, {}, c.values};
    for (int64_t ts : c.t_ns) ct.t_ns.push_back(trace::diff_ns(ts, t.base_ns));
    if (t.gpu_name.empty()) t.gpu_name = c.device_name;
    if (t.dram_peak_bytes_per_s <= 0) t.dram_peak_bytes_per_s = c.dram_peak_bytes_per_s;
    t.counters.push_back(std::move(ct));
  }
  // The GPU the launcher described (a counters chunk without tracks: `gpusqueeze trace` appends one where it can read
  // NVML), for the transfer rates and roofline of its kind.
  for (const auto& d : f.devices) {
    if (t.gpu_name.empty() && d.contains("name") && d["name"].is_string()) t.gpu_name = d["name"].get<std::string>();
    if (t.dram_peak_bytes_per_s <= 0 && d.contains("dram_peak_bytes_per_s") && d["dram_peak_bytes_per_s"].is_number())
      t.dram_peak_bytes_per_s = d["dram_peak_bytes_per_s"].get<double>();
  }
  t.events.reserve(f.records.size());
  bool any_gpu = false;
  for (const auto& r : f.records) {
    if (timeless(r)) {
      ++t.skipped_events;
      continue;
    }
    Event e;
    e.start_ns = trace::diff_ns(r.start_ns, t.base_ns);
    e.dur_ns = std::max<int64_t>(0, trace::diff_ns(r.end_ns, r.start_ns));
    e.correlation = static_cast<int64_t>(r.correlation);
    e.pid = pid;
    switch (static_cast<RecordKind>(r.kind)) {
      case RecordKind::kernel:
        e.kind = Kind::kernel;
        e.name = t.names.intern(f.name(r));
        break;
      case RecordKind::memcpy:
        e.kind = Kind::memcpy;
        e.copy = copy_kind(r.copy_kind);
        e.src = mem_kind(r.src_kind), e.dst = mem_kind(r.dst_kind);
        e.bytes = r.bytes;
        e.name = t.names.intern(fmt::format("Memcpy {} ({} -> {})", trace::copy_kind_name(r.copy_kind),
                                            trace::memory_kind_name(r.src_kind), trace::memory_kind_name(r.dst_kind)));
        break;
      case RecordKind::memset:
        e.kind = Kind::memset;
        e.bytes = r.bytes;
        e.name = t.names.intern(fmt::format("Memset ({})", trace::memory_kind_name(r.dst_kind)));
        break;
      case RecordKind::sync:
        e.kind = Kind::sync;
        e.name = t.names.intern(trace::sync_type_name(r.sync_type));
        break;
      case RecordKind::api:
        e.kind = Kind::runtime;
        e.name = t.names.intern(f.name(r));
        break;
      case RecordKind::range:
        e.kind = Kind::annotation;
        e.name = t.names.intern(f.name(r));
        break;
      case RecordKind::overhead:
      default:
        ++t.skipped_events;
        continue;
    }
    if (e.on_gpu()) {
      any_gpu = true;
      e.device = static_cast<int32_t>(r.device);
      e.stream = static_cast<int32_t>(r.stream);
    } else if (e.kind == Kind::sync) {
      e.device = static_cast<int32_t>(r.device);
      e.stream = static_cast<int32_t>(r.stream);
      e.tid = 0;
    } else {
      e.tid = static_cast<int32_t>(r.tid);
    }
    t.events.push_back(e);
  }
  if (!any_gpu) {
    const std::string status = f.header.value("status", "");
    if (status != "tracing")
      throw_bad_input(fmt::format("{}: the program ran untraced ({}): {}", t.origin, status,
                                  f.header.value("reason", "no reason recorded")));
    throw_bad_input(fmt::format("{}: no GPU events in the trace{}", t.origin,
                                f.truncation.empty() ? "" : " (the file was cut short: " + f.truncation + ")"));
  }
  std::stable_sort(t.events.begin(), t.events.end(),
                   [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  return t;
}

Trace load_trace(const std::filesystem::path& file) {
  Trace t = trace::looks_like_trace(file) ? from_gsqt(trace::read_trace(file)) : load_kineto(file);
  keep_steady_state(t);
  return t;
}

}  // namespace gsq::analyze
