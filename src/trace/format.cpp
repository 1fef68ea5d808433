#include "trace/format.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <ostream>
#include <set>
#include <unordered_map>

namespace gsq::trace {

namespace {
uint32_t crc_of(std::string_view s) {
  return static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size())));
}
template <class T>
void append_pod(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
}  // namespace

std::string_view copy_kind_name(uint8_t k) {
  switch (k) {
    case 1:
      return "HtoD";
    case 2:
      return "DtoH";
    case 3:
      return "HtoA";
    case 4:
      return "AtoH";
    case 5:
      return "AtoA";
    case 6:
      return "AtoD";
    case 7:
      return "DtoA";
    case 8:
      return "DtoD";
    case 9:
      return "HtoH";
    case 10:
      return "PtoP";
    default:
      return "Unknown";
  }
}

std::string_view memory_kind_name(uint8_t k) {
  switch (k) {
    case 1:
      return "Pageable";
    case 2:
      return "Pinned";
    case 3:
      return "Device";
    case 4:
      return "Array";
    case 5:
      return "Managed";
    case 6:
      return "Device Static";
    case 7:
      return "Managed Static";
    default:
      return "Unknown";
  }
}

std::string_view sync_type_name(uint8_t k) {
  switch (k) {
    case 1:
      return "Event Sync";
    case 2:
      return "Stream Wait Event";
    case 3:
      return "Stream Sync";
    case 4:
      return "Context Sync";
    default:
      return "Unknown Sync";
  }
}

std::string_view record_kind_name(uint8_t k) {
  switch (static_cast<RecordKind>(k)) {
    case RecordKind::kernel:
      return "kernel";
    case RecordKind::memcpy:
      return "memcpy";
    case RecordKind::memset:
      return "memset";
    case RecordKind::sync:
      return "sync";
    case RecordKind::api:
      return "api";
    case RecordKind::range:
      return "range";
    case RecordKind::overhead:
      return "overhead";
  }
  return "unknown";
}

// ---- Writer ----

Writer::Writer(const std::filesystem::path& file, const nlohmann::json& header) {
  fd_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_bad_input(fmt::format("cannot write trace {}: {}", file.string(), std::strerror(errno)));
  std::string magic(kFileMagic, sizeof kFileMagic);
  if (::write(fd_, magic.data(), magic.size()) != static_cast<ssize_t>(magic.size())) failed_ = true;
  bytes_ = magic.size();
  chunk(ChunkType::header, header.dump());
}

Writer::~Writer() {
  if (fd_ >= 0) ::close(fd_);
}

uint32_t Writer::intern(std::string_view s) {
  if (s.empty()) return 0;
  const auto [it, added] = ids_.try_emplace(std::string(s), next_id_);
  if (added) {
    ++next_id_;
    append_pod(pending_strings_, it->second);
    append_pod(pending_strings_, static_cast<uint32_t>(s.size()));
    pending_strings_.append(s);
  }
  return it->second;
}

void Writer::write_records(std::span<const Record> records) {
  if (!pending_strings_.empty()) {
    chunk(ChunkType::strings, pending_strings_);
    pending_strings_.clear();
  }
  // Large batches go out in several chunks so no chunk exceeds the reader's limit.
  constexpr size_t per_chunk = kMaxChunkBytes / sizeof(Record) / 2;
  for (size_t i = 0; i < records.size(); i += per_chunk) {
    const size_t n = std::min(per_chunk, records.size() - i);
    chunk(ChunkType::records, std::string_view(reinterpret_cast<const char*>(records.data() + i), n * sizeof(Record)));
  }
}

void Writer::write_stats(const nlohmann::json& stats) {
  chunk(ChunkType::stats, stats.dump());
}

void Writer::write_end(const nlohmann::json& stats) {
  if (!pending_strings_.empty()) {
    chunk(ChunkType::strings, pending_strings_);
    pending_strings_.clear();
  }
  chunk(ChunkType::end, stats.dump());
}

