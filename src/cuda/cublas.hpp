// A cuBLAS handle bound to a stream, for benchmarks that time cuBLAS. Neither copied nor moved: each benchmark owns
// one for its lifetime, so a moved-from state would only add a null check to the destructor.
#pragma once

#include "cuda/check.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <utility>

namespace gsq::cuda {

class CublasHandle {
 public:
  explicit CublasHandle(cudaStream_t stream) {
    GSQ_CUBLAS_CHECK(cublasCreate(&h_));
    if (const cublasStatus_t s = cublasSetStream(h_, stream); s != CUBLAS_STATUS_SUCCESS) {
      cublasDestroy(h_);
      throw_cublas_error(s, "cublasSetStream(h_, stream)", __FILE__, __LINE__);
    }
  }
  ~CublasHandle() { cublasDestroy(h_); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  [[nodiscard]] cublasHandle_t get() const noexcept { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

}  // namespace gsq::cuda
