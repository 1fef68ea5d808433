// Inline SVG charts of the report: latency CDFs, ceilings against the theoretical ones, readings over time.
#include "report/report.hpp"

#include "core/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
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

namespace {

std::string svg_open(double w, double h, const std::string& title) {
  return fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0:.0f}" height="{1:.0f}" viewBox="0 0 {0:.0f} {1:.0f}" )"
      R"(role="img" font-family="system-ui,sans-serif"><text x="4" y="14" font-size="11" font-weight="600">{2}</text>)",
      w, h, html_escape(title));
}

}  // namespace

std::string grouped_bars_svg(const std::string& title, const std::vector<std::string>& series,
                             const std::vector<std::pair<std::string, std::vector<double>>>& groups,
                             const std::string& unit) {
  if (groups.empty() || series.empty()) return "";
  static constexpr const char* kColors[] = {"#d0d7de", "#76b900", "#0969da", "#bf8700", "#8250df"};
  constexpr double kLabel = 130, kBarW = 300, kBar = 9, kGap = 10;
  double top = 0;
  for (const auto& [label, v] : groups)
    for (double x : v) top = std::max(top, x);
  if (top <= 0) return "";
  const double group_h = kBar * static_cast<double>(series.size()) + kGap;
  const double h = 40 + group_h * static_cast<double>(groups.size()) + 14;
  std::string svg = svg_open(kLabel + kBarW + 80, h, title);
  for (size_t k = 0; k < series.size(); ++k)  // legend
    svg += fmt::format(R"(<rect x="{:.0f}" y="20" width="10" height="10" fill="{}"/>)"
                       R"(<text x="{:.0f}" y="29" font-size="10">{}</text>)",
                       4 + 120 * static_cast<double>(k), kColors[k % std::size(kColors)],
                       18 + 120 * static_cast<double>(k), html_escape(series[k]));
  for (size_t g = 0; g < groups.size(); ++g) {
    const double y0 = 40 + group_h * static_cast<double>(g);
    svg += fmt::format(R"(<text x="{}" y="{:.1f}" font-size="11" text-anchor="end">{}</text>)", kLabel - 6,
                       y0 + group_h / 2, html_escape(groups[g].first));
    for (size_t k = 0; k < series.size() && k < groups[g].second.size(); ++k) {
      const double v = groups[g].second[k], w = kBarW * std::max(0.0, v) / top;
      const double y = y0 + kBar * static_cast<double>(k);
      svg += fmt::format(R"(<rect x="{}" y="{:.1f}" width="{:.1f}" height="{}" fill="{}"/>)"
                         R"(<text x="{:.1f}" y="{:.1f}" font-size="8">{:.0f}</text>)",
                         kLabel, y, w, kBar - 1, kColors[k % std::size(kColors)], kLabel + w + 3, y + kBar - 2, v);
    }
  }
  svg += fmt::format(R"(<text x="{}" y="{:.0f}" font-size="10">{}</text>)", kLabel, h - 4, html_escape(unit));
  return svg + "</svg>";
}

