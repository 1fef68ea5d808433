// The weight-only quantized GEMM kernels the library ships (quant.cu's dispatch launches them; bench/tune/quant_tune.cu
// sweeps their configurations on the device). See quant.cu for the design and quant.hpp for the weight layouts.
#pragma once

#include "kernels/quant_primitives.cuh"

namespace gsq::kernels::quant_detail {

// One chunk of 32 weights of each of a warp's R channels (lane: 4 words = weights 32c … 32c + 31 of each), added to
// acc[r][m]. The activations (8 per word, per row of X) come from L1 and are shared by the R channels; the group's
// (scale, offset) applies once per chunk. Σ x·w = s·Σ x·(u - 8) + (o + 8s)·Σ x, and o + 8s is exactly 0 for symmetric
// weights, so Σ x is only formed where a lane of the warp needs it. Lanes past the end (c ≥ chunks) read x as 0.
template <class T, int MT, int R>
__device__ __forceinline__ void w4_chunk(const uint4 (&wv)[R], const __half2 (&pv)[R], const T* __restrict__ x,
                                         int64_t k, int64_t c, int64_t chunks, int m_rows, float (&acc)[R][MT]) {
  using P = Pair<T>;
  using T2 = typename P::T2;
  float2 so[R];
  bool offset = false;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    so[r] = __half22float2(pv[r]);
    so[r].y += 8.0f * so[r].x;  // the centred offset o + 8s
    offset |= so[r].y != 0.0f;
  }
  offset = __any_sync(0xffffffffu, offset);
  float dot[R][MT] = {}, xs[MT] = {};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    T2 q[R][4];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      dequant_word<T>(word_of(wv[r], j), q[r]);
    }
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      uint4 raw = make_uint4(0, 0, 0, 0);
      if (m < m_rows && c < chunks) raw = __ldg(reinterpret_cast<const uint4*>(x + m * k + c * 32 + 8 * j));
      const T2 xv[4] = {P::from_bits(raw.x), P::from_bits(raw.y), P::from_bits(raw.z), P::from_bits(raw.w)};
      if (offset) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float2 f = P::to_float2(xv[i]);
          xs[m] += f.x + f.y;
        }
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {  // 8 products summed in pairs of T, then in fp32
        T2 h = __hmul2(xv[0], q[r][0]);
#pragma unroll
        for (int i = 1; i < 4; ++i) h = __hfma2(xv[i], q[r][i], h);
        const float2 f = P::to_float2(h);
        dot[r][m] += f.x + f.y;
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int m = 0; m < MT; ++m) acc[r][m] += so[r].x * dot[r][m] + so[r].y * xs[m];
}

// The first row of each of a warp's R channels in the weights and in the (scale, offset) pairs; rows past n repeat
// the last one (read, never stored).
template <int R>
__device__ __forceinline__ void w4_rows(const uint32_t* w, const __half2* params, int64_t n0, int64_t n, int64_t k,
                                        int group, const uint4* (&wrow)[R], const __half2* (&prow)[R]) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t row = n0 + r < n ? n0 + r : n - 1;
    wrow[r] = reinterpret_cast<const uint4*>(w + row * (k / 8));
    prow[r] = params + row * (k / group);
  }
}

