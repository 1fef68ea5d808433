// Cold path of the CUDA runtime check macro, and the record of errors swallowed in destructors.
#include "cuda/check.hpp"

#include <mutex>

namespace gsq {

[[gnu::cold]] void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line) {
  const std::string what = call_failure_text(call, cudaGetErrorName(e), cudaGetErrorString(e), file, line);
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
    throw Error(ExitCode::no_gpu, "no NVIDIA GPU: " + what);
  throw CudaError(what);
}

namespace cuda {
namespace {
std::mutex g_mu;
Swallowed g_swallowed;
}  // namespace

[[gnu::cold]] void note_swallowed(cudaError_t e, const char* call, const char* file, int line) noexcept {
  try {
    std::lock_guard lk(g_mu);
    if (g_swallowed.count++ == 0)
      g_swallowed.first = call_failure_text(call, cudaGetErrorName(e), cudaGetErrorString(e), file, line);
  } catch (...) {  // out of memory while formatting: the count alone survives
  }
}

Swallowed swallowed_errors() {
  std::lock_guard lk(g_mu);
  return g_swallowed;
}

}  // namespace cuda
}  // namespace gsq
