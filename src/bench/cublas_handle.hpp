// A cuBLAS handle bound to a stream, for benchmarks that time cuBLAS, and the status check they share.
#pragma once

#include "core/cuda_check.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <utility>

namespace gsq::bench {

inline void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw CudaError(fmt::format("{} failed: cuBLAS status {}", what, static_cast<int>(s)));
}

class CublasHandle {
 public:
  explicit CublasHandle(cudaStream_t stream) {
    check_cublas(cublasCreate(&h_), "cublasCreate");
    if (const cublasStatus_t s = cublasSetStream(h_, stream); s != CUBLAS_STATUS_SUCCESS) {
      cublasDestroy(h_);
      check_cublas(s, "cublasSetStream");
    }
  }
  ~CublasHandle() { cublasDestroy(h_); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  [[nodiscard]] cublasHandle_t get() const noexcept { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

}  // namespace gsq::bench
