// Synthetic torch.profiler (Kineto) events for the analyzer's tests, as JSON objects each followed by a comma: wrap
// the concatenation (last comma dropped) in {"traceEvents": [...]}. Not recordings; the tests that use them say what
// loop they stand for.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace gsq::test {

// A ProfilerStep#N range of pid 1, thread 1.
inline std::string step_json(int step, int ts, int dur) {
  return fmt::format(
      R"({{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{}","pid":1,"tid":1,"ts":{},"dur":{}}},)", step, ts,
      dur);
}

// A launch call (pid 1, thread 1) at `ts` lasting `launch_us`, and the kernel it feeds on stream 7 at `kernel_ts`.
inline std::string launch_json(int ts, int corr, std::string_view kernel, int kernel_ts, int kernel_us,
                               int launch_us = 5) {
  return fmt::format(
      R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":{},)"
      R"("args":{{"correlation":{}}}}},{{"ph":"X","cat":"kernel","name":"{}","pid":0,"tid":7,"ts":{},"dur":{},)"
      R"("args":{{"stream":7,"device":0,"correlation":{}}}}},)",
      ts, launch_us, corr, kernel, kernel_ts, kernel_us, corr);
}

// A CPU op (pid 1, thread 1) at `ts` lasting `dur` that launches one kernel 5 µs in (a 10 µs launch call).
inline std::string op_launching_json(std::string_view op, int ts, int dur, int corr, std::string_view kernel,
                                     int kernel_ts, int kernel_us) {
  return fmt::format(R"({{"ph":"X","cat":"cpu_op","name":"{}","pid":1,"tid":1,"ts":{},"dur":{}}},)", op, ts, dur) +
         launch_json(ts + 5, corr, kernel, kernel_ts, kernel_us, 10);
}

}  // namespace gsq::test
