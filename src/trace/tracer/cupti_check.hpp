// The CUPTI check of the injected tracer: every CUPTI result is checked; a failure is logged on stderr once per call
// site (call text, file, line, CUPTI's error name) and counted for the trace's stats. It never throws: the tracer runs
// inside CUPTI's C callbacks and another program's process.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>

namespace gsq::trace::tracer {

// True when `result` is CUPTI_SUCCESS; otherwise logs (first time at this site) and counts, and returns false.
bool cupti_ok(CUptiResult result, const char* call, const char* file, int line) noexcept;

struct CuptiFailures {
  uint64_t count = 0;
  std::string first;  // "CALL failed: NAME at FILE:LINE", empty when none
};
[[nodiscard]] CuptiFailures cupti_failures();

}  // namespace gsq::trace::tracer

#define GSQ_CUPTI_CHECK(call) ::gsq::trace::tracer::cupti_ok((call), #call, __FILE__, __LINE__)
