// Test helpers for analyzer results.
#pragma once

#include "analyze/analysis.hpp"

#include <algorithm>
#include <string>

namespace gsq::test {

inline bool has_finding(const analyze::Analysis& a, const std::string& id) {
  return std::any_of(a.findings.begin(), a.findings.end(), [&](const Finding& f) { return f.id == id; });
}

}  // namespace gsq::test
