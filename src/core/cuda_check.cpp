// Cold path of GSQ_CUDA_CHECK.
#include "core/cuda_check.hpp"

#include <fmt/format.h>

namespace gsq {

[[gnu::cold]] void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line) {
  const std::string what =
      fmt::format("{} failed: {} ({}) at {}:{}", call, cudaGetErrorName(e), cudaGetErrorString(e), file, line);
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
    throw Error(ExitCode::no_gpu, "no NVIDIA GPU: " + what);
  throw CudaError(what);
}

}  // namespace gsq
