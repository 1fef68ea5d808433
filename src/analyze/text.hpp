// How the analyzer writes durations and shares in titles and tables.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>

namespace gsq::analyze::detail {

inline std::string us(int64_t ns) {
  return fmt::format("{:.1f} µs", static_cast<double>(ns) / 1e3);
}
inline std::string ms(int64_t ns) {
  return fmt::format("{:.2f} ms", static_cast<double>(ns) / 1e6);
}
inline std::string pct(double r) {
  return fmt::format("{:.1f}%", 100 * r);
}

}  // namespace gsq::analyze::detail
