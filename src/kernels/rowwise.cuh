// Row operations over the last dimension: LayerNorm, RMSNorm, softmax, softmax + dropout.
//
// A row that fits in registers (up to 4 accesses of 16 bytes for each of up to 1024 threads) is read once: each thread
// keeps its VPT packs, the row's threads reduce through shuffles and shared memory, and every value is written once, so
// the kernel moves the same bytes as a copy. Rows of up to 1024 elements get a warp each, wider ones a block. Wider
// rows still get a block of 1024 threads that reads the row twice (statistics, then output; the second read mostly hits
// the L2). Widths that are not a multiple of 16 bytes, or pointers not 16-byte aligned, take the same kernels with
// one element per access.
#pragma once

#include "kernels/device_common.cuh"
#include "kernels/philox.hpp"

namespace gsq::kernels {
namespace {  // each .cu file instantiates its own operations

// Softmax output from the row's exponentials e = exp(x - max): e * scale (scale = 1 / sum), then dropout.
template <RowOp OP, class T, int VEC>
__device__ __forceinline__ void finish_softmax(const RowArgs& a, int64_t row, int64_t idx, float (&v)[VEC], float scale,
                                               Pack<T, VEC>& out) {
#pragma unroll
  for (int k = 0; k < VEC; ++k) v[k] *= scale;
  if constexpr (OP == RowOp::softmax_dropout) {
    const uint64_t first = static_cast<uint64_t>(row) * a.cols + idx * VEC;
    const float keep_scale = 1.0f / (1.0f - a.p);
    if constexpr (VEC % 4 == 0) {  // first % 8 is 0 (or 4 for f32): one Philox call for the whole access
      const Philox4 r = dropout_words(first / 8, a.seed, a.offset);
      if constexpr (VEC == 8) {  // words picked at compile time: no select chains
#pragma unroll
        for (int k = 0; k < 8; ++k) v[k] = dropout_keep_in(r, k, a.p) ? v[k] * keep_scale : 0.0f;
      } else {
        const Philox4 w = first % 8 == 0 ? r : Philox4{{r.v[2], r.v[3], 0, 0}};  // upper half of the group
#pragma unroll
        for (int k = 0; k < VEC; ++k) v[k] = dropout_keep_in(w, k, a.p) ? v[k] * keep_scale : 0.0f;
      }
    } else {
#pragma unroll
      for (int k = 0; k < VEC; ++k) v[k] = dropout_keep(first + k, a.p, a.seed, a.offset) ? v[k] * keep_scale : 0.0f;
    }
  }
#pragma unroll
  for (int k = 0; k < VEC; ++k) out.v[k] = Conv<T>::from(v[k]);
}

template <RowOp OP, class T, int VEC>
__device__ __forceinline__ void finish_row(const RowArgs& a, int64_t row, int64_t idx, const Pack<T, VEC>& in,
                                           float mean, float scale, Pack<T, VEC>& out) {
  // LayerNorm: (x - mean) * scale * w + b; RMSNorm: x * scale * w (mean = 0); softmax: exp(x - mean) * scale where
  // mean is the row maximum and scale 1 / sum.
  if constexpr (OP == RowOp::layer_norm || OP == RowOp::rms_norm) {
    Pack<T, VEC> w{}, b{};
    if (a.weight) w = static_cast<const Pack<T, VEC>*>(a.weight)[idx];
    if (OP == RowOp::layer_norm && a.bias) b = static_cast<const Pack<T, VEC>*>(a.bias)[idx];
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      float v = (Conv<T>::to(in.v[k]) - mean) * scale;
      if (a.weight) v *= Conv<T>::to(w.v[k]);
      if (OP == RowOp::layer_norm && a.bias) v += Conv<T>::to(b.v[k]);
      out.v[k] = Conv<T>::from(v);
    }
  } else {
    float v[VEC];
#pragma unroll
    for (int k = 0; k < VEC; ++k) v[k] = __expf(Conv<T>::to(in.v[k]) - mean);
    finish_softmax<OP, T, VEC>(a, row, idx, v, scale, out);
  }
}

// Up to 4 packs per thread in blocks of up to 1024 threads: 64 registers, no spills. (16 packs for 512 threads made
// the compiler keep 128 converted floats and spill for bf16; such rows take the two-pass kernel instead.)
template <RowOp OP, class T, int VEC, int VPT>
__global__ void __launch_bounds__(1024) row_kernel(RowArgs a, int tpr) {
  __shared__ float scratch[32];
  using P = Pack<T, VEC>;
  const int lane = threadIdx.x & (tpr - 1);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
  const bool row_ok = row < a.rows;
  const int64_t nvec = a.cols / VEC;
  const P* x = reinterpret_cast<const P*>(static_cast<const T*>(a.x) + (row_ok ? row : 0) * a.cols);
  P p[VPT];
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const int64_t idx = lane + static_cast<int64_t>(j) * tpr;
    if (row_ok && idx < nvec) p[j] = x[idx];
  }
  auto valid = [&](int j) { return row_ok && lane + static_cast<int64_t>(j) * tpr < nvec; };
  // Folds f over every value of this thread's part of the row.
  auto fold = [&](float acc, auto&& f) {
#pragma unroll
    for (int j = 0; j < VPT; ++j)
      if (valid(j))
#pragma unroll
        for (int k = 0; k < VEC; ++k) acc = f(acc, Conv<T>::to(p[j].v[k]));
    return acc;
  };
  // Writes every pack of this thread's part of the row, finish(j, idx, out) making pack j.
  auto store = [&](auto&& finish) {
    P* y = reinterpret_cast<P*>(static_cast<T*>(a.y) + (row_ok ? row : 0) * a.cols);
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      if (!valid(j)) continue;
      const int64_t idx = lane + static_cast<int64_t>(j) * tpr;
      P out;
      finish(j, idx, out);
      y[idx] = out;
    }
  };
  const float n = static_cast<float>(a.cols);
  float mean = 0, scale = 1;
  if constexpr (OP == RowOp::layer_norm || OP == RowOp::rms_norm) {
    // Two passes over the registers: the mean (LayerNorm only; RMSNorm centres on 0), then the squared deviations.
    if constexpr (OP == RowOp::layer_norm)
      mean = row_allreduce(fold(0.0f, [](float acc, float v) { return acc + v; }), tpr, scratch, SumOp{}) / n;
    const float q = fold(0.0f, [mean](float acc, float v) { return acc + (v - mean) * (v - mean); });
    scale = rsqrtf(row_allreduce(q, tpr, scratch, SumOp{}) / n + a.eps);
  } else {
    // Softmax: each exponential is computed once and kept (VPT * VEC floats) for the output.
    mean =
        row_allreduce(fold(MaxOp::identity(), [](float acc, float v) { return fmaxf(acc, v); }), tpr, scratch, MaxOp{});
    float e[VPT][VEC], s = 0;
#pragma unroll
    for (int j = 0; j < VPT; ++j)
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        e[j][k] = valid(j) ? __expf(Conv<T>::to(p[j].v[k]) - mean) : 0.0f;
        s += e[j][k];
      }
    scale = 1.0f / row_allreduce(s, tpr, scratch, SumOp{});
    store([&](int j, int64_t idx, P& out) { finish_softmax<OP, T, VEC>(a, row, idx, e[j], scale, out); });
    return;
  }
  store([&](int j, int64_t idx, P& out) { finish_row<OP, T, VEC>(a, row, idx, p[j], mean, scale, out); });
}

