// Cold throw paths kept out of line so call sites stay small.
#include "core/error.hpp"

namespace gsq {

[[gnu::cold]] void throw_bad_input(const std::string& what) {
  throw Error(ExitCode::bad_input, what);
}
[[gnu::cold]] void throw_no_gpu(const std::string& what) {
  throw Error(ExitCode::no_gpu, what);
}

}  // namespace gsq
