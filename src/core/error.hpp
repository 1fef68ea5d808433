// Errors and exit codes shared by every layer: libraries throw gsq::Error, the CLI maps it to an exit code once.
#pragma once

#include <stdexcept>
#include <string>

namespace gsq {

// Exit codes are part of the CLI contract (README, "Exit codes").
enum class ExitCode : int {
  ok = 0,
  findings = 1,   // doctor fail-level findings, compare regression
  bad_input = 2,  // bad usage, unreadable or malformed input file
  no_gpu = 3,     // no NVIDIA driver, no GPU, or the library a command needs is missing
  internal = 70,  // EX_SOFTWARE: a CUDA/cuBLAS/CUPTI call failed unexpectedly, or a bug
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  [[nodiscard]] ExitCode code() const noexcept { return code_; }

 private:
  ExitCode code_;
};

[[noreturn]] void throw_bad_input(const std::string& what);
[[noreturn]] void throw_no_gpu(const std::string& what);

// The text every check macro (CUDA runtime, cuBLAS, CUPTI, NVML) puts in its error: "CALL failed: NAME (TEXT) at
// FILE:LINE".
[[nodiscard]] std::string call_failure_text(const char* call, const char* name, const char* text, const char* file,
                                            int line);

}  // namespace gsq
