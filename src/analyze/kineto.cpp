// Kineto JSON import with simdjson's on-demand parser: one pass, no DOM, so memory stays near the file's size.
#include "analyze/kineto.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"

#include <fmt/format.h>
#include <simdjson.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>

namespace gsq::analyze {

namespace {

namespace od = simdjson::ondemand;

std::string inflate_gzip(const std::string& in, const std::string& origin) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw_bad_input(origin + ": cannot initialise gzip decoding");
  std::string out;
  out.resize(std::max<size_t>(in.size() * 8, 1 << 20));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (zs.total_out >= out.size()) out.resize(out.size() * 2);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + zs.total_out);
    zs.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - zs.total_out, 1u << 30));
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
      inflateEnd(&zs);
      throw_bad_input(fmt::format("{}: truncated gzip stream after {} bytes of output", origin, zs.total_out));
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string msg = zs.msg ? zs.msg : "corrupt data";
      inflateEnd(&zs);
      throw_bad_input(fmt::format("{}: corrupt gzip stream: {}", origin, msg));
    }
  }
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

Kind kind_of(std::string_view cat, bool& keep) {
  keep = true;
  if (cat == "kernel") return Kind::kernel;
  if (cat == "gpu_memcpy") return Kind::memcpy;
  if (cat == "gpu_memset") return Kind::memset;
  if (cat == "cuda_runtime" || cat == "cuda_driver") return Kind::runtime;
  if (cat == "cuda_sync") return Kind::sync;
  if (cat == "cpu_op") return Kind::cpu_op;
  if (cat == "user_annotation") return Kind::annotation;
  keep = false;  // python_function, gpu_user_annotation, ac2g flows, Trace metadata, ...
  return Kind::cpu_op;
}

// pid/tid are numbers in Kineto, but some writers use strings ("Spans", "stream 7").
int32_t int_of(od::value v) {
  int64_t i = 0;
  if (v.get_int64().get(i) == simdjson::SUCCESS) return static_cast<int32_t>(i);
  double d = 0;
  if (v.get_double().get(d) == simdjson::SUCCESS) return static_cast<int32_t>(d);
  std::string_view s;
  if (v.get_string().get(s) == simdjson::SUCCESS) {
    int32_t n = 0;
    for (char c : s)
      if (c >= '0' && c <= '9') n = n * 10 + (c - '0');
    return n;
  }
  return 0;
}

int64_t int64_of(od::value v) {
  int64_t i = 0;
  if (v.get_int64().get(i) == simdjson::SUCCESS) return i;
  double d = 0;
  if (v.get_double().get(d) == simdjson::SUCCESS) return static_cast<int64_t>(d);
  return -1;
}

void parse_event(od::object obj, Trace& t, std::vector<std::string>& scratch) {
  std::string_view ph, cat, name;
  double ts = NAN, dur = 0;
  Event e;
  bool have_args = false;
  for (auto field : obj) {
    std::string_view key = field.unescaped_key();
    od::value v = field.value();
    if (key == "ph") ph = v.get_string();
    else if (key == "cat") cat = v.get_string();
    else if (key == "name") {
      // The view dies with the next field; copy it.
      scratch[0] = std::string(std::string_view(v.get_string()));
      name = scratch[0];
    } else if (key == "ts") ts = v.get_double();
    else if (key == "dur") dur = v.get_double();
    else if (key == "pid") e.pid = int_of(v);
    else if (key == "tid") e.tid = int_of(v);
    else if (key == "args") {
      od::object args;
      if (v.get_object().get(args) != simdjson::SUCCESS) continue;
      have_args = true;
      for (auto a : args) {
        std::string_view k = a.unescaped_key();
        if (k == "device") e.device = int_of(a.value());
        else if (k == "stream") e.stream = int_of(a.value());
        else if (k == "correlation") e.correlation = int64_of(a.value());
        else if (k == "bytes") e.bytes = static_cast<uint64_t>(std::max<int64_t>(0, int64_of(a.value())));
      }
    }
  }
  (void)have_args;
  if (ph != "X") {
    ++t.skipped_events;
    return;
  }
  bool keep = false;
  e.kind = kind_of(cat, keep);
  if (!keep || std::isnan(ts)) {
    ++t.skipped_events;
    return;
  }
  e.start_ns = std::llround(ts * 1000.0);
  e.dur_ns = std::max<int64_t>(0, std::llround(dur * 1000.0));
  e.name = t.names.intern(name);
  if (e.kind == Kind::memcpy) classify_copy(name, e);
  t.events.push_back(e);
}

}  // namespace