// Rows too wide for registers: one block of 1024 threads per row, statistics in one pass, output in a second. Each
// thread has kUnroll accesses in flight per step; the second read of a row mostly hits the L2.
template <RowOp OP, class T, int VEC>
__global__ void __launch_bounds__(1024) row_kernel_wide(RowArgs a) {
  __shared__ float scratch[32];
  using P = Pack<T, VEC>;
  constexpr int kThreads = 1024, kUnroll = 4;
  const int64_t row = blockIdx.x, nvec = a.cols / VEC;
  const P* x = reinterpret_cast<const P*>(static_cast<const T*>(a.x) + row * a.cols);
  // Visits every pack of the row, kUnroll loads issued before any is used.
  auto for_each_pack = [&](auto&& f) {
    for (int64_t base = threadIdx.x; base < nvec; base += kThreads * kUnroll) {
      P v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (base + u * kThreads < nvec) v[u] = x[base + u * kThreads];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (base + u * kThreads < nvec) f(base + u * kThreads, v[u]);
    }
  };
  const float n = static_cast<float>(a.cols);
  float mean = 0, scale = 1;
  if constexpr (OP == RowOp::layer_norm || OP == RowOp::rms_norm) {
    // LayerNorm sums are shifted by the row's first element, which keeps them exact enough for rows whose mean is
    // far from zero; RMSNorm needs only the sum of squares.
    const float shift = OP == RowOp::layer_norm ? Conv<T>::to(static_cast<const T*>(a.x)[row * a.cols]) : 0.0f;
    float s1 = 0, s2 = 0;
    for_each_pack([&](int64_t, const P& v) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const float d = Conv<T>::to(v.v[k]) - shift;
        s1 += d, s2 += d * d;
      }
    });
    s2 = row_allreduce(s2, kThreads, scratch, SumOp{}) / n;
    if constexpr (OP == RowOp::layer_norm) {
      s1 = row_allreduce(s1, kThreads, scratch, SumOp{}) / n;
      mean = shift + s1;
      scale = rsqrtf(fmaxf(s2 - s1 * s1, 0.0f) + a.eps);
    } else {
      scale = rsqrtf(s2 + a.eps);
    }
  } else {
    float m = MaxOp::identity(), s = 0;  // online: running maximum and the sum rescaled to it
    for_each_pack([&](int64_t, const P& v) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        const float f = Conv<T>::to(v.v[k]);
        if (f > m) s *= __expf(m - f), m = f;
        s += __expf(f - m);
      }
    });
    mean = row_allreduce(m, kThreads, scratch, MaxOp{});
    scale = 1.0f / row_allreduce(m == MaxOp::identity() ? 0.0f : s * __expf(m - mean), kThreads, scratch, SumOp{});
  }
  P* y = reinterpret_cast<P*>(static_cast<T*>(a.y) + row * a.cols);
  for_each_pack([&](int64_t i, const P& v) {
    P out;
    finish_row<OP, T, VEC>(a, row, i, v, mean, scale, out);
    y[i] = out;
  });
}

