// Random inputs for the benchmarks: normal(0, 1) values of any dtype, from Philox, generated where they live.
#include "kernels/device_common.cuh"
#include "kernels/philox.hpp"

namespace gsq::kernels {

namespace {

template <class T>
__global__ void fill_normal_kernel(T* y, int64_t n, uint64_t seed) {
  for (int64_t q = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; q * 4 < n;
       q += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const Philox4 r = dropout_words(static_cast<uint64_t>(q), seed, 0x5eed);
#pragma unroll
    for (int k = 0; k < 4; k += 2) {  // Box-Muller: two normals from two uniforms
      const float u1 = fmaxf(uniform24(r.v[k]), 1e-7f), u2 = uniform24(r.v[k + 1]);
      const float rad = sqrtf(-2.0f * logf(u1));
      float s, c;
      sincospif(2.0f * u2, &s, &c);
      if (q * 4 + k < n) y[q * 4 + k] = Conv<T>::from(rad * c);
      if (q * 4 + k + 1 < n) y[q * 4 + k + 1] = Conv<T>::from(rad * s);
    }
  }
}

}  // namespace

cudaError_t fill_normal(DType dtype, void* y, int64_t n, uint64_t seed, cudaStream_t s) {
  const auto blocks = static_cast<unsigned>(std::min<int64_t>((n / 4 + 255) / 256 + 1, 8192));
  switch (dtype) {
    case DType::f32:
      fill_normal_kernel<<<blocks, 256, 0, s>>>(static_cast<float*>(y), n, seed);
      break;
    case DType::f16:
      fill_normal_kernel<<<blocks, 256, 0, s>>>(static_cast<__half*>(y), n, seed);
      break;
    case DType::bf16:
      fill_normal_kernel<<<blocks, 256, 0, s>>>(static_cast<__nv_bfloat16*>(y), n, seed);
      break;
  }
  return cudaGetLastError();
}

}  // namespace gsq::kernels