std::string sweep_svg(const std::string& title, const std::vector<double>& bytes,
                      const std::vector<std::pair<std::string, std::vector<double>>>& series, const std::string& unit) {
  if (bytes.size() < 2 || series.empty()) return "";
  static constexpr const char* kColors[] = {"#76b900", "#0969da", "#cf222e", "#bf8700"};
  constexpr double kW = 420, kH = 200, kL = 46, kR = 12, kT = 34, kB = 30;
  const auto [bmin, bmax] = std::minmax_element(bytes.begin(), bytes.end());
  if (*bmin <= 0) return "";
  const double x0 = std::log2(*bmin), x1 = std::max(std::log2(*bmax), x0 + 1);
  double top = 0;
  for (const auto& [name, ys] : series) {
    if (ys.size() != bytes.size()) return "";
    for (double y : ys) top = std::max(top, y);
  }
  if (top <= 0) top = 1;
  auto x = [&](double b) { return kL + (std::log2(b) - x0) / (x1 - x0) * (kW - kL - kR); };
  auto y = [&](double v) { return kH - kB - v / top * (kH - kT - kB); };
  std::string svg = svg_open(kW, kH, title);
  svg += fmt::format(
      R"(<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#888"/><line x1="{0}" y1="{2}" x2="{3}" y2="{2}" stroke="#888"/>)",
      kL, kT, kH - kB, kW - kR);
  svg +=
      fmt::format(R"(<text x="{}" y="{:.1f}" font-size="10" text-anchor="end">{:.3g}</text>)", kL - 4, y(top) + 3, top);
  svg += fmt::format(R"(<text x="{}" y="{:.1f}" font-size="10" text-anchor="end">0</text>)", kL - 4, y(0) + 3);
  auto size_label = [](double b) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) b /= 1024, ++u;
    return fmt::format("{:.0f} {}", b, units[u]);
  };
  svg += fmt::format(R"(<text x="{}" y="{}" font-size="10">{}</text>)", kL, kH - kB + 14, size_label(*bmin));
  svg += fmt::format(R"(<text x="{}" y="{}" font-size="10" text-anchor="end">{}</text>)", kW - kR, kH - kB + 14,
                     size_label(*bmax));
  svg +=
      fmt::format(R"(<text x="{:.0f}" y="{}" font-size="10" text-anchor="middle">message size (log scale); {}</text>)",
                  (kL + kW - kR) / 2, kH - 4, html_escape(unit));
  for (size_t k = 0; k < series.size(); ++k) {
    std::string pts;
    for (size_t i = 0; i < bytes.size(); ++i) pts += fmt::format("{:.1f},{:.1f} ", x(bytes[i]), y(series[k].second[i]));
    const char* color = kColors[k % std::size(kColors)];
    svg += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="1.5" points="{}"/>)", color, pts);
    svg += fmt::format(R"(<rect x="{:.0f}" y="20" width="10" height="3" fill="{}"/><text x="{:.0f}" y="25" )"
                       R"(font-size="10">{}</text>)",
                       kL + 130 * static_cast<double>(k), color, kL + 14 + 130 * static_cast<double>(k),
                       html_escape(series[k].first));
  }
  return svg + "</svg>";
}

std::string stacked_svg(const std::string& title, const std::vector<std::pair<std::string, double>>& parts) {
  double total = 0;
  for (const auto& p : parts) total += std::max(0.0, p.second);
  if (total <= 0) return "";
  static constexpr const char* kColors[] = {"#76b900", "#0969da", "#cf222e", "#bf8700", "#8250df", "#57606a"};
  constexpr double kW = 520, kBar = 500, kLegendRow = 16;
  const double h = 24 + 22 + 8 + kLegendRow * static_cast<double>(parts.size());
  std::string svg = svg_open(kW, h, title);
  double x = 10;
  for (size_t i = 0; i < parts.size(); ++i) {
    const double w = kBar * std::max(0.0, parts[i].second) / total;
    const char* color = kColors[i % std::size(kColors)];
    svg += fmt::format(R"(<rect x="{:.1f}" y="24" width="{:.1f}" height="22" fill="{}"/>)", x, w, color);
    const double y = 24 + 22 + 8 + kLegendRow * static_cast<double>(i);
    svg += fmt::format(R"(<rect x="10" y="{:.1f}" width="10" height="10" fill="{}"/>)"
                       R"(<text x="26" y="{:.1f}" font-size="10">{} — {:.1f}%</text>)",
                       y, color, y + 9, html_escape(parts[i].first), 100 * std::max(0.0, parts[i].second) / total);
    x += w;
  }
  return svg + "</svg>";
}