// One warp owns R output channels and walks K (or 1/KS of it, KS warps of the block sharing the channels) in chunks
// of 32 weights: a lane reads one 16-byte chunk per channel, U chunks per channel in flight before any is used, so a
// warp streams 512 contiguous bytes of each of its channels per step.
template <class T, int MT, int R, int U, int KS>
__global__ void __launch_bounds__(kWarps * 32)
    w4a16_warp_kernel(T* __restrict__ y, const T* __restrict__ x, const uint32_t* __restrict__ w,
                      const __half2* __restrict__ params, const T* __restrict__ bias, int m_rows, int64_t n, int64_t k,
                      int group) {
  static_assert(kWarps % KS == 0, "the block's warps split K KS ways");
  constexpr int kRowGroups = kWarps / KS;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, part = warp % KS;
  const int64_t n0 = (static_cast<int64_t>(blockIdx.x) * kRowGroups + warp / KS) * R;
  const int64_t chunks = k / 32;
  const int chunk_shift = group == 128 ? 2 : 1;  // a group is 4 or 2 chunks
  const uint4* wrow[R];
  const __half2* prow[R];
  w4_rows<R>(w, params, n0, n, k, group, wrow, prow);
  float acc[R][MT] = {};
  for (int64_t c0 = part * 32 + lane; c0 - lane < chunks; c0 += KS * 32 * U) {
    uint4 wv[U][R];
    __half2 pv[U][R];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t c = c0 + u * KS * 32;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        wv[u][r] = c < chunks ? load_stream(wrow[r] + c) : make_uint4(0, 0, 0, 0);
        pv[u][r] = c < chunks ? prow[r][c >> chunk_shift] : __half2{};
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) w4_chunk<T, MT, R>(wv[u], pv[u], x, k, c0 + u * KS * 32, chunks, m_rows, acc);
  }
  warp_sums_store<R, MT, KS>(acc, n0, n, m_rows, [&](int m, int64_t col, float v) {
    if (bias) v += Conv<T>::to(bias[col]);
    y[m * n + col] = Conv<T>::from(v);
  });
}

// W4A16 on the tensor cores, from the gsq.w4/1 layout as it is. A warp owns 16·RT channels (m-tiles of mma
// m16n8k16) and walks K one quantization group (32·W weights) per step, KS warps of the block splitting the groups.
// Lane (g, q) = (lane / 4, lane % 4) reads W words of rows g and g + 8 of each m-tile: words W·q … W·q + W - 1 of the
// group, so the four lanes of a row read 16·W contiguous bytes. Each word's four pairs (k, k + 1), k = 0, 2, 4, 6,
// feed two mma k-steps: pairs 0, 1 as A's columns (2q, 2q + 1) and (2q + 8, 2q + 9), then pairs 2, 3; the mma's K
// order is a permutation of the group's, the same for A and for B, which lane (g, q) fills with the same pairs of
// row g of X (n-tiles of 8 rows: NT = 1 for M ≤ 8, 2 for M ≤ 16). The group's products accumulate in fp32 on the
// tensor cores, then scale by the rows' s; the offsets' Σx comes from the same mma with A = 1 (asymmetric only).
// Weights and (scale, offset) pairs stream through a per-thread ring of S shared-memory stages filled by cp.async
// S - 1 steps ahead of their use, so a warp has up to (S - 1) × RT × 1 KB in flight while it computes; a thread reads
// only what it copied itself, so the ring needs no barrier, and a stage is refilled one step after it was read.
template <class T, int NT, int RT, int W, int S, int KS>
__global__ void __launch_bounds__(kWarps * 32)
    w4a16_mma_kernel(T* __restrict__ y, const T* __restrict__ x, const uint32_t* __restrict__ w,
                     const __half2* __restrict__ params, const T* __restrict__ bias, int m_rows, int64_t n, int64_t k) {
  static_assert(kWarps % KS == 0 && S >= 2 && (W == 2 || W == 4));
  using P = Pair<T>;
  using T2 = typename P::T2;
  using Chunk = std::conditional_t<W == 4, uint4, uint2>;
  constexpr int kGroup = 32 * W, kRowGroups = kWarps / KS;
  __shared__ Chunk wring[S][RT][2][kWarps * 32];
  __shared__ __half2 pring[S][RT][2][kWarps * 32];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32, part = warp % KS, g = lane / 4, q = lane % 4;
  const int64_t n0 = (static_cast<int64_t>(blockIdx.x) * kRowGroups + warp / KS) * (16 * RT);
  const int64_t groups = k / kGroup, steps = (groups - part + KS - 1) / KS;  // groups part, part + KS, …
  // Running pointers to the next group to fill (Chunk 4·gi + q of a row holds lane q's words of group gi).
  const Chunk* wnext[RT][2];
  const __half2* pnext[RT][2];
#pragma unroll
  for (int r = 0; r < RT; ++r)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = min(n0 + 16 * r + 8 * h + g, n - 1);
      wnext[r][h] = reinterpret_cast<const Chunk*>(w + row * (k / 8)) + 4 * part + q;
      pnext[r][h] = params + row * groups + part;
    }
  int64_t filled = 0;
  auto fill = [&](int stage) {
    const bool valid = filled++ < steps;
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if constexpr (W == 4)
          cp_async16(&wring[stage][r][h][t], wnext[r][h], valid);
        else
          cp_async8(&wring[stage][r][h][t], wnext[r][h], valid);
        cp_async4(&pring[stage][r][h][t], pnext[r][h], valid);
        if (valid) wnext[r][h] += 4 * KS, pnext[r][h] += KS;
      }
    cp_async_commit();  // one group per step, empty past the end, so the wait count below stays S - 2
  };
