// Test helper: whether a CUDA device is present (GPU tests skip with a visible reason when not).
#pragma once

#include <cuda_runtime_api.h>

namespace gsq::test {

inline bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

}  // namespace gsq::test