template <RowOp OP, class T, int VEC>
cudaError_t launch_planned(const RowArgs& a, const RowPlan& plan, cudaStream_t s) {
  if (plan.accesses_per_thread == 0) {
    row_kernel_wide<OP, T, VEC><<<static_cast<unsigned>(a.rows), 1024, 0, s>>>(a);
    return cudaGetLastError();
  }
  const int64_t rows_per_block = plan.block_threads / plan.threads_per_row;
  const auto grid = static_cast<unsigned>((a.rows + rows_per_block - 1) / rows_per_block);
  switch (plan.accesses_per_thread) {
    case 1:
      row_kernel<OP, T, VEC, 1><<<grid, plan.block_threads, 0, s>>>(a, plan.threads_per_row);
      break;
    case 2:
      row_kernel<OP, T, VEC, 2><<<grid, plan.block_threads, 0, s>>>(a, plan.threads_per_row);
      break;
    case 4:
      row_kernel<OP, T, VEC, 4><<<grid, plan.block_threads, 0, s>>>(a, plan.threads_per_row);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

template <RowOp OP, class T>
cudaError_t launch_row_typed(const RowArgs& a, cudaStream_t s) {
  const DType dt = sizeof(T) == 4 ? DType::f32 : (std::is_same_v<T, __half> ? DType::f16 : DType::bf16);
  const bool aligned = (reinterpret_cast<uintptr_t>(a.x) | reinterpret_cast<uintptr_t>(a.y) |
                        reinterpret_cast<uintptr_t>(a.weight) | reinterpret_cast<uintptr_t>(a.bias)) %
                           16 ==
                       0;
  const RowPlan plan = plan_row(dt, a.cols, aligned);
  if (plan.vector) return launch_planned<OP, T, 16 / sizeof(T)>(a, plan, s);
  return launch_planned<OP, T, 1>(a, plan, s);
}

template <RowOp OP>
cudaError_t launch_row_op(DType dtype, const RowArgs& a, cudaStream_t s) {
  switch (dtype) {
    case DType::f32:
      return launch_row_typed<OP, float>(a, s);
    case DType::f16:
      return launch_row_typed<OP, __half>(a, s);
    case DType::bf16:
      return launch_row_typed<OP, __nv_bfloat16>(a, s);
  }
  return cudaErrorInvalidValue;
}

}  // namespace
}  // namespace gsq::kernels