#pragma unroll
  for (int s = 0; s < S - 1; ++s) fill(s);
  // X rows 8nt + g; rows past m_rows read the last row again (their columns of C are not stored).
  const T* xp[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) xp[nt] = x + min(8 * nt + g, m_rows - 1) * k + part * kGroup + 8 * W * q;
  float acc[RT][NT][4] = {};
  int stage = 0;
  for (int64_t i = 0; i < steps; ++i) {
    cp_async_wait<S - 2>();
    Chunk wv[RT][2];
    __half2 pv[RT][2];
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int h = 0; h < 2; ++h) wv[r][h] = wring[stage][r][h][t], pv[r][h] = pring[stage][r][h][t];
    fill(stage == 0 ? S - 1 : stage - 1);  // step i + S - 1 into the stage read in the previous step
    stage = stage == S - 1 ? 0 : stage + 1;
    uint4 xv[NT][W];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int j = 0; j < W; ++j) xv[nt][j] = __ldg(reinterpret_cast<const uint4*>(xp[nt] + 8 * j));
      xp[nt] += KS * kGroup;
    }
    float c[RT][NT][4] = {};
#pragma unroll
    for (int j = 0; j < W; ++j) {
      T2 qa[RT][2][4];
#pragma unroll
      for (int r = 0; r < RT; ++r)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          dequant_word<T>(word_of(wv[r][h], j), qa[r][h]);
        }
#pragma unroll
      for (int s = 0; s < 2; ++s)
#pragma unroll
        for (int r = 0; r < RT; ++r) {
          const uint32_t a[4] = {as_bits(qa[r][0][2 * s]), as_bits(qa[r][1][2 * s]), as_bits(qa[r][0][2 * s + 1]),
                                 as_bits(qa[r][1][2 * s + 1])};
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
            mma_16816<T>(c[r][nt], a, s ? xv[nt][j].z : xv[nt][j].x, s ? xv[nt][j].w : xv[nt][j].y);
        }
    }
    float2 so[RT][2];
    bool offset = false;
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        so[r][h] = __half22float2(pv[r][h]);
        so[r][h].y += 8.0f * so[r][h].x;  // the centred offset o + 8s
        offset |= so[r][h].y != 0.0f;
      }
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[r][nt][e] += so[r][e / 2].x * c[r][nt][e];
    if (__any_sync(0xffffffffu, offset)) {
      float xs[NT][4] = {};  // Σx of the group for X rows 8nt + 2q, 8nt + 2q + 1 (in c's layout)
      constexpr uint32_t one2 = std::is_same_v<T, __half> ? 0x3C003C00u : 0x3F803F80u;  // 1.0 in both halves
      const uint32_t a[4] = {one2, one2, one2, one2};
#pragma unroll
      for (int j = 0; j < W; ++j)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          mma_16816<T>(xs[nt], a, xv[nt][j].x, xv[nt][j].y);
          mma_16816<T>(xs[nt], a, xv[nt][j].z, xv[nt][j].w);
        }
#pragma unroll
      for (int r = 0; r < RT; ++r)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[r][nt][e] += so[r][e / 2].y * xs[nt][e];
    }
  }
  mma_sums_store<RT, NT, KS>(acc, n, m_rows, [&](int m, int64_t col, float v) {
    if (bias) v += Conv<T>::to(bias[col]);
    y[m * n + col] = Conv<T>::from(v);
  });
}