namespace {

// Header + payload as one buffer, written with one loop of write(2): a chunk is either wholly in the file or
// detectably cut short. Returns the bytes written, or -1 on failure.
int64_t write_chunk(int fd, ChunkType type, std::string_view payload) {
  ChunkHeader h;
  h.type = static_cast<uint32_t>(type);
  h.size = static_cast<uint32_t>(payload.size());
  h.crc = crc_of(payload);
  std::string buf;
  buf.reserve(sizeof h + payload.size());
  append_pod(buf, h);
  buf.append(payload);
  size_t done = 0;
  while (done < buf.size()) {
    const ssize_t n = ::write(fd, buf.data() + done, buf.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    done += static_cast<size_t>(n);
  }
  return static_cast<int64_t>(buf.size());
}

}  // namespace

void Writer::chunk(ChunkType type, std::string_view payload) {
  if (failed_ || fd_ < 0) return;
  const int64_t n = write_chunk(fd_, type, payload);
  if (n < 0)
    failed_ = true;
  else
    bytes_ += static_cast<uint64_t>(n);
}

void append_counters(const std::filesystem::path& file, const nlohmann::json& payload) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) throw_bad_input(fmt::format("{}: cannot append counters: {}", file.string(), std::strerror(errno)));
  const int64_t n = write_chunk(fd, ChunkType::counters, payload.dump());
  ::close(fd);
  if (n < 0) throw_bad_input(fmt::format("{}: counters chunk not fully written", file.string()));
}

// ---- Reader ----

namespace {

// Counter tracks of one chunk; false when the chunk does not have the documented shape.
bool parse_counters(const nlohmann::json& j, const nlohmann::json& header, std::vector<CounterTrack>& out) {
  if (!j.is_object() || !j.contains("tracks") || !j["tracks"].is_array()) return false;
  int64_t shift = 0;  // monotonic -> CUPTI
  if (j.value("clock", "") == "monotonic") {
    const auto& st = header.contains("start") ? header["start"] : nlohmann::json::object();
    if (!st.is_object() || !st.contains("cupti_ns") || !st.contains("monotonic_ns")) return false;
    if (!st["cupti_ns"].is_number_integer() || !st["monotonic_ns"].is_number_integer()) return false;
    shift = diff_ns(st["cupti_ns"].get<int64_t>(), st["monotonic_ns"].get<int64_t>());
  }
  std::vector<CounterTrack> parsed;  // all of the chunk or nothing
  for (const auto& tr : j["tracks"]) {
    if (!tr.is_object() || !tr.contains("t_ns") || !tr.contains("values") || !tr["t_ns"].is_array() ||
        !tr["values"].is_array() || tr["t_ns"].size() != tr["values"].size() || !tr.contains("name") ||
        !tr["name"].is_string())
      return false;
    CounterTrack c;
    c.name = tr["name"].get<std::string>();
    c.unit = tr.contains("unit") && tr["unit"].is_string() ? tr["unit"].get<std::string>() : "";
    c.source = j.contains("source") && j["source"].is_string() ? j["source"].get<std::string>() : "";
    c.device = j.contains("device") && j["device"].is_number_unsigned() ? j["device"].get<uint32_t>() : 0;
    if (j.contains("device_info") && j["device_info"].is_object()) {
      const auto& d = j["device_info"];
      if (d.contains("name") && d["name"].is_string()) c.device_name = d["name"].get<std::string>();
      if (d.contains("dram_peak_bytes_per_s") && d["dram_peak_bytes_per_s"].is_number())
        c.dram_peak_bytes_per_s = d["dram_peak_bytes_per_s"].get<double>();
    }
    for (size_t i = 0; i < tr["t_ns"].size(); ++i) {
      if (tr["values"][i].is_null()) continue;  // a non-finite reading (JSON has no NaN): no sample
      if (!tr["t_ns"][i].is_number_integer() || !tr["values"][i].is_number()) return false;
      c.t_ns.push_back(
          static_cast<int64_t>(static_cast<uint64_t>(tr["t_ns"][i].get<int64_t>()) + static_cast<uint64_t>(shift)));
      c.values.push_back(tr["values"][i].get<double>());
    }
    parsed.push_back(std::move(c));
  }
  out.insert(out.end(), std::make_move_iterator(parsed.begin()), std::make_move_iterator(parsed.end()));
  return true;
}

}  // namespace

