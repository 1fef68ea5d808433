// Kineto JSON import with simdjson's on-demand parser: one pass, no DOM, so memory stays near the file's size.
#include "analyze/kineto.hpp"
#include "analyze/trace_facts.hpp"

#include "core/error.hpp"
#include "core/gzip.hpp"
#include "core/json_io.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>

namespace gsq::analyze {

namespace {

namespace od = simdjson::ondemand;

Kind kind_of(std::string_view cat, bool& keep) {
  keep = true;
  // Current Kineto categories, then the capitalised ones PyTorch 1.8/1.9 wrote.
  if (cat == "kernel" || cat == "Kernel") return Kind::kernel;
  if (cat == "gpu_memcpy" || cat == "Memcpy") return Kind::memcpy;
  if (cat == "gpu_memset" || cat == "Memset") return Kind::memset;
  if (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime") return Kind::runtime;
  if (cat == "cuda_sync") return Kind::sync;
  if (cat == "cpu_op" || cat == "Operator") return Kind::cpu_op;
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
  int64_t wait_on_stream = -1, record_correlation = -1;  // a Stream Wait Event's
  for (auto field : obj) {
    std::string_view key = field.unescaped_key();
    od::value v = field.value();
    if (key == "ph")
      ph = v.get_string();
    else if (key == "cat")
      cat = v.get_string();
    else if (key == "name") {
      // The view dies with the next field; copy it.
      scratch[0] = std::string(std::string_view(v.get_string()));
      name = scratch[0];
    } else if (key == "ts")
      ts = v.get_double();
    else if (key == "dur")
      dur = v.get_double();
    else if (key == "pid")
      e.pid = int_of(v);
    else if (key == "tid")
      e.tid = int_of(v);
    else if (key == "args") {
      od::object args;
      if (v.get_object().get(args) != simdjson::SUCCESS) continue;
      for (auto a : args) {
        std::string_view k = a.unescaped_key();
        if (k == "device")
          e.device = int_of(a.value());
        else if (k == "stream")
          e.stream = int_of(a.value());
        else if (k == "correlation")
          e.correlation = int64_of(a.value());
        else if (k == "bytes")
          e.bytes = static_cast<uint64_t>(std::max<int64_t>(0, int64_of(a.value())));
        else if (k == "wait_on_stream")
          wait_on_stream = int64_of(a.value());
        else if (k == "wait_on_cuda_event_record_corr_id")
          record_correlation = int64_of(a.value());
      }
    }
  }
  if (ph != "X") {
    ++t.skipped_events;
    return;
  }
  bool keep = false;
  e.kind = kind_of(cat, keep);
  // PyTorch 1.8-1.10 wrote the step markers as CPU ops ("Operator"): a step, not one op lasting the whole step.
  if (e.kind == Kind::cpu_op && detail::is_step_marker(name)) e.kind = Kind::annotation;
  if (!keep || std::isnan(ts)) {
    ++t.skipped_events;
    return;
  }
  e.start_ns = std::llround(ts * 1000.0);
  e.dur_ns = std::max<int64_t>(0, std::llround(dur * 1000.0));
  e.name = t.names.intern(name);
  if (e.kind == Kind::memcpy) classify_copy(name, e);
  const bool waits = std::min({wait_on_stream, record_correlation, int64_t{e.stream}, e.correlation}) >= 0;
  if (name == "Stream Wait Event" && waits)
    t.stream_waits.push_back(
        {e.device, e.stream, static_cast<int32_t>(wait_on_stream), e.correlation, record_correlation});
  t.events.push_back(e);
}

// Where the "traceEvents" array lies, found by a scanner that knows strings, escapes and nesting only. Parsing the
// events in batches keeps the parser's buffers small: a trace is held about once in memory.
struct ArraySpan {
  size_t open = std::string_view::npos, close = std::string_view::npos;  // positions of '[' and ']'
  bool array_format = false;  // the events are the top level (Chrome's JSON Array Format), no header around them
  bool truncated = false;
};

// Both scanners' view of JSON strings: inside one, nothing else (brackets, commas) counts.
class StringTracker {
 public:
  [[nodiscard]] bool inside() const noexcept { return in_string_; }
  // Consumes `c` while inside a string; returns true when `c` was the closing quote.
  bool step_inside(char c) noexcept {
    if (escape_)
      escape_ = false;
    else if (c == '\\')
      escape_ = true;
    else if (c == '"')
      in_string_ = false;
    return !in_string_;
  }
  void open() noexcept { in_string_ = true; }

 private:
  bool in_string_ = false, escape_ = false;
};

ArraySpan find_trace_events(std::string_view text) {
  ArraySpan span;
  int depth = 0;
  StringTracker str;
  bool key_is_events = false;
  size_t string_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (str.inside()) {
      if (str.step_inside(c) && depth == 1)
        key_is_events = text.substr(string_start, i - string_start) == "traceEvents";
      continue;
    }
    switch (c) {
      case '"':
        str.open();
        string_start = i + 1;
        break;
      case '{':
      case '[':
        // The events: the "traceEvents" member of the top object, or the top level itself in Chrome's JSON Array
        // Format (which some PyTorch 1.8 traces use).
        if (c == '[' && span.open == std::string_view::npos && ((depth == 1 && key_is_events) || depth == 0)) {
          span.open = i;
          span.array_format = depth == 0;
        }
        ++depth;
        break;
      case '}':
      case ']':
        --depth;
        if (c == ']' && span.open != std::string_view::npos && span.close == std::string_view::npos &&
            depth == (span.array_format ? 0 : 1))
          span.close = i;
        break;
      case ',':
        if (depth == 1) key_is_events = false;
        break;
      default:
        break;
    }
  }
  span.truncated = str.inside() || depth != 0;
  return span;
}

[[noreturn]] void throw_json(const simdjson::simdjson_error& e, const std::string& origin) {
  const bool type = e.error() == simdjson::INCORRECT_TYPE || e.error() == simdjson::NUMBER_ERROR;
  throw_bad_input(
      fmt::format("{}: {}: {}", origin,
                  type ? "not a valid Kineto trace (a field has the wrong type)" : "truncated or corrupt JSON",
                  simdjson::error_message(e.error())));
}

// The document without its events: baseTimeNanoseconds, deviceProperties, distributedInfo.
void parse_header(std::string_view text, const ArraySpan& span, Trace& t, const std::string& origin) {
  std::string rest;
  rest.reserve(text.size() - (span.close - span.open) + 2 + kJsonPadding);
  rest.append(text.substr(0, span.open)).append("[]").append(text.substr(span.close + 1));
  od::parser parser;
  try {
    od::document doc = parser.iterate(simdjson::padded_string_view(rest.data(), rest.size(), rest.capacity()));
    od::object root;
    if (const auto err = doc.get_object().get(root); err == simdjson::INCORRECT_TYPE) {
      throw_bad_input(origin + ": not a Kineto/Chrome trace: the top level is not a JSON object with \"traceEvents\"");
    } else if (err != simdjson::SUCCESS) {
      throw simdjson::simdjson_error(err);
    }
    for (auto field : root) {
      std::string_view key = field.unescaped_key();
      if (key == "baseTimeNanoseconds") {
        t.base_ns = int64_of(field.value());
      } else if (key == "deviceProperties") {  // [{"name": "NVIDIA H200", ...}, ...]: the first GPU's name
        od::array devices;
        if (field.value().get_array().get(devices) == simdjson::SUCCESS)
          for (auto d : devices) {
            od::object props;
            std::string_view name;
            if (d.get_object().get(props) == simdjson::SUCCESS &&
                props["name"].get_string().get(name) == simdjson::SUCCESS) {
              t.gpu_name = std::string(name);
              break;
            }
          }
      } else if (key == "distributedInfo") {
        od::object di;
        if (field.value().get_object().get(di) == simdjson::SUCCESS)
          for (auto d : di)
            if (d.unescaped_key().value() == "rank") t.rank = int_of(d.value());
      }
    }
  } catch (const simdjson::simdjson_error& e) {
    throw_json(e, origin);
  }
}

// Parses the array's elements in batches of about kBatchBytes, each batch as its own small JSON array.
void parse_events(std::string_view text, const ArraySpan& span, Trace& t, const std::string& origin) {
  constexpr size_t kBatchBytes = 4 << 20;
  od::parser parser;
  std::vector<std::string> scratch(1);
  std::string batch;
  batch.reserve(kBatchBytes + (1 << 20) + kJsonPadding);
  auto flush = [&] {
    if (batch.size() <= 1) return;
    batch += ']';
    if (batch.capacity() < batch.size() + kJsonPadding) batch.reserve(batch.size() + kJsonPadding);
    try {
      od::document doc = parser.iterate(simdjson::padded_string_view(batch.data(), batch.size(), batch.capacity()));
      for (auto ev : doc.get_array()) {
        od::object obj;
        if (ev.get_object().get(obj) != simdjson::SUCCESS) {
          ++t.skipped_events;
          continue;
        }
        parse_event(obj, t, scratch);
      }
    } catch (const simdjson::simdjson_error& e) {
      throw_json(e, origin);
    }
    batch.clear();
    batch.push_back('[');
  };
  batch.push_back('[');
  auto emit = [&](size_t from, size_t to) {  // [from, to)
    if (batch.size() > 1) batch += ',';
    batch.append(text.substr(from, to - from));
    if (batch.size() >= kBatchBytes) flush();
  };
  // Element boundaries inside the array: an object or array ends where its bracket closes, a scalar at the next comma.
  int depth = 0;
  StringTracker str;
  size_t elem_start = std::string_view::npos;
  for (size_t i = span.open + 1; i < span.close; ++i) {
    const char c = text[i];
    if (str.inside()) {
      str.step_inside(c);
      continue;
    }
    if (elem_start == std::string_view::npos) {
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == ',') continue;
      elem_start = i;
    }
    if (c == '"') {
      str.open();
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) {
        emit(elem_start, i + 1);
        elem_start = std::string_view::npos;
      }
    } else if (c == ',' && depth == 0) {
      emit(elem_start, i);
      elem_start = std::string_view::npos;
    }
  }
  if (elem_start != std::string_view::npos) emit(elem_start, span.close);
  flush();
}