// W8A16 on the tensor cores, from the gsq.w8/1 layout as it is: w4a16_mma_kernel's plan with a step of 64 weights
// per row. Lane (g, q) reads 16 bytes (weights 16q … 16q + 15 of the step) of rows g and g + 8 of each m-tile; word j
// of them feeds one mma k-step, bytes (0, 1) as A's columns (2q, 2q + 1) and bytes (2, 3) as (2q + 8, 2q + 9), with
// the same pairs of X in B. fp16: a byte b becomes 1024 + b by a byte permute into the exponent of 1024 and one
// subtraction of 1152 gives b - 128 exactly; bf16 (7 mantissa bits) goes through fp32. The channel's scale applies
// once, at the end.
template <class T, int NT, int RT, int S, int KS>
__global__ void __launch_bounds__(kWarps * 32)
    w8a16_mma_kernel(T* __restrict__ y, const T* __restrict__ x, const uint8_t* __restrict__ w,
                     const float* __restrict__ scales, const T* __restrict__ bias, int m_rows, int64_t n, int64_t k) {
  static_assert(kWarps % KS == 0 && S >= 2);
  constexpr int kStep = 64, kRowGroups = kWarps / KS;
  __shared__ uint4 wring[S][RT][2][kWarps * 32];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32, part = warp % KS, g = lane / 4, q = lane % 4;
  const int64_t n0 = (static_cast<int64_t>(blockIdx.x) * kRowGroups + warp / KS) * (16 * RT);
  const int64_t steps = (k / kStep - part + KS - 1) / KS;  // steps part, part + KS, …
  const uint4* wnext[RT][2];
#pragma unroll
  for (int r = 0; r < RT; ++r)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      wnext[r][h] = reinterpret_cast<const uint4*>(w + min(n0 + 16 * r + 8 * h + g, n - 1) * k) + 4 * part + q;
  int64_t filled = 0;
  auto fill = [&](int stage) {
    const bool valid = filled++ < steps;
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        cp_async16(&wring[stage][r][h][t], wnext[r][h], valid);
        if (valid) wnext[r][h] += 4 * KS;
      }
    cp_async_commit();
  };
#pragma unroll
  for (int s = 0; s < S - 1; ++s) fill(s);
  const T* xp[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) xp[nt] = x + min(8 * nt + g, m_rows - 1) * k + part * kStep + 16 * q;
  float acc[RT][NT][4] = {};
  int stage = 0;
  for (int64_t i = 0; i < steps; ++i) {
    cp_async_wait<S - 2>();
    uint4 wv[RT][2];
#pragma unroll
    for (int r = 0; r < RT; ++r)
#pragma unroll
      for (int h = 0; h < 2; ++h) wv[r][h] = wring[stage][r][h][t];
    fill(stage == 0 ? S - 1 : stage - 1);
    stage = stage == S - 1 ? 0 : stage + 1;
    uint4 xv[NT][2];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      xv[nt][0] = __ldg(reinterpret_cast<const uint4*>(xp[nt]));
      xv[nt][1] = __ldg(reinterpret_cast<const uint4*>(xp[nt] + 8));
      xp[nt] += KS * kStep;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
#pragma unroll
      for (int r = 0; r < RT; ++r) {
        uint32_t a[4];  // rows g, g + 8: bytes (0, 1), then (2, 3) of word j
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t wd = word_of(wv[r][h], j);
          if constexpr (std::is_same_v<T, __half>) {
            const __half2 bias_1152 = __halves2half2(__ushort_as_half(0x6480), __ushort_as_half(0x6480));
            a[h] = as_bits(__hsub2(bits_as<__half2>(__byte_perm(wd, 0x64646464u, 0x4140)), bias_1152));
            a[2 + h] = as_bits(__hsub2(bits_as<__half2>(__byte_perm(wd, 0x64646464u, 0x4342)), bias_1152));
          } else {
            float f[4];
#pragma unroll
            for (int i = 0; i < 4; ++i)  // 2^23 + b as a float, minus 2^23 + 128: b - 128 exactly
              f[i] = __int_as_float(__byte_perm(wd, 0x4B000000u, 0x7650u | i)) - 8388736.0f;
            a[h] = as_bits(__floats2bfloat162_rn(f[0], f[1]));
            a[2 + h] = as_bits(__floats2bfloat162_rn(f[2], f[3]));
          }
        }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const uint4& xa = xv[nt][j / 2];
          mma_16816<T>(acc[r][nt], a, j % 2 ? xa.z : xa.x, j % 2 ? xa.w : xa.y);
        }
      }
    }
  }
  mma_sums_store<RT, NT, KS>(acc, n, m_rows, [&](int m, int64_t col, float v) {
    v *= scales[col];
    if (bias) v += Conv<T>::to(bias[col]);
    y[m * n + col] = Conv<T>::from(v);
  });
}

