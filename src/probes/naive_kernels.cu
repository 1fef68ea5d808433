// The straightforward kernels `gpusqueeze kernels` measures ours against (built into its suites, not into
// libgsqkernels): row kernels with one block of 256 threads per row, scalar loads, one pass over global memory per
// statistic, a shared-memory tree reduction; a transpose with one thread per element and no tiling.
#include "probes/naive_kernels.hpp"

#include "kernels/device_common.cuh"
#include "kernels/philox.hpp"

namespace gsq::probes {

using namespace kernels;  // the kernels measured here, their launchers and types

namespace {

constexpr int kNaiveThreads = 256;

template <bool kMax>
__device__ float block_reduce_naive(float v, float* buf) {
  buf[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kNaiveThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      buf[threadIdx.x] =
          kMax ? fmaxf(buf[threadIdx.x], buf[threadIdx.x + stride]) : buf[threadIdx.x] + buf[threadIdx.x + stride];
    __syncthreads();
  }
  const float r = buf[0];
  __syncthreads();
  return r;
}

template <RowOp OP, class T>
__global__ void row_naive_kernel(RowArgs a) {
  __shared__ float buf[kNaiveThreads];
  const T* x = static_cast<const T*>(a.x) + blockIdx.x * a.cols;
  T* y = static_cast<T*>(a.y) + blockIdx.x * a.cols;
  const auto* w = static_cast<const T*>(a.weight);
  const auto* bias = static_cast<const T*>(a.bias);
  const float n = static_cast<float>(a.cols);
  if constexpr (OP == RowOp::layer_norm || OP == RowOp::rms_norm) {
    float mean = 0;
    if (OP == RowOp::layer_norm) {
      float s = 0;
      for (int64_t i = threadIdx.x; i < a.cols; i += kNaiveThreads) s += Conv<T>::to(x[i]);
      mean = block_reduce_naive<false>(s, buf) / n;
    }
    float q = 0;
    for (int64_t i = threadIdx.x; i < a.cols; i += kNaiveThreads) {
      const float d = Conv<T>::to(x[i]) - mean;
      q += d * d;
    }
    const float scale = rsqrtf(block_reduce_naive<false>(q, buf) / n + a.eps);
    for (int64_t i = threadIdx.x; i < a.cols; i += kNaiveThreads) {
      float v = (Conv<T>::to(x[i]) - mean) * scale;
      if (w) v *= Conv<T>::to(w[i]);
      if (bias && OP == RowOp::layer_norm) v += Conv<T>::to(bias[i]);
      y[i] = Conv<T>::from(v);
    }
  } else {
    float m = MaxOp::identity();
    for (int64_t i = threadIdx.x; i < a.cols; i += kNaiveThreads) m = fmaxf(m, Conv<T>::to(x[i]));
    m = block_reduce_naive<true>(m, buf);
    float s = 0;
    for (int64_t i = threadIdx.x; i < a.cols; i += kNaiveThreads) s += expf(Conv<T>::to(x[i]) - m);
    const float inv = 1.0f / block_reduce_naive<false>(s, buf);
    for (int64_t i = threadIdx.x; i < a.cols; i += kNaiveThreads) {
      float v = expf(Conv<T>::to(x[i]) - m) * inv;
      if (OP == RowOp::softmax_dropout)
        v = dropout_keep(blockIdx.x * a.cols + i, a.p, a.seed, a.offset) ? v / (1.0f - a.p) : 0.0f;
      y[i] = Conv<T>::from(v);
    }
  }
}

template <RowOp OP>
cudaError_t naive_op(DType dtype, const RowArgs& a, cudaStream_t s) {
  const auto grid = static_cast<unsigned>(a.rows);
  switch (dtype) {
    case DType::f32:
      row_naive_kernel<OP, float><<<grid, kNaiveThreads, 0, s>>>(a);
      break;
    case DType::f16:
      row_naive_kernel<OP, __half><<<grid, kNaiveThreads, 0, s>>>(a);
      break;
    case DType::bf16:
      row_naive_kernel<OP, __nv_bfloat16><<<grid, kNaiveThreads, 0, s>>>(a);
      break;
  }
  return cudaGetLastError();
}

template <class T>
__global__ void transpose_naive_kernel(T* y, const T* x, int64_t batches, int64_t rows, int64_t cols) {
  const int64_t total = batches * rows * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t s = i % cols, r = (i / cols) % rows, b = i / (cols * rows);
    y[(b * cols + s) * rows + r] = x[i];
  }
}

template <class T>
cudaError_t transpose_naive_typed(void* y, const void* x, int64_t batches, int64_t rows, int64_t cols,
                                  cudaStream_t st) {
  const int64_t total = batches * rows * cols;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>((total + 255) / 256, 1 << 20));
  transpose_naive_kernel<T><<<blocks, 256, 0, st>>>(static_cast<T*>(y), static_cast<const T*>(x), batches, rows, cols);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_row_naive(RowOp op, DType dtype, const RowArgs& a, cudaStream_t s) {
  switch (op) {
    case RowOp::layer_norm:
      return naive_op<RowOp::layer_norm>(dtype, a, s);
    case RowOp::rms_norm:
      return naive_op<RowOp::rms_norm>(dtype, a, s);
    case RowOp::softmax:
      return naive_op<RowOp::softmax>(dtype, a, s);
    case RowOp::softmax_dropout:
      return naive_op<RowOp::softmax_dropout>(dtype, a, s);
    case RowOp::add_rms_norm:  // no naive form: the comparisons are the four row operations
      break;
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_transpose_naive(DType dtype, void* y, const void* x, int64_t batches, int64_t rows, int64_t cols,
                                   cudaStream_t st) {
  if (dtype == DType::f32) return transpose_naive_typed<float>(y, x, batches, rows, cols, st);
  return transpose_naive_typed<uint16_t>(y, x, batches, rows, cols, st);
}

}  // namespace gsq::probes
