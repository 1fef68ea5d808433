// Chrome/Perfetto JSON export of a trace (ui.perfetto.dev opens it): tracks per thread and stream, counters.
#include "trace/format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>
#include <set>
#include <unordered_map>

namespace gsq::trace {

namespace {
std::string json_quote(std::string_view s) {
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
std::string us(int64_t ns, int64_t base) {
  return fmt::format("{:.3f}", static_cast<double>(diff_ns(ns, base)) / 1e3);
}
}  // namespace

void write_chrome(const TraceFile& t, std::ostream& out) {
  const int64_t pid = t.header.value("pid", 0);
  int64_t base = std::numeric_limits<int64_t>::max();
  for (const Record& r : t.records) base = std::min(base, r.start_ns);
  for (const auto& c : t.counters)
    for (int64_t ts : c.t_ns) base = std::min(base, ts);
  if (base == std::numeric_limits<int64_t>::max()) base = 0;
  // GPU tracks live in their own "process" per device (as Kineto lays them out), CPU threads in the traced pid.
  auto gpu_pid = [](const Record& r) { return static_cast<int64_t>(r.device); };
  std::unordered_map<uint64_t, const Record*> gpu_by_corr;
  std::set<uint32_t> devices, threads;
  std::set<std::pair<uint32_t, uint32_t>> streams;
  for (const Record& r : t.records) {
    const auto k = static_cast<RecordKind>(r.kind);
    if (k == RecordKind::kernel || k == RecordKind::memcpy || k == RecordKind::memset) {
      gpu_by_corr.emplace(r.correlation, &r);
      devices.insert(r.device);
      streams.insert({r.device, r.stream});
    } else if (k == RecordKind::api || k == RecordKind::range) {
      threads.insert(r.tid);
    }
  }
  out << "{\"displayTimeUnit\":\"ns\",\"otherData\":"
      << nlohmann::json{{"schema", kSchema}, {"header", t.header}}.dump() << ",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const std::string& e) {
    if (!first) out << ",\n";
    first = false;
    out << e;
  };
  emit(fmt::format(R"j({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})j", pid,
                   json_quote(fmt::format(
                       "CPU (pid {}{})", pid,
                       t.header.value("rank", -1) >= 0 ? fmt::format(", rank {}", t.header.value("rank", -1)) : ""))));
  for (uint32_t tid : threads)
    emit(fmt::format(R"j({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"thread {}"}}}})j", pid, tid,
                     tid));
  for (uint32_t d : devices)
    emit(fmt::format(R"j({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":"GPU {}"}}}})j", d, d));
  for (const auto& [d, s] : streams)
    emit(
        fmt::format(R"j({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"stream {}"}}}})j", d, s, s));

  for (const Record& r : t.records) {
    const auto k = static_cast<RecordKind>(r.kind);
    const int64_t dur = std::max<int64_t>(0, diff_ns(r.end_ns, r.start_ns));
    const std::string ts = us(r.start_ns, base), d = fmt::format("{:.3f}", static_cast<double>(dur) / 1e3);
    switch (k) {
      case RecordKind::kernel:
        emit(fmt::format(
            R"j({{"ph":"X","cat":"kernel","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"correlation":{},"grid":[{},{},{}],"block":[{},{},{}],"registers per thread":{},"static shared memory":{},"dynamic shared memory":{},"device":{},"context":{},"stream":{},"graph id":{}}}}})j",
            json_quote(t.name(r)), gpu_pid(r), r.stream, ts, d, r.correlation, r.grid[0], r.grid[1], r.grid[2],
            r.block[0], r.block[1], r.block[2], r.registers, r.static_smem, r.dynamic_smem, r.device, r.context,
            r.stream, r.graph_id));
        break;
      case RecordKind::memcpy:
        emit(fmt::format(
            R"j({{"ph":"X","cat":"gpu_memcpy","name":"Memcpy {} ({} -> {})","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"correlation":{},"bytes":{},"async":{},"device":{},"stream":{}}}}})j",
            copy_kind_name(r.copy_kind), memory_kind_name(r.src_kind), memory_kind_name(r.dst_kind), gpu_pid(r),
            r.stream, ts, d, r.correlation, r.bytes, (r.flags & kAsync) ? "true" : "false", r.device, r.stream));
        break;
      case RecordKind::memset:
        emit(fmt::format(
            R"j({{"ph":"X","cat":"gpu_memset","name":"Memset ({})","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"correlation":{},"bytes":{}}}}})j",
            memory_kind_name(r.dst_kind), gpu_pid(r), r.stream, ts, d, r.correlation, r.bytes));
        break;
      case RecordKind::sync:
        emit(fmt::format(
            R"j({{"ph":"X","cat":"cuda_sync","name":"{}","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"correlation":{}}}}})j",
            sync_type_name(r.sync_type), gpu_pid(r), r.stream, ts, d, r.correlation));
        break;
      case RecordKind::api: {
        emit(fmt::format(
            R"j({{"ph":"X","cat":"{}","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"correlation":{}}}}})j",
            (r.flags & kDriverApi) ? "cuda_driver" : "cuda_runtime", json_quote(t.name(r)), pid, r.tid, ts, d,
            r.correlation));
        if (const auto g = gpu_by_corr.find(r.correlation); g != gpu_by_corr.end()) {
          emit(fmt::format(R"j({{"ph":"s","cat":"ac2g","name":"ac2g","id":{},"pid":{},"tid":{},"ts":{}}})j",
                           r.correlation, pid, r.tid, ts));
          emit(fmt::format(R"j({{"ph":"f","bp":"e","cat":"ac2g","name":"ac2g","id":{},"pid":{},"tid":{},"ts":{}}})j",
                           r.correlation, gpu_pid(*g->second), g->second->stream, us(g->second->start_ns, base)));
        }
        break;
      }
      case RecordKind::range:
        emit(fmt::format(R"j({{"ph":"X","cat":"user_annotation","name":{},"pid":{},"tid":{},"ts":{},"dur":{}}})j",
                         json_quote(t.name(r)), pid, r.tid, ts, d));
        break;
      case RecordKind::overhead:
        emit(fmt::format(R"j({{"ph":"X","cat":"overhead","name":{},"pid":{},"tid":{},"ts":{},"dur":{}}})j",
                         json_quote(t.name(r)), pid, r.tid, ts, d));
        break;
    }
  }
  // Hardware counters as counter tracks ("ph":"C") of the GPU's process: Perfetto draws one track per name.
  for (const auto& c : t.counters) {
    if (devices.insert(c.device).second)  // a GPU with counters but no records
      emit(fmt::format(R"j({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":"GPU {}"}}}})j", c.device,
                       c.device));
    const std::string name = json_quote(c.unit.empty() ? c.name : fmt::format("{} ({})", c.name, c.unit));
    for (size_t i = 0; i < c.t_ns.size(); ++i)
      emit(fmt::format(R"j({{"ph":"C","name":{},"pid":{},"ts":{},"args":{{"value":{}}}}})j", name, c.device,
                       us(c.t_ns[i], base), std::isfinite(c.values[i]) ? c.values[i] : 0.0));
  }
  out << "\n]}\n";
}

}  // namespace gsq::trace
