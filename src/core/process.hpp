// Running programs (no shell: arguments are passed as they are): a helper whose output is captured, or a workload
// attached to the terminal.
#pragma once

#include <string>
#include <vector>

namespace gsq {

struct ProcessOutput {
  int exit_code = -1;  // -1: could not start, 128 + N: killed by signal N
  std::string out, err;
};

[[nodiscard]] ProcessOutput run_process(const std::vector<std::string>& argv);

// Runs a program with this process's stdin, stdout and stderr and waits for it: its exit code, 128 + N when killed by
// signal N. Throws Error(bad_input) naming the program when it cannot be started.
[[nodiscard]] int run_attached(const std::vector<std::string>& argv);

}  // namespace gsq
