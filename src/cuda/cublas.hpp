// cuBLAS for the benchmarks that time it, opened with dlopen the first time one runs: no other command loads the
// 540 MB library (it cost every command ~0.05 s and 220 MB of RSS at start when linked). Its entry points are taken
// from the library by name, with the prototypes of the cublas_v2.h the project builds against.
#pragma once

#include "cuda/check.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace gsq::cuda {

struct CublasApi {
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasDestroy_v2) destroy = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  // cublas_api.h also declares a C++ overload of cublasGemmEx: the C entry point's type is spelled out.
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                    const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  GemmEx gemm_ex = nullptr;
  decltype(&::cublasGetStatusName) status_name = nullptr;
  decltype(&::cublasGetStatusString) status_string = nullptr;
};

// The process's cuBLAS, loaded once (libcublas.so.13, else libcublas.so). Throws Error(no_gpu) naming what is missing.
[[nodiscard]] const CublasApi& cublas();

// A cuBLAS handle bound to a stream. Neither copied nor moved: each benchmark owns one for its lifetime, so a
// moved-from state would only add a null check to the destructor.
class CublasHandle {
 public:
  explicit CublasHandle(cudaStream_t stream) {
    const CublasApi& api = cublas();
    GSQ_CUBLAS_CHECK(api.create(&h_));
    if (const cublasStatus_t s = api.set_stream(h_, stream); s != CUBLAS_STATUS_SUCCESS) {
      api.destroy(h_);
      throw_cublas_error(s, "cublasSetStream(h_, stream)", __FILE__, __LINE__);
    }
  }
  ~CublasHandle() { cublas().destroy(h_); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  [[nodiscard]] cublasHandle_t get() const noexcept { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

}  // namespace gsq::cuda
