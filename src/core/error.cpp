// Cold throw paths kept out of line so call sites stay small.
#include "core/error.hpp"

#include <fmt/format.h>

namespace gsq {

[[gnu::cold]] void throw_bad_input(const std::string& what) {
  throw Error(ExitCode::bad_input, what);
}
[[gnu::cold]] void throw_no_gpu(const std::string& what) {
  throw Error(ExitCode::no_gpu, what);
}

std::string call_failure_text(const char* call, const char* name, const char* text, const char* file, int line) {
  return fmt::format("{} failed: {} ({}) at {}:{}", call, name, text, file, line);
}

}  // namespace gsq
