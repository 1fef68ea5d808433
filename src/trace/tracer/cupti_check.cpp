// Logging and counting of failed CUPTI calls inside the injected tracer (see cupti_check.hpp).
#include "trace/tracer/cupti_check.hpp"

#include "core/error.hpp"

#include <cstdio>
#include <mutex>
#include <set>
#include <utility>

namespace gsq::trace::tracer {

namespace {
std::mutex g_mu;
CuptiFailures g_failures;
std::set<std::pair<const char*, int>> g_logged;  // call sites already reported
}  // namespace

bool cupti_ok(CUptiResult result, const char* call, const char* file, int line) noexcept {
  if (result == CUPTI_SUCCESS) [[likely]]
    return true;
  try {
    const char* name = nullptr;
    if (cuptiGetResultString(result, &name) != CUPTI_SUCCESS || !name) name = "unknown CUPTI error";
    const std::string what =
        call_failure_text(call, name, std::to_string(static_cast<int>(result)).c_str(), file, line);
    std::lock_guard lk(g_mu);
    if (g_failures.count++ == 0) g_failures.first = what;
    if (g_logged.insert({file, line}).second) std::fprintf(stderr, "gpusqueeze trace: %s\n", what.c_str());
  } catch (...) {  // out of memory while formatting: the call's result is still reported as a failure
  }
  return false;
}

CuptiFailures cupti_failures() {
  std::lock_guard lk(g_mu);
  return g_failures;
}

}  // namespace gsq::trace::tracer
