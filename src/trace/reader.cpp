// The trace file's reader: chunks up to the first cut or damaged one, the string table, records and counter tracks.
#include "trace/chunk.hpp"
#include "trace/format.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

namespace gsq::trace {

using detail::crc_of;

namespace {

// Counter tracks of one chunk; false when the chunk does not have the documented shape.
bool parse_counters(const nlohmann::json& j, const nlohmann::json& header, std::vector<CounterTrack>& out,
                    std::vector<nlohmann::json>& devices) {
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
      c.device_info = d;
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
  if (j.contains("device_info") && j["device_info"].is_object() && devices.size() < 64)
    devices.push_back(j["device_info"]);
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
        bad = j.is_discarded() || !parse_counters(j, t.header, t.counters, t.devices);
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

}  // namespace gsq::trace