// W8A16 on the same plan as w4a16_warp_kernel: a warp owns R channels, a lane reads 16 weights (16 bytes) per channel
// per chunk, U chunks in flight; bytes become floats through the exponent trick, products accumulate in fp32 (int8
// times an activation can exceed what fp16 sums hold), and the channel's scale applies once at the end.
template <class T, int MT, int R, int U, int KS>
__global__ void __launch_bounds__(kWarps * 32)
    w8a16_warp_kernel(T* __restrict__ y, const T* __restrict__ x, const uint8_t* __restrict__ w,
                      const float* __restrict__ scales, const T* __restrict__ bias, int m_rows, int64_t n, int64_t k) {
  static_assert(kWarps % KS == 0, "the block's warps split K KS ways");
  constexpr int kRowGroups = kWarps / KS;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, part = warp % KS;
  const int64_t n0 = (static_cast<int64_t>(blockIdx.x) * kRowGroups + warp / KS) * R;
  const int64_t chunks = k / 16;
  const uint4* wrow[R];
#pragma unroll
  for (int r = 0; r < R; ++r) wrow[r] = reinterpret_cast<const uint4*>(w + (n0 + r < n ? n0 + r : n - 1) * k);
  float acc[R][MT] = {};
  for (int64_t c0 = part * 32 + lane; c0 - lane < chunks; c0 += KS * 32 * U) {
    uint4 wv[U][R];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t c = c0 + u * KS * 32;
        wv[u][r] =
            c < chunks ? load_stream(wrow[r] + c) : make_uint4(0x80808080u, 0x80808080u, 0x80808080u, 0x80808080u);
      }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t c = c0 + u * KS * 32;
#pragma unroll
      for (int j = 0; j < 4; ++j) {  // word j: weights 4j … 4j + 3 of the chunk
        float q[R][4];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const uint4& v = wv[u][r];
          const uint32_t wd = j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
#pragma unroll
          for (int i = 0; i < 4; ++i)  // 2^23 + u as a float, minus 2^23 + 128: u - 128 exactly
            q[r][i] = __int_as_float(__byte_perm(wd, 0x4B000000u, 0x7650u | i)) - 8388736.0f;
        }
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          uint2 raw = make_uint2(0, 0);
          if (m < m_rows && c < chunks) raw = __ldg(reinterpret_cast<const uint2*>(x + m * k + c * 16 + 4 * j));
          const float xf[4] = {Pair<T>::low_to_float(raw.x), Pair<T>::low_to_float(raw.x >> 16),
                               Pair<T>::low_to_float(raw.y), Pair<T>::low_to_float(raw.y >> 16)};
#pragma unroll
          for (int r = 0; r < R; ++r)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[r][m] = fmaf(xf[i], q[r][i], acc[r][m]);
        }
      }
    }
  }
  warp_sums_store<R, MT, KS>(acc, n0, n, m_rows, [&](int m, int64_t col, float v) {
    v *= scales[col];
    if (bias) v += Conv<T>::to(bias[col]);
    y[m * n + col] = Conv<T>::from(v);
  });
}

}  // namespace gsq::kernels::quant_detail
