// Step times from markers, output lines or whole runs, and their warm-up and percentiles (see steps.hpp).
#include "program/steps.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>

namespace gsq::program {

const char* to_string(StepSource s) {
  switch (s) {
    case StepSource::markers:
      return "markers";
    case StepSource::output:
      return "output";
    case StepSource::process:
      return "process";
  }
  return "?";
}

StepTimes steps_from_ranges(const std::vector<trace::TraceFile>& files, const std::regex& pattern,
                            const std::string& pattern_text) {
  // (file, thread, name without its digits) → the start times of its matching ranges. The name keeps two optimizers
  // of one loop (a GAN's, a wrapper around AdamW) apart, each a step of its own; ProfilerStep#0, #1, … stay one.
  std::map<std::tuple<size_t, uint32_t, std::string>, std::vector<int64_t>> starts;
  auto without_digits = [](const std::string& n) {
    std::string out;
    for (char c : n)
      if (!std::isdigit(static_cast<unsigned char>(c))) out += c;
    return out;
  };
  for (size_t f = 0; f < files.size(); ++f) {
    const auto& file = files[f];
    std::vector<char> matches(file.strings.size(), -1);  // per string id: -1 unknown, 0 no, 1 yes
    for (const auto& r : file.records) {
      if (r.kind != static_cast<uint8_t>(trace::RecordKind::range) || r.name >= file.strings.size()) continue;
      char& m = matches[r.name];
      if (m < 0) m = std::regex_match(file.strings[r.name], pattern) ? 1 : 0;
      if (m) starts[{f, r.tid, without_digits(file.strings[r.name])}].push_back(r.start_ns);
    }
  }
  StepTimes out;
  out.source = StepSource::markers;
  const auto best = std::max_element(starts.begin(), starts.end(),
                                     [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  if (best == starts.end() || best->second.size() < 2) {
    out.how = fmt::format("no thread has two NVTX ranges named /{}/", pattern_text);
    return out;
  }
  auto& s = best->second;
  std::sort(s.begin(), s.end());
  for (size_t i = 1; i < s.size(); ++i) out.ns.push_back(static_cast<double>(trace::diff_ns(s[i], s[i - 1])));
  const auto& [file_index, tid, name] = best->first;
  out.how = fmt::format("NVTX ranges /{}/ ({}), start to start, {} steps on thread {} of pid {}", pattern_text, name,
                        out.ns.size(), tid,
                        files[file_index].header.is_object() ? files[file_index].header.value("pid", 0) : 0);
  return out;
}

StepTimes steps_from_ranges(const std::vector<trace::TraceFile>& files, const std::vector<std::string>& patterns) {
  StepTimes out;
  std::string tried;
  for (const auto& p : patterns) {
    out = steps_from_ranges(files, std::regex(p), p);
    if (!out.ns.empty()) return out;
    tried += (tried.empty() ? "/" : ", /") + p + "/";
  }
  out.how = "no thread has two NVTX ranges named " + tried;
  return out;
}

StepTimes steps_from_lines(std::span<const int64_t> stamps_ns, const std::string& pattern_text) {
  StepTimes out;
  out.source = StepSource::output;
  for (size_t i = 1; i < stamps_ns.size(); ++i) out.ns.push_back(static_cast<double>(stamps_ns[i] - stamps_ns[i - 1]));
  out.how = out.ns.empty()
                ? fmt::format("fewer than two output lines matched /{}/", pattern_text)
                : fmt::format("output lines matching /{}/, line to line, {} steps", pattern_text, out.ns.size());
  return out;
}

namespace {
// Leading steps slower than kWarmupFactor × the median of the run's second half (at most half the run).
size_t warmup_steps(std::span<const double> run) {
  if (run.size() < 4) return 0;
  std::vector<double> tail(run.begin() + static_cast<std::ptrdiff_t>(run.size() / 2), run.end());
  const double ref = stats::percentile(tail, 0.5);
  size_t w = 0;
  while (w < run.size() / 2 && run[w] > kWarmupFactor * ref) ++w;
  return w;
}
}  // namespace

StepStats summarize_steps(const std::vector<std::vector<double>>& runs) {
  StepStats s;
  std::vector<double> steady;
  for (const auto& run : runs) {
    const size_t w = warmup_steps(run);
    s.steps += run.size();
    s.warmup += w;
    for (size_t i = 0; i < run.size(); ++i) {
      if (i < w)
        s.warmup_ns += run[i];
      else
        steady.push_back(run[i]);
    }
  }
  if (steady.empty()) return s;
  s.steady = stats::summarize(steady);
  std::vector<double> sorted = steady;
  std::sort(sorted.begin(), sorted.end());
  s.p50_ci = stats::median_ci_order_stats(sorted);
  s.p90_ci = stats::bootstrap_quantile_ci(steady, 0.90);
  s.p99_ci = stats::bootstrap_quantile_ci(steady, 0.99);
  return s;
}

nlohmann::json to_json(const StepStats& s) {
  return {{"steps", s.steps},
          {"warmup_steps", s.warmup},
          {"warmup_ns", s.warmup_ns},
          {"steady_steps", s.steady.n},
          {"p50_ns", s.steady.p50},
          {"p90_ns", s.steady.p90},
          {"p99_ns", s.steady.p99},
          {"mean_ns", s.steady.mean},
          {"min_ns", s.steady.min},
          {"max_ns", s.steady.max},
          {"p50_ci_ns", {s.p50_ci.lo, s.p50_ci.hi}},
          {"p90_ci_ns", {s.p90_ci.lo, s.p90_ci.hi}},
          {"p99_ci_ns", {s.p99_ci.lo, s.p99_ci.hi}}};
}

}  // namespace gsq::program
