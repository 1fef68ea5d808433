// Running a helper program and capturing what it prints (no shell: arguments are passed as they are).
#pragma once

#include <string>
#include <vector>

namespace gsq {

struct ProcessOutput {
  int exit_code = -1;  // -1: could not start, 128 + N: killed by signal N
  std::string out, err;
};

[[nodiscard]] ProcessOutput run_process(const std::vector<std::string>& argv);

}  // namespace gsq