const std::string& TraceFile::name(const Record& r) const {
  static const std::string unknown = "(unnamed)";
  return r.name < strings.size() ? strings[r.name] : unknown;
}

bool looks_like_trace(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  char magic[8] = {};
  in.read(magic, sizeof magic);
  return in.gcount() == sizeof magic && std::memcmp(magic, kFileMagic, sizeof magic) == 0;
}

TraceFile parse_trace(std::string_view bytes, const std::filesystem::path& origin) {
  const std::string where = origin.string();
  if (bytes.size() < sizeof kFileMagic || std::memcmp(bytes.data(), kFileMagic, 8) != 0)
    throw_bad_input(fmt::format("{}: not a gpusqueeze trace (no GSQTRACE magic)", where));
  if (std::memcmp(bytes.data(), kFileMagic, sizeof kFileMagic) != 0)
    throw_bad_input(fmt::format("{}: trace format version {} is not supported by this gpusqueeze (reads version 1)",
                                where, static_cast<int>(static_cast<unsigned char>(bytes[11]))));
  TraceFile t;
  t.path = origin;
  t.stats = nlohmann::json::object();
  size_t pos = sizeof kFileMagic;
  auto stop = [&](const std::string& why) {
    t.truncation = fmt::format("chunk {} at byte {}: {}", t.chunks, pos, why);
  };
  while (pos < bytes.size()) {
    if (bytes.size() - pos < sizeof(ChunkHeader)) {
      stop("cut short inside the chunk header");
      break;
    }
    ChunkHeader h;
    std::memcpy(&h, bytes.data() + pos, sizeof h);
    if (h.magic != kChunkMagic) {
      stop("no chunk magic (damaged file)");
      break;
    }
    if (h.size > kMaxChunkBytes) {
      stop(fmt::format("chunk size {} exceeds the {} limit (damaged file)", h.size, kMaxChunkBytes));
      break;
    }
    if (bytes.size() - pos - sizeof h < h.size) {
      stop(fmt::format("cut short: {} of {} payload bytes present", bytes.size() - pos - sizeof h, h.size));
      break;
    }
    const std::string_view payload = bytes.substr(pos + sizeof h, h.size);
    if (crc_of(payload) != h.crc) {
      stop("checksum mismatch (damaged file)");
      break;
    }
    const auto type = static_cast<ChunkType>(h.type);
    if (t.chunks == 0 && type != ChunkType::header) throw_bad_input(where + ": the first chunk is not the header");
    bool bad = false;
    switch (type) {
      case ChunkType::header:
      case ChunkType::stats:
      case ChunkType::end: {
        auto j = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded() || !j.is_object()) {
          bad = true;
          break;
        }
        if (type == ChunkType::header) {
          if (j.value("schema", "") != kSchema)
            throw_bad_input(
                fmt::format("{}: header schema is \"{}\", expected \"{}\"", where, j.value("schema", ""), kSchema));
          t.header = std::move(j);
        } else {
          t.stats = std::move(j);
          t.complete = t.complete || type == ChunkType::end;
        }
        break;
      }
      case ChunkType::strings: {
        size_t p = 0;
        while (p < payload.size()) {
          uint32_t id = 0, len = 0;
          if (payload.size() - p < 8) {
            bad = true;
            break;
          }
          std::memcpy(&id, payload.data() + p, 4);
          std::memcpy(&len, payload.data() + p + 4, 4);
          p += 8;
          if (payload.size() - p < len || id != t.strings.size()) {
            bad = true;
            break;
          }
          t.strings.emplace_back(payload.substr(p, len));
          p += len;
        }
        break;
      }
      case ChunkType::records: {
        if (payload.size() % sizeof(Record) != 0) {
          bad = true;
          break;
        }
        const size_t n = payload.size() / sizeof(Record);
        const size_t old = t.records.size();
        t.records.resize(old + n);
        std::memcpy(static_cast<void*>(t.records.data() + old), payload.data(), payload.size());
        break;
      }
      case ChunkType::counters: {
        const auto j = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
        bad = j.is_discarded() || !parse_counters(j, t.header, t.counters);
        break;
      }
      default:
        break;  // a chunk type from a later minor version: skipped
    }
    if (bad) {
      if (t.chunks == 0) throw_bad_input(where + ": the header chunk is not valid JSON");
      stop(fmt::format("malformed {} chunk", h.type));
      break;
    }
    pos += sizeof h + h.size;
    ++t.chunks;
  }
  if (t.header.is_null()) throw_bad_input(where + ": no intact header chunk (the file was cut short at the start)");
  return t;
}

