// Pairing and statistical verdicts for `gpusqueeze compare`.
#include "bench/compare.hpp"

#include "core/error.hpp"
#include "core/stats.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

namespace gsq::bench {

std::string_view to_string(Verdict v) noexcept {
  switch (v) {
    case Verdict::faster:
      return "FASTER";
    case Verdict::slower:
      return "SLOWER";
    case Verdict::same:
      return "SAME";
    case Verdict::uncertain:
      return "UNCERTAIN";
  }
  return "UNCERTAIN";
}

Verdict decide(const stats::Interval& ci, double min_effect) {
  if (ci.lo > 1 + min_effect) return Verdict::slower;
  if (ci.hi < 1 - min_effect) return Verdict::faster;
  if (ci.lo >= 1 - min_effect && ci.hi <= 1 + min_effect) return Verdict::same;
  return Verdict::uncertain;
}

bool CompareReport::regression() const {
  return std::any_of(rows.begin(), rows.end(), [](const Comparison& c) { return c.verdict == Verdict::slower; });
}

namespace {

// The timer's step as seen in the data: the smallest gap between distinct sample values (32 ns for CUDA events on the
// H200). Medians that differ by a step or two are not a change, however narrow the bootstrap interval is.
double quantum(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  double q = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    const double d = v[i] - v[i - 1];
    if (d > 0 && (q == 0 || d < q)) q = d;
  }
  return q;
}

std::string pair_key(const Result& r, const std::string& mode, const std::set<std::string>& ignore) {
  std::string k = r.name + "|" + mode;
  for (const auto& [a, v] : r.axes)
    if (!ignore.contains(a)) k += "|" + a + "=" + v;
  return k;
}
}  // namespace

CompareReport compare_runs(const Run& base, const Run& next, const CompareOptions& o) {
  CompareReport rep;
  if (!base.env_fields.empty() && !next.env_fields.empty())
    rep.env_drift = env::drift(base.env_fields, next.env_fields);
  std::map<std::string, std::pair<const Result*, const Measurement*>> in_base;
  for (const auto& r : base.results)
    for (const auto& m : r.measurements) {
      const auto key = pair_key(r, m.mode, o.ignore_axes);
      if (!in_base.emplace(key, std::make_pair(&r, &m)).second) {
        throw_bad_input(fmt::format("{} appears twice in the base run once axes {} are ignored", config_label(r),
                                    fmt::join(o.ignore_axes, ",")));
      }
    }
  std::set<std::string> matched;
  for (const auto& r : next.results) {
    for (const auto& m : r.measurements) {
      const auto key = pair_key(r, m.mode, o.ignore_axes);
      const auto it = in_base.find(key);
      if (it == in_base.end()) {
        rep.only_in_new.push_back(config_label(r) + " " + m.mode);
        continue;
      }
      matched.insert(key);
      const auto& [br, bm] = it->second;
      const auto a = bm->kept(), b = m.kept();
      if (a.empty() || b.empty()) {
        throw_bad_input(fmt::format("{} {}: no raw samples in {} run (write it without --no-samples)", config_label(r),
                                    m.mode, a.empty() ? "the base" : "the new"));
      }
      Comparison c;
      c.label = config_label(r);
      c.mode = m.mode;
      c.base_n = a.size();
      c.new_n = b.size();
      c.base_p50_ns = stats::percentile(a, 0.5);
      c.new_p50_ns = stats::percentile(b, 0.5);
      const auto est = stats::bootstrap_median_ratio(a, b, o.confidence);
      c.ratio = est.ratio;
      c.ci = est.ci;
      // Two timer steps (one per event of the pair) of slack on each side, relative to the base median.
      const double slack = 2 * std::max(quantum(a), quantum(b)) / c.base_p50_ns;
      c.ci.lo -= slack;
      c.ci.hi += slack;
      c.p_value = stats::mann_whitney_p(a, b);
      c.verdict = decide(c.ci, o.min_effect);
      rep.rows.push_back(std::move(c));
    }
  }
  for (const auto& [key, rm] : in_base)
    if (!matched.contains(key)) rep.only_in_base.push_back(config_label(*rm.first) + " " + rm.second->mode);
  return rep;
}

}  // namespace gsq::bench
