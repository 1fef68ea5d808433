// Logging and counting of failed CUPTI calls inside the injected tracer (see cupti_check.hpp).
#include "trace/tracer/cupti_check.hpp"

#include "core/error.hpp"

#include <cstdio>
#include <mutex>
#include <set>
#include <utility>

namespace gsq::trace::tracer {

namespace {
// Never destroyed: a CUPTI call fails most often while the process exits, on a thread the program left running (a
// daemon thread inside a CUDA call, CUPTI's own buffer thread) after exit() has begun destroying static objects. A
// static std::set or std::string here would be used after its destructor ran (heap corruption, SIGABRT).
struct FailureLog {
  std::mutex mu;
  CuptiFailures failures;
  std::set<std::pair<const char*, int>> logged;  // call sites already reported
};
FailureLog& failure_log() {
  static FailureLog* log = new FailureLog;  // NOLINT(cppcoreguidelines-owning-memory): immortal on purpose
  return *log;
}
}  // namespace

bool cupti_ok(CUptiResult result, const char* call, const char* file, int line) noexcept {
  if (result == CUPTI_SUCCESS) [[likely]]
    return true;
  try {
    const char* name = nullptr;
    if (cuptiGetResultString(result, &name) != CUPTI_SUCCESS || !name) name = "unknown CUPTI error";
    const std::string what =
        call_failure_text(call, name, std::to_string(static_cast<int>(result)).c_str(), file, line);
    auto& log = failure_log();
    std::lock_guard lk(log.mu);
    if (log.failures.count++ == 0) log.failures.first = what;
    if (log.logged.insert({file, line}).second) std::fprintf(stderr, "gpusqueeze trace: %s\n", what.c_str());
  } catch (...) {  // out of memory while formatting: the call's result is still reported as a failure
  }
  return false;
}

CuptiFailures cupti_failures() {
  auto& log = failure_log();
  std::lock_guard lk(log.mu);
  return log.failures;
}

}  // namespace gsq::trace::tracer
