// trtexec logs and its JSON exports → TrtRun / layer records (see trtexec.hpp).
#include "core/error.hpp"
#include "triage/trtexec.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <regex>
#include <sstream>

namespace gsq::triage {

namespace {

// "[07/07/2026-02:10:45] [I] text" → level 'I' and "text"; a line without the prefix keeps level 0.
std::string_view strip_prefix(std::string_view line, char& level) {
  level = 0;
  if (line.starts_with("[") && line.find("] [") != std::string_view::npos) {
    const size_t at = line.find("] [");
    if (at + 4 < line.size() && line[at + 4] == ']') {
      level = line[at + 3];
      line.remove_prefix(std::min(line.size(), at + 6));
    }
  }
  return line;
}

std::optional<double> number_after(std::string_view text, std::string_view key) {
  const size_t at = text.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string rest(text.substr(at + key.size()));
  char* end = nullptr;
  const double v = std::strtod(rest.c_str(), &end);
  if (end == rest.c_str()) return std::nullopt;
  return v;
}

std::vector<int64_t> dims_of(std::string_view s) {
  std::vector<int64_t> d;
  std::string cur;
  for (char c : s) {
    if (c == 'x') {
      if (!cur.empty()) d.push_back(std::atoll(cur.c_str()));
      cur.clear();
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      cur += c;
    }
  }
  if (!cur.empty()) d.push_back(std::atoll(cur.c_str()));
  return d;
}

// One log line into the run: true when it was one of the lines the audit reads.
bool read_line(std::string_view text, char level, TrtRun& r, std::string& section) {
  if (text.starts_with("=== ") && text.ends_with(" ===")) {
    section = std::string(text.substr(4, text.size() - 8));
    return true;
  }
  if (text.starts_with("TensorRT version: ")) {
    r.trt_version = std::string(text.substr(18));
    return true;
  }
  if (text.starts_with("Selected Device: ")) {
    r.device = std::string(text.substr(17));
    return true;
  }
  if (text.starts_with("Precision: ")) {
    r.precision = std::string(text.substr(11));
    return true;
  }
  if (text.starts_with("Memory Pools: ")) {
    const size_t at = text.find("workspace: ");
    if (at != std::string_view::npos && !text.substr(at + 11).starts_with("default"))
      r.workspace_mib = number_after(text, "workspace: ");
    return true;
  }
  static const std::regex profile(R"(Input build shape \(profile (\d+)\): (.+)=([0-9x]+)\+([0-9x]+)\+([0-9x]+))");
  std::cmatch m;
  if (std::regex_search(text.data(), text.data() + text.size(), m, profile)) {
    r.profiles.push_back(
        {std::atoi(m[1].str().c_str()), m[2].str(), {dims_of(m[3].str()), dims_of(m[4].str()), dims_of(m[5].str())}});
    return true;
  }
  static const std::regex autoshape(
      R"(Dynamic dimensions required for input: (.+), but no shapes were provided\. Automatically overriding shape to: ([0-9x]+))");
  if (std::regex_search(text.data(), text.data() + text.size(), m, autoshape)) {
    r.auto_shapes.emplace_back(m[1].str(), m[2].str());
    return true;
  }
  if (const size_t at = text.find("Exceeded mem budget of "); at != std::string_view::npos) {
    if (const auto need = number_after(text, "Need ")) {
      r.workspace_needed_bytes = std::max(r.workspace_needed_bytes, static_cast<uint64_t>(*need));
      ++r.workspace_shortfalls;
    }
    return true;
  }
  if (text.starts_with("Throughput: ")) {
    r.throughput_qps = number_after(text, "Throughput: ");
    return true;
  }
  if (text.starts_with("GPU Compute Time: ")) {
    r.gpu_compute_median_ms = number_after(text, "median = ");
    return true;
  }
  if (text.starts_with("Enqueue Time: ")) {
    r.enqueue_median_ms = number_after(text, "median = ");
    return true;
  }
  if (text.find("Throughput may be bound by Enqueue Time") != std::string_view::npos) {
    r.enqueue_bound = true;
    return true;
  }
  if (text.find("coefficient of variance = ") != std::string_view::npos) {
    r.compute_cov_percent = number_after(text, "coefficient of variance = ");
    return true;
  }
  // "key: value" (or "key:" with no value) inside the === ... Options === and === Device Information === blocks.
  if (level == 'I' && !text.starts_with("[TRT]") &&
      (section.ends_with("Options") || section.ends_with("Information"))) {
    // "Key: value", "Key:value" and "Key:" alike (trtexec prints all three).
    if (const size_t c = text.find(':'); c != std::string_view::npos && c > 0 && c < 48) {
      std::string_view value = text.substr(c + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      r.options[std::string(text.substr(0, c))] = std::string(value);
      return true;
    }
  }
  return false;
}

}  // namespace

bool TrtRun::has_flag(const std::string& flag) const {
  std::istringstream in(command);
  for (std::string w; in >> w;)
    if (w == flag || w.starts_with(flag + "=")) return true;
  return false;
}

bool TrtRun::builds() const {
  return has_flag("--onnx");
}

std::vector<TrtRun> parse_trtexec_log(const std::string& text, const std::string& origin, bool partial) {
  std::vector<TrtRun> runs;
  std::istringstream in(text);
  std::string section;
  for (std::string raw; std::getline(in, raw);) {
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    const std::string_view line = raw;
    if (line.starts_with("&&&& ")) {
      const size_t hash = line.find(" # ");
      const std::string command = hash == std::string_view::npos ? "" : std::string(line.substr(hash + 3));
      if (line.starts_with("&&&& RUNNING")) {
        runs.emplace_back();
        runs.back().command = command;
        section.clear();
      } else if (!runs.empty() && (line.starts_with("&&&& PASSED") || line.starts_with("&&&& FAILED"))) {
        runs.back().result = line.starts_with("&&&& PASSED") ? "PASSED" : "FAILED";
      }
      if (!runs.empty()) ++runs.back().lines, ++runs.back().recognized;
      continue;
    }
    if (runs.empty()) continue;  // lines before the first banner (a header someone added)
    char level = 0;
    const std::string_view body = strip_prefix(line, level);
    TrtRun& r = runs.back();
    ++r.lines;
    if (read_line(body, level, r, section)) {
      ++r.recognized;
      continue;
    }
    // A block is a run of plain lines: a blank line, a library message or a verbose line ends it.
    if (body.empty() || level == 'V' || body.starts_with("[TRT]")) section.clear();
    if (level == 'V') {
      ++r.skipped["verbose"];
    } else if (body.starts_with("[TRT]")) {
      ++r.skipped["tensorrt"];
    } else if (body.starts_with("Average on ") || body.starts_with("Timing trace") || section == "Trace details" ||
               body.find("Latency: min = ") != std::string_view::npos || body.starts_with("Total ") ||
               body.starts_with("Explanations of") || body.starts_with("  If not already in use")) {
      ++r.skipped["per-iteration"];
    } else if (body.empty()) {
      ++r.skipped["blank"];
    } else {
      ++r.skipped["other"];
      if (r.other_samples.size() < 5) r.other_samples.emplace_back(body.substr(0, 160));
    }
  }
  if (runs.empty())
    throw_bad_input(origin +
                    ": no trtexec run in the file (no \"&&&& RUNNING TensorRT.trtexec\" banner): not a "
                    "trtexec log, or cut before its first line");
  if (!partial && runs.back().result.empty())
    throw_bad_input(
        fmt::format("{}: truncated: run {} ({}) has no PASSED/FAILED line — the log was cut or trtexec "
                    "died; --partial audits what is there",
                    origin, runs.size(), runs.back().command.substr(0, 80)));
  return runs;
}

std::vector<TrtLayerTime> parse_trt_profile(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_array()) throw_bad_input(origin + ": not a trtexec --exportProfile file (expected a JSON array)");
  std::vector<TrtLayerTime> out;
  for (const auto& e : j) {
    if (!e.is_object() || !e.contains("name")) continue;  // the leading {"count": N}
    if (!e["name"].is_string()) throw_bad_input(origin + ": a profile entry whose name is not a string");
    TrtLayerTime t;
    t.name = e["name"].get<std::string>();
    t.median_ms = e.value("medianMs", e.value("averageMs", 0.0));
    t.percentage = e.value("percentage", 0.0);
    out.push_back(std::move(t));
  }
  if (out.empty()) throw_bad_input(origin + ": a profile with no layers");
  return out;
}

std::vector<TrtLayerInfo> parse_trt_layers(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object() || !j.contains("Layers") || !j["Layers"].is_array())
    throw_bad_input(origin + ": not a trtexec --exportLayerInfo file (expected an object with a \"Layers\" array)");
  std::vector<TrtLayerInfo> out;
  for (const auto& l : j["Layers"]) {
    TrtLayerInfo info;
    if (l.is_string()) {  // the default verbosity: names only
      info.name = l.get<std::string>();
    } else if (l.is_object()) {
      info.name = l.value("Name", "");
      info.type = l.value("LayerType", "");
      info.tactic = l.value("TacticName", "");
      if (l.contains("Outputs") && l["Outputs"].is_array())
        for (const auto& o : l["Outputs"])
          if (o.is_object() && o.contains("Format/Datatype") && o["Format/Datatype"].is_string())
            info.output_types.push_back(o["Format/Datatype"].get<std::string>());
    } else {
      throw_bad_input(origin + ": a layer that is neither a name nor an object");
    }
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace gsq::triage