std::string heatmap_svg(const std::string& title, const std::vector<std::string>& labels,
                        const std::vector<std::vector<double>>& values,
                        const std::vector<std::vector<std::string>>& text, const std::string& unit) {
  const size_t n = labels.size();
  if (n == 0 || values.size() != n || text.size() != n) return "";
  double lo = 1e300, hi = -1e300;
  for (const auto& row : values) {
    if (row.size() != n) return "";
    for (double v : row)
      if (v >= 0) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (hi < lo) return "";
  const double cell = n > 8 ? 38 : 52, left = 56, top = 40;
  // The unit's parts ("a; b") one per line under the matrix.
  std::vector<std::string> notes;
  for (size_t at = 0; at <= unit.size();) {
    const size_t end = std::min(unit.find("; ", at), unit.size());
    notes.push_back(unit.substr(at, end - at));
    at = end + 2;
  }
  const double w = std::max(left + cell * static_cast<double>(n) + 10, 380.0),
               h = top + cell * static_cast<double>(n) + 8 + 14 * static_cast<double>(notes.size());
  std::string svg = svg_open(w, h, title);
  for (size_t i = 0; i < n; ++i) {
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="10" text-anchor="middle">{}</text>)",
                       left + cell * (static_cast<double>(i) + 0.5), top - 6, html_escape(labels[i]));
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="10" text-anchor="end">{}</text>)", left - 6,
                       top + cell * (static_cast<double>(i) + 0.5) + 3, html_escape(labels[i]));
    for (size_t j = 0; j < n; ++j) {
      const double v = values[i][j];
      // Light (low) to the brand green (high); a negative value has no reading (grey).
      const double f = v < 0 ? 0 : (hi > lo ? (v - lo) / (hi - lo) : 1);
      const std::string fill =
          v < 0 ? "#eaeef2"
                : fmt::format("rgb({},{},{})", static_cast<int>(235 - f * (235 - 118)),
                              static_cast<int>(245 - f * (245 - 185)), static_cast<int>(220 - f * 220));
      const double x = left + cell * static_cast<double>(j), y = top + cell * static_cast<double>(i);
      svg += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}" stroke="#fff"/>)", x,
                         y, cell, cell, fill);
      svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="10" text-anchor="middle" fill="#1f2328">{}</text>)",
                         x + cell / 2, y + cell / 2 + 3, html_escape(text[i][j]));
    }
  }
  for (size_t i = 0; i < notes.size(); ++i)
    svg += fmt::format(R"(<text x="4" y="{:.1f}" font-size="10">{}</text>)",
                       top + cell * static_cast<double>(n) + 18 + 14 * static_cast<double>(i), html_escape(notes[i]));
  return svg + "</svg>";
}

std::string sol_svg(const std::string& title, const std::vector<SolPoint>& points) {
  if (points.empty()) return "";
  constexpr double kW = 380, kH = 300, kL = 46, kR = 14, kT = 24, kB = 36;
  auto x = [&](double f) { return kL + std::clamp(f, 0.0, 1.0) * (kW - kL - kR); };
  auto y = [&](double f) { return kH - kB - std::clamp(f, 0.0, 1.0) * (kH - kT - kB); };
  std::string svg = svg_open(kW, kH, title);
  svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#888"/>)", kL, kT, kW - kL - kR,
                     kH - kT - kB);
  // The 60% lines: above either, the kernel is bound by that roof; below both, by latency.
  svg += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="#bbb" stroke-dasharray="3,2"/>)",
                     x(0.6), kT, kH - kB);
  svg += fmt::format(R"(<line x1="{0}" y1="{1:.1f}" x2="{2}" y2="{1:.1f}" stroke="#bbb" stroke-dasharray="3,2"/>)", kL,
                     y(0.6), kW - kR);
  for (const auto& [label, v] : {std::pair{"0", 0.0}, std::pair{"60%", 0.6}, std::pair{"100%", 1.0}}) {
    svg += fmt::format(R"(<text x="{:.1f}" y="{}" font-size="10" text-anchor="middle">{}</text>)", x(v), kH - kB + 12,
                       label);
    svg +=
        fmt::format(R"(<text x="{}" y="{:.1f}" font-size="10" text-anchor="end">{}</text>)", kL - 4, y(v) + 3, label);
  }
  svg +=
      fmt::format(R"(<text x="{:.1f}" y="{}" font-size="10" text-anchor="middle">DRAM bandwidth, share of peak</text>)",
                  (kL + kW - kR) / 2, kH - 6);
  svg += fmt::format(R"svg(<text x="10" y="{:.1f}" font-size="10" transform="rotate(-90 10 {:.1f})" )svg"
                     R"(text-anchor="middle">busiest pipe, share of peak</text>)",
                     (kT + kH - kB) / 2, (kT + kH - kB) / 2);
  for (const auto& p : points) {
    const double r = 3 + 9 * std::clamp(p.share, 0.0, 1.0);
    svg += fmt::format(
        R"(<circle cx="{:.1f}" cy="{:.1f}" r="{:.1f}" fill="#76b900" fill-opacity="0.6" stroke="#3d6000"/>)",
        x(p.memory), y(p.compute), r);
    svg += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="9">{}</text>)", x(p.memory) + r + 2, y(p.compute) + 3,
                       html_escape(p.label.size() > 28 ? p.label.substr(0, 27) + "…" : p.label));
  }
  return svg + "</svg>";
}

}  // namespace gsq::report
