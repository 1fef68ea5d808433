// Axes into configurations, the sample-set presets, and a configuration's label.
#include "bench/runner.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <set>

namespace gsq::bench {

std::vector<std::map<std::string, std::string>> expand_axes(
    const std::vector<Axis>& axes, const std::map<std::string, std::vector<std::string>>& overrides, bool boundary) {
  std::vector<std::map<std::string, std::string>> out{{}};
  for (const auto& a : axes) {
    std::vector<std::string> values = a.values;
    if (const auto it = overrides.find(a.name); it != overrides.end()) values = it->second;
    if (boundary && values.size() > 2) values = {values.front(), values.back()};
    std::vector<std::map<std::string, std::string>> next;
    for (const auto& partial : out)
      for (const auto& v : values) {
        auto m = partial;
        m[a.name] = v;
        next.push_back(std::move(m));
      }
    out = std::move(next);
  }
  return out;
}

void apply_set(const std::string& set, Settings& s) {
  if (set == "default" || set == "boundary") return;
  if (set == "stress") {
    s.min_samples = std::max<uint32_t>(s.min_samples, 1000);  // a P99 needs at least 1000 samples to mean anything
    s.max_seconds = std::max(s.max_seconds, 10.0);
    return;
  }
  if (set == "warmup") {
    s.first_calls = true;
    s.cold = s.batch = false;
    return;
  }
  throw_bad_input(fmt::format("unknown sample set '{}' (default, stress, boundary, warmup)", set));
}

std::string config_label(const Result& r) {
  std::string axes;
  for (const auto& [k, v] : r.axes) axes += fmt::format("{}{}={}", axes.empty() ? "" : ",", k, v);
  return axes.empty() ? r.name : fmt::format("{}[{}]", r.name, axes);
}

}  // namespace gsq::bench
