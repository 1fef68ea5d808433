// The human printers of a run: the results table, markdown, CSV, and each benchmark against its ceiling.
#include "bench/runner.hpp"

#include "core/stats.hpp"
#include "gpu/peaks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace gsq::bench {

namespace {
std::string human_ns(double ns) {
  if (ns >= 1e6) return fmt::format("{:.3f} ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:.2f} µs", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}
std::string throughput(const Result& r, const Derived& d) {
  if (r.bytes_per_launch > 0) {
    std::string s = fmt::format("{:.1f} GB/s", d.bytes_per_s / 1e9);
    if (d.pct_of_peak > 0) s += fmt::format(" ({:.1f}% of {})", d.pct_of_peak, r.peak_name);
    return s;
  }
  if (r.flops_per_launch > 0) return fmt::format("{:.1f} TFLOP/s", d.flops_per_s / 1e12);
  if (r.items_per_launch > 0) return fmt::format("{:.2f} M items/s", d.items_per_s / 1e6);
  return "";
}
}  // namespace

Table results_table(const Run& run) {
  Table t{{"benchmark", "mode", "n", "P50", "P50 95% CI", "P90", "P99", "max", "noise", "throughput", "stop"}, {}};
  for (const auto& r : run.results) {
    if (!r.skipped.empty()) {
      t.rows.push_back({config_label(r), "skipped", "", "", "", "", "", "", "", r.skipped, ""});
      continue;
    }
    for (const auto& m : r.measurements) {
      const Derived d = derive(r, m);
      const std::string mode = m.launches_per_sample > 1 ? fmt::format("{}×{}", m.mode, m.launches_per_sample) : m.mode;
      t.rows.push_back({config_label(r), mode,
                        d.dropped ? fmt::format("{} (-{} throttled)", d.n, d.dropped) : std::to_string(d.n),
                        human_ns(d.p50), fmt::format("{}–{}", human_ns(d.p50_lo), human_ns(d.p50_hi)), human_ns(d.p90),
                        human_ns(d.p99), human_ns(d.max), fmt::format("{:.2f}%", 100 * d.rel_noise), throughput(r, d),
                        m.stop_reason});
    }
  }
  return t;
}

std::string render_markdown(const Run& run) {
  return fmt::format("suite {} on {} (fingerprint {}, set {})\n\n{}", run.suite, run.gpu_name, run.fingerprint, run.set,
                     results_table(run).markdown());
}

std::vector<Ceiling> ceilings(const Run& run) {
  std::map<std::string, Ceiling> best;
  for (const auto& r : run.results) {
    if (r.bytes_per_launch <= 0) continue;
    for (const auto& m : r.measurements) {
      const Derived d = derive(r, m);
      // Without an L2 flush between launches, data that fits the L2 is served from it: that is the L2's ceiling, not
      // the one the benchmark declared.
      const bool l2 = r.peak_name == "theoretical HBM" && m.mode != "cold" && run.l2_cache_bytes > 0 &&
                      r.bytes_per_launch <= static_cast<double>(run.l2_cache_bytes);
      const std::string name = l2 ? r.name + " (L2-resident)" : r.name;
      auto& b = best[name];
      if (d.bytes_per_s > b.bytes_per_s) {
        b = {name, config_label(r) + " " + m.mode, l2 ? "" : r.peak_name, d.bytes_per_s, l2 ? 0 : r.peak_bytes_per_s};
      }
    }
  }
  std::vector<Ceiling> out;
  for (auto& [name, c] : best) out.push_back(std::move(c));
  return out;
}

Table ceilings_table(const Run& run) {
  Table t{{"ceiling", "best measured", "where", "theoretical", "of theoretical"}, {}};
  for (const auto& c : ceilings(run)) {
    t.rows.push_back(
        {c.name, fmt::format("{:.1f} GB/s", c.bytes_per_s / 1e9), c.where,
         c.peak_bytes_per_s > 0 ? fmt::format("{:.1f} GB/s ({})", c.peak_bytes_per_s / 1e9, c.peak_name) : "",
         c.peak_bytes_per_s > 0 ? fmt::format("{:.1f}%", 100 * c.bytes_per_s / c.peak_bytes_per_s) : ""});
  }
  // The best mem.copy variant (16-byte accesses) against cudaMemcpy, first (cold) mode, at every size both ran that
  // is past four L2s (smaller copies are partly served by what the flush leaves): the "≥ 1.00×" test, one
  // row a size, smallest first, because the verdict can differ between sizes (on the H200 the flat copy is ahead at
  // 1 GiB and 0.2% behind at 4 GiB).
  auto first_rate = [](const Result& r) {
    return r.measurements.empty() ? 0.0 : derive(r, r.measurements[0]).bytes_per_s;
  };
  std::map<double, const Result*> copy_by_size;
  for (const auto& r : run.results) {
    if (r.name != "mem.copy" || !r.axes.count("width") || r.axes.at("width") != "16" || r.measurements.empty())
      continue;
    const Result*& best_copy = copy_by_size[r.bytes_per_launch];
    if (!best_copy || first_rate(r) > first_rate(*best_copy)) best_copy = &r;
  }
  for (const auto& [bytes, copy] : copy_by_size) {
    if (run.l2_cache_bytes > 0 && bytes <= 4.0 * static_cast<double>(run.l2_cache_bytes)) continue;
    const Result* ref = nullptr;
    for (const auto& r : run.results)
      if (r.name == "mem.memcpy_d2d" && !r.measurements.empty() && r.axes.count("bytes") &&
          r.axes.at("bytes") == copy->axes.at("bytes"))
        ref = &r;
    if (!ref) continue;
    const double a = first_rate(*copy), b = first_rate(*ref);
    // Four decimals: the test is against 1, and the two are often within a tenth of a percent.
    t.rows.push_back({"mem.copy / cudaMemcpy", fmt::format("{:.4f}×", b > 0 ? a / b : 0),
                      fmt::format("bytes={}, width=16{}, {}{}", copy->axes.at("bytes"),
                                  copy->axes.count("variant") ? ", variant=" + copy->axes.at("variant") : "",
                                  copy->measurements[0].mode, run.settings.interleave ? ", interleaved" : ""),
                      "", ""});
  }
  if (t.rows.empty()) t.rows.push_back({"(no benchmark declares bytes)", "", "", "", ""});
  return t;
}

std::string render_csv(const Run& run) {
  std::string csv =
      "benchmark,mode,launches_per_sample,n,dropped,p50_ns,p50_lo_ns,p50_hi_ns,p90_ns,p99_ns,p99_lo_ns,p99_hi_ns,max_"
      "ns,"
      "rel_noise,bytes_per_s,flops_per_s,items_per_s,pct_of_peak,stop_reason\n";
  for (const auto& r : run.results) {
    for (const auto& m : r.measurements) {
      const Derived d = derive(r, m);
      csv += fmt::format(
          "\"{}\",{},{},{},{},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{:.5f},{:.4g},{:.4g},{:.4g},{:."
          "2f},{}\n",
          config_label(r), m.mode, m.launches_per_sample, d.n, d.dropped, d.p50, d.p50_lo, d.p50_hi, d.p90, d.p99,
          d.p99_lo, d.p99_hi, d.max, d.rel_noise, d.bytes_per_s, d.flops_per_s, d.items_per_s, d.pct_of_peak,
          m.stop_reason);
    }
  }
  return csv;
}

}  // namespace gsq::bench
