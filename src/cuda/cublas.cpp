// Cold path of GSQ_CUBLAS_CHECK, in its own object so only cuBLAS's users link cuBLAS.
#include "cuda/check.hpp"

namespace gsq {

[[gnu::cold]] void throw_cublas_error(cublasStatus_t s, const char* call, const char* file, int line) {
  throw CudaError(call_failure_text(call, cublasGetStatusName(s), cublasGetStatusString(s), file, line));
}

}  // namespace gsq
