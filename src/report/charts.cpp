// Inline SVG charts of the report: latency CDFs, ceilings against the theoretical ones, readings over time.
#include "report/report.hpp"

#include "core/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

namespace gsq::report {

std::string cdf_svg(const std::string& title, std::vector<double> samples_ns) {
  if (samples_ns.size() < 2) return "";
  std::sort(samples_ns.begin(), samples_ns.end());
  constexpr double kW = 360, kH = 180, kL = 46, kR = 10, kT = 22, kB = 30;
  const size_t n = samples_ns.size();
  const double lo = samples_ns.front();
  const double hi =
      std::max(samples_ns[std::min(n - 1, static_cast<size_t>(0.999 * static_cast<double>(n - 1)))], lo * 1.0001 + 1);
  auto x = [&](double ns) { return kL + (std::min(ns, hi) - lo) / (hi - lo) * (kW - kL - kR); };
  auto y = [&](double q) { return kT + (1 - q) * (kH - kT - kB); };
  std::string pts;
  const size_t step = std::max<size_t>(1, n / 200);
  for (size_t i = 0; i < n; i += step)
    pts += fmt::format("{:.1f},{:.1f} ", x(samples_ns[i]), y(static_cast<double>(i + 1) / static_cast<double>(n)));
  pts += fmt::format("{:.1f},{:.1f}", x(samples_ns.back()), y(1));
  const double p50 = samples_ns[n / 2],
               p99 = samples_ns[std::min(n - 1, static_cast<size_t>(0.99 * static_cast<double>(n - 1)))];
  std::string svg = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" viewBox="0 0 {0} {1}" role="img" font-family="system-ui,sans-serif">)"
      R"(<text x="{2}" y="14" font-size="11" font-weight="600">{3}</text>)",
      kW, kH, kL, html_escape(abbreviate(title, 52)));
  svg += fmt::format(
      R"(<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#888"/><line x1="{0}" y1="{2}" x2="{3}" y2="{2}" stroke="#888"/>)",
      kL, kT, kH - kB, kW - kR);
  for (const auto& [label, q] : {std::pair{"0", 0.0}, std::pair{"0.5", 0.5}, std::pair{"1", 1.0}})
    svg +=
        fmt::format(R"(<text x="{}" y="{:.1f}" font-size="10" text-anchor="end">{}</text>)", kL - 4, y(q) + 3, label);
  svg += fmt::format(
      R"(<text x="{:.1f}" y="{}" font-size="10">{:.2f} µs</text><text x="{:.1f}" y="{}" font-size="10" text-anchor="end">{:.2f} µs</text>)",
      kL, kH - kB + 14, lo / 1e3, kW - kR, kH - kB + 14, hi / 1e3);
  for (const auto& [label, v, color] : {std::tuple{"P50", p50, "#0969da"}, std::tuple{"P99", p99, "#cf222e"}}) {
    svg += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="{3}" stroke-dasharray="3,2"/>)"
                       R"(<text x="{0:.1f}" y="{4}" font-size="10" fill="{3}" text-anchor="{7}">{5} {6:.2f}</text>)",
                       x(v), kT, kH - kB, color, kH - 4, label, v / 1e3, x(v) > kW - 50 ? "end" : "middle");
  }
  svg += fmt::format(R"(<polyline fill="none" stroke="#76b900" stroke-width="2" points="{}"/></svg>)", pts);
  return svg;
}

std::string series_svg(const std::string& title, const std::vector<int64_t>& t_ns, const std::vector<double>& values,
                       const std::string& unit) {
  if (t_ns.size() < 2 || t_ns.size() != values.size()) return "";
  constexpr double kW = 360, kH = 150, kL = 46, kR = 10, kT = 22, kB = 22;
  const double t0 = static_cast<double>(t_ns.front()), span = std::max(1.0, static_cast<double>(t_ns.back()) - t0);
  const auto [lo_it, hi_it] = std::minmax_element(values.begin(), values.end());
  const double lo = *lo_it, hi = *hi_it > *lo_it ? *hi_it : *lo_it + 1;
  auto x = [&](int64_t t) { return kL + (kW - kL - kR) * (static_cast<double>(t) - t0) / span; };
  auto y = [&](double v) { return kH - kB - (kH - kT - kB) * (v - lo) / (hi - lo); };
  std::string pts;
  for (size_t i = 0; i < t_ns.size(); ++i) pts += fmt::format("{:.1f},{:.1f} ", x(t_ns[i]), y(values[i]));
  std::string svg = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" viewBox="0 0 {0} {1}" role="img" )"
      R"(font-family="system-ui,sans-serif"><text x="{2}" y="14" font-size="11" font-weight="600">{3}</text>)",
      kW, kH, kL, html_escape(abbreviate(title, 52)));
  svg += fmt::format(
      R"(<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#888"/><line x1="{0}" y1="{2}" x2="{3}" y2="{2}" stroke="#888"/>)",
      kL, kT, kH - kB, kW - kR);
  svg +=
      fmt::format(R"(<text x="{}" y="{:.1f}" font-size="10" text-anchor="end">{:.0f}</text>)", kL - 4, y(hi) + 3, hi);
  svg +=
      fmt::format(R"(<text x="{}" y="{:.1f}" font-size="10" text-anchor="end">{:.0f}</text>)", kL - 4, y(lo) + 3, lo);
  svg += fmt::format(R"(<text x="{}" y="{}" font-size="10">0 s</text><text x="{}" y="{}" font-size="10" )"
                     R"(text-anchor="end">{:.1f} s ({})</text>)",
                     kL, kH - 6, kW - kR, kH - 6, span / 1e9, html_escape(unit));
  svg += fmt::format(R"(<polyline fill="none" stroke="#76b900" stroke-width="1.5" points="{}"/></svg>)", pts);
  return svg;
}

std::string bars_svg(const std::string& title, const std::vector<Bar>& bars) {
  if (bars.empty()) return "";
  constexpr double kLabel = 170, kBarW = 320, kRow = 34, kTop = 24;
  const double w = kLabel + kBarW + 190, h = kTop + kRow * static_cast<double>(bars.size()) + 8;
  double top = 0;
  for (const auto& b : bars) top = std::max({top, b.measured, b.theoretical});
  std::string svg = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" viewBox="0 0 {0} {1}" role="img" )"
      R"(font-family="system-ui,sans-serif"><text x="4" y="14" font-size="11" font-weight="600">{2}</text>)",
      w, h, html_escape(title));
  for (size_t i = 0; i < bars.size(); ++i) {
    const auto& b = bars[i];
    const double y = kTop + kRow * static_cast<double>(i);
    const double wt = top > 0 ? kBarW * b.theoretical / top : 0, wm = top > 0 ? kBarW * b.measured / top : 0;
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" font-size="11" text-anchor="end">{}</text>)", kLabel - 6, y + 15,
                       html_escape(abbreviate(b.label, 28)));
    svg += fmt::format(R"(<rect x="{}" y="{:.1f}" width="{:.1f}" height="10" fill="#d0d7de"/>)", kLabel, y + 2, wt);
    svg += fmt::format(R"(<rect x="{}" y="{:.1f}" width="{:.1f}" height="12" fill="#76b900"/>)", kLabel, y + 14, wm);
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="10">{:.0f} GB/s{}</text>)",
                       kLabel + std::max(wm, wt) + 6, y + 24, b.measured / 1e9,
                       b.theoretical > 0
                           ? fmt::format(" = {:.1f}% of {:.0f}", 100 * b.measured / b.theoretical, b.theoretical / 1e9)
                           : "");
  }
  return svg + "</svg>";
}

}  // namespace gsq::report