Trace parse_padded(const char* data, size_t size, const std::string& origin) {
  Trace t;
  t.origin = origin;
  t.source = "kineto";
  const std::string_view text(data, size);
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw_bad_input(origin + ": empty file, expected a Kineto trace");
  const auto first = text[text.find_first_not_of(" \t\r\n")];
  if (first != '{' && first != '[')
    throw_bad_input(origin +
                    ": not a Kineto/Chrome trace: the top level is neither a JSON object with \"traceEvents\" "
                    "nor an array of events");
  const ArraySpan span = find_trace_events(text);
  if (span.truncated || (span.open != std::string_view::npos && span.close == std::string_view::npos)) {
    throw_bad_input(fmt::format("{}: truncated or corrupt JSON: the text ends inside {} ({} bytes read)", origin,
                                span.open == std::string_view::npos ? "the document" : "the traceEvents array", size));
  }
  if (span.open == std::string_view::npos)
    throw_bad_input(origin + ": no \"traceEvents\" array: not a Kineto/Chrome trace");
  if (!span.array_format) parse_header(text, span, t, origin);
  parse_events(text, span, t, origin);
  // PyTorch < 1.8's autograd profiler (torch.autograd.profiler.profile(use_cuda=…).export_chrome_trace): events
  // without categories under the processes "CPU functions" and "CUDA functions", the latter each op's GPU time from a
  // pair of CUDA events, not its kernels.
  if (t.events.empty() && span.array_format && text.find("\"CPU functions\"") != std::string_view::npos)
    throw_bad_input(origin +
                    ": a legacy autograd-profiler trace (PyTorch before 1.8: \"CPU functions\" / \"CUDA "
                    "functions\"): it times each op, not the kernels and CUDA calls the analysis needs; record again "
                    "with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) and "
                    "export_chrome_trace, or with `gpusqueeze trace -- CMD`");
  if (t.events.empty() && span.array_format)
    throw_bad_input(origin +
                    ": not a Kineto/Chrome trace: the top-level array holds no trace events (objects with "
                    "ph, cat, ts)");
  if (t.events.empty() && text.find("\"python_function\"") != std::string_view::npos)
    throw_bad_input(origin +
                    ": the trace holds only Python function events (with_stack) and no CPU op, CUDA call or "
                    "kernel: the profiled process ran no PyTorch op and launched nothing on the GPU (a server's "
                    "front-end, a data process); profile the process that runs the model (vLLM: its worker)");
  if (t.events.empty()) throw_bad_input(origin + ": the trace holds no CPU or GPU events");
  std::stable_sort(t.events.begin(), t.events.end(),
                   [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  const auto gpu = std::count_if(t.events.begin(), t.events.end(), [](const Event& e) { return e.on_gpu(); });
  if (gpu == 0) {
    const auto calls =
        std::count_if(t.events.begin(), t.events.end(), [](const Event& e) { return e.kind == Kind::runtime; });
    // No CUDA call at all: the ops ran on the CPU (a model never moved to the GPU, or a CPU-only recording).
    if (calls == 0)
      throw_bad_input(origin +
                      ": no GPU events and no CUDA call: the program's ops ran on the CPU (the model and its inputs "
                      "never went to the GPU, or the recording had ProfilerActivity.CPU only); move them with "
                      ".to(\"cuda\") and record with ProfilerActivity.CUDA");
    throw_bad_input(
        fmt::format("{}: no GPU events (kernels, copies, memsets) although {} CUDA calls were recorded: "
                    "record with ProfilerActivity.CUDA, or the CUDA activity was lost (another profiler "
                    "attached?)",
                    origin, calls));
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
      throw_bad_input(
          fmt::format("{}: mixed clocks: {} GPU events lie up to {:.1f} s outside the CPU events' time range; the "
                      "trace merges timelines from different clocks",
                      origin, outside, static_cast<double>(worst) / 1e9));
    }
  }
  return t;
}

}  // namespace

std::string read_maybe_gzip(const std::filesystem::path& file) {
  std::string raw = read_text_file(file);
  if (is_gzip(raw)) raw = inflate_gzip(raw, file.string());
  raw.reserve(raw.size() + kJsonPadding);
  return raw;
}

Trace parse_kineto(std::string_view text, const std::string& origin) {
  std::string copy;
  copy.reserve(text.size() + kJsonPadding);
  copy.assign(text);
  return parse_padded(copy.data(), copy.size(), origin);
}

Trace load_kineto(const std::filesystem::path& file) {
  // Events are parsed in batches out of this one copy of the text.
  const std::string text = read_maybe_gzip(file);
  return parse_padded(text.data(), text.size(), file.string());
}

}  // namespace gsq::analyze