std::string read_maybe_gzip(const std::filesystem::path& file) {
  std::string raw = read_text_file(file);
  if (raw.size() >= 2 && static_cast<unsigned char>(raw[0]) == 0x1f && static_cast<unsigned char>(raw[1]) == 0x8b) {
    return inflate_gzip(raw, file.string());
  }
  return raw;
}

Trace parse_kineto(std::string_view text, const std::string& origin) {
  Trace t;
  t.origin = origin;
  t.source = "kineto";
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) throw_bad_input(origin + ": empty file, expected a Kineto trace");
  simdjson::padded_string padded(text);
  od::parser parser;
  std::vector<std::string> scratch(1);
  bool saw_events = false;
  try {
    od::document doc = parser.iterate(padded);
    od::object root;
    if (const auto err = doc.get_object().get(root); err == simdjson::INCORRECT_TYPE) {
      throw_bad_input(origin + ": not a Kineto/Chrome trace: the top level is not a JSON object with \"traceEvents\"");
    } else if (err != simdjson::SUCCESS) {
      throw simdjson::simdjson_error(err);
    }
    for (auto field : root) {
      std::string_view key = field.unescaped_key();
      if (key == "traceEvents") {
        saw_events = true;
        od::array arr;
        if (field.value().get_array().get(arr) != simdjson::SUCCESS) throw_bad_input(origin + ": \"traceEvents\" is not an array");
        for (auto ev : arr) {
          od::object obj;
          if (ev.get_object().get(obj) != simdjson::SUCCESS) {
            ++t.skipped_events;
            continue;
          }
          parse_event(obj, t, scratch);
        }
      } else if (key == "baseTimeNanoseconds") {
        t.base_ns = int64_of(field.value());
      } else if (key == "distributedInfo") {
        od::object di;
        if (field.value().get_object().get(di) == simdjson::SUCCESS)
          for (auto d : di)
            if (d.unescaped_key().value() == "rank") t.rank = int_of(d.value());
      }
    }
  } catch (const simdjson::simdjson_error& e) {
    const bool type = e.error() == simdjson::INCORRECT_TYPE || e.error() == simdjson::NUMBER_ERROR;
    throw_bad_input(fmt::format("{}: {}: {}", origin, type ? "not a valid Kineto trace (a field has the wrong type)"
                                                           : "truncated or corrupt JSON",
                                simdjson::error_message(e.error())));
  }
  if (!saw_events) throw_bad_input(origin + ": no \"traceEvents\" array: not a Kineto/Chrome trace");
  if (t.events.empty()) throw_bad_input(origin + ": the trace holds no CPU or GPU events");
  std::stable_sort(t.events.begin(), t.events.end(), [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  const auto gpu = std::count_if(t.events.begin(), t.events.end(), [](const Event& e) { return e.on_gpu(); });
  if (gpu == 0) {
    throw_bad_input(origin + ": no GPU events (kernels, copies, memsets): record with ProfilerActivity.CUDA, "
                             "or the CUDA activity was lost (another profiler attached?)");
  }
  // CPU and GPU timestamps must share a clock: GPU events far outside the CPU window mean they do not.
  int64_t cpu_lo = INT64_MAX, cpu_hi = INT64_MIN;
  for (const auto& e : t.events) {
    if (e.on_gpu()) continue;
    cpu_lo = std::min(cpu_lo, e.start_ns);
    cpu_hi = std::max(cpu_hi, e.end_ns());
  }
  constexpr int64_t kClockSkewLimitNs = 60LL * 1'000'000'000;  // a minute of slack beyond the CPU window
  if (cpu_lo != INT64_MAX) {
    size_t outside = 0;
    int64_t worst = 0;
    for (const auto& e : t.events) {
      if (!e.on_gpu()) continue;
      const int64_t off = e.start_ns > cpu_hi ? e.start_ns - cpu_hi : e.end_ns() < cpu_lo ? cpu_lo - e.end_ns() : 0;
      if (off > kClockSkewLimitNs) {
        ++outside;
        worst = std::max(worst, off);
      }
    }
    if (outside > 0) {
      throw_bad_input(fmt::format("{}: mixed clocks: {} GPU events lie up to {:.1f} s outside the CPU events' time range; the "
                                  "trace merges timelines from different clocks", origin, outside, static_cast<double>(worst) / 1e9));
    }
  }
  return t;
}

Trace load_kineto(const std::filesystem::path& file) { return parse_kineto(read_maybe_gzip(file), file.string()); }

}  // namespace gsq::analyze
