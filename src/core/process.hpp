// Running programs (no shell: arguments are passed as they are): a helper whose output is captured, or a workload
// attached to the terminal.
#pragma once

#include <filesystem>
#include <optional>
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

// This program's own path (/proc/self/exe), for files beside it and for running itself in a child process.
[[nodiscard]] std::optional<std::filesystem::path> this_program();

// One of gpusqueeze's own libraries (the tracer, the MPI plugin): the path in $`env_var` when set, else FILE beside
// this program (<dir>/lib/FILE: a build folder) or in its installation (<dir>/../lib/gpusqueeze/FILE). Every place
// looked in is appended to `tried`, for the message when none has it.
[[nodiscard]] std::optional<std::filesystem::path> find_own_library(const std::string& file, const char* env_var,
                                                                    std::vector<std::filesystem::path>& tried);

}  // namespace gsq
