// One check macro per CUDA library API (runtime, cuBLAS): the call text, file, line, error name and string; a cold
// throw path; a non-throwing variant for destructors that keeps the first error it swallowed.
#pragma once

#include "core/error.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace gsq {

// A CUDA call failed for a reason other than "no GPU/driver" (those become Error(no_gpu)): exit code 70.
class CudaError : public Error {
 public:
  explicit CudaError(const std::string& what) : Error(ExitCode::internal, what) {}
};

[[noreturn]] void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t s, const char* call, const char* file, int line);

namespace cuda {

// Destructors must not throw, but an error there must not vanish either: the first one is kept (with how many came
// after it) and the CLI reports it on stderr when the command ends.
void note_swallowed(cudaError_t e, const char* call, const char* file, int line) noexcept;
struct Swallowed {
  std::string first;  // empty when none
  uint64_t count = 0;
};
[[nodiscard]] Swallowed swallowed_errors();

}  // namespace cuda
}  // namespace gsq

#define GSQ_CUDA_CHECK(call)                                                \
  do {                                                                      \
    const cudaError_t gsq_cuda_status_ = (call);                            \
    if (gsq_cuda_status_ != cudaSuccess) [[unlikely]]                       \
      ::gsq::throw_cuda_error(gsq_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

// For destructors: never throws; a failure is kept for the CLI's end-of-command report (cuda::swallowed_errors).
#define GSQ_CUDA_CHECK_NOTHROW(call)                                            \
  do {                                                                          \
    const cudaError_t gsq_cuda_status_ = (call);                                \
    if (gsq_cuda_status_ != cudaSuccess) [[unlikely]]                           \
      ::gsq::cuda::note_swallowed(gsq_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define GSQ_CUBLAS_CHECK(call)                                                  \
  do {                                                                          \
    const cublasStatus_t gsq_cublas_status_ = (call);                           \
    if (gsq_cublas_status_ != CUBLAS_STATUS_SUCCESS) [[unlikely]]               \
      ::gsq::throw_cublas_error(gsq_cublas_status_, #call, __FILE__, __LINE__); \
  } while (0)
