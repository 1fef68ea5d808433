// One check macro per CUDA API: the call text, file, line, error name and string; a cold throw path.
#pragma once

#include "core/error.hpp"

#include <cuda_runtime_api.h>

#include <string>

namespace gsq {

// A CUDA call failed for a reason other than "no GPU/driver" (those become Error(no_gpu)).
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line);

}  // namespace gsq

#define GSQ_CUDA_CHECK(call)                                                \
  do {                                                                      \
    const cudaError_t gsq_cuda_status_ = (call);                            \
    if (gsq_cuda_status_ != cudaSuccess) [[unlikely]]                       \
      ::gsq::throw_cuda_error(gsq_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

// For destructors: never throws, the error is dropped on purpose (the first error was already thrown).
#define GSQ_CUDA_CHECK_NOTHROW(call) static_cast<void>(call)