TraceFile read_trace(const std::filesystem::path& file) {
  return parse_trace(read_text_file(file), file);
}

// ---- Summary ----

Summary summarize(const TraceFile& t) {
  Summary s;
  int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
  for (const Record& r : t.records) {
    first = std::min(first, r.start_ns);
    last = std::max(last, r.end_ns);
    switch (static_cast<RecordKind>(r.kind)) {
      case RecordKind::kernel:
        ++s.kernels;
        s.gpu_busy_ns += diff_ns(r.end_ns, r.start_ns);
        if (r.flags & kFromGraph) ++s.graph_kernels;
        break;
      case RecordKind::memcpy:
        ++s.memcpys;
        s.copy_bytes += r.bytes;
        s.gpu_busy_ns += diff_ns(r.end_ns, r.start_ns);
        if (r.src_kind == 1 || r.dst_kind == 1) ++s.pageable_copies;
        if (r.src_kind == 2 || r.dst_kind == 2) ++s.pinned_copies;
        break;
      case RecordKind::memset:
        ++s.memsets;
        break;
      case RecordKind::sync:
        ++s.syncs;
        break;
      case RecordKind::api:
        ++s.api_calls;
        break;
      case RecordKind::range:
        ++s.ranges;
        break;
      case RecordKind::overhead:
        break;
    }
  }
  if (!t.records.empty()) s.span_ns = diff_ns(last, first);
  return s;
}

nlohmann::json summary_json(const TraceFile& t) {
  const Summary s = summarize(t);
  return {{"schema", "gpusqueeze.trace-info/1"},
          {"file", t.path.string()},
          {"header", t.header},
          {"stats", t.stats},
          {"complete", t.complete},
          {"truncation", t.truncation.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.truncation)},
          {"counts",
           {{"kernels", s.kernels},
            {"graph_kernels", s.graph_kernels},
            {"memcpys", s.memcpys},
            {"pageable_copies", s.pageable_copies},
            {"pinned_copies", s.pinned_copies},
            {"memsets", s.memsets},
            {"syncs", s.syncs},
            {"api_calls", s.api_calls},
            {"ranges", s.ranges}}},
          {"copy_bytes", s.copy_bytes},
          {"span_ns", s.span_ns},
          {"counter_tracks", [&] {
             nlohmann::json a = nlohmann::json::array();
             for (const auto& c : t.counters)
               a.push_back({{"name", c.name},
                            {"unit", c.unit},
                            {"source", c.source},
                            {"device", c.device},
                            {"samples", c.values.size()}});
             return a;
           }()}};
}

// ---- Chrome export ----

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
