// Sweeps the W4A16 or W8A16 kernels' configurations on the decoding shapes, next to the shipped dispatch, cuBLAS (fp16
// or bf16) and cudaMemcpy D2D, all in one process: what quant.cu's dispatch table was chosen from. CUDA-core warp
// kernels ("warp": R channels per warp, U chunks in flight, K split KS) and block kernels ("block": NPW channels per
// block); tensor-core kernels ("mma": RT m-tiles of 16 channels per warp, S cp.async stages, KS). Each variant's
// output is checked against the shipped kernel's on the same inputs.
//
//   quant_tune [--int8] [--bf16] [--shapes 8192x8192,...] [--m 1,2,4,8,16] [--asymmetric] [--launches 200] [--reps 7]
//
// --bf16: bf16 activations and outputs (cuBLAS in bf16 beside them); fp16 otherwise.
//
// Weights rotate through copies that together exceed three L2s, so every launch reads them from DRAM. Prints a table
// (µs per launch, median of reps batches) and the best variant per (shape, M).
#include "kernels/launch.hpp"
#include "kernels/quant_kernels.cuh"
#include "quant_tune_kernels.cuh"
#include "tune_support.cuh"

#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace gsq::kernels;
using namespace gsq::kernels::quant_detail;
using tune::split;
using tune::time_us;

namespace {

struct Args {  // y and x in the run's activation type T
  void* y;
  const void* x;
  const void* w;
  const void* p;
  int m;
  int64_t n, k;
};
using Launch = std::function<void(const Args&, cudaStream_t)>;

struct Variant {
  std::string name;
  int mt;
  Launch launch;
};

template <class T, bool INT4, int MT, int R, int U, int KS>
Variant warp_variant() {
  char name[64];
  std::snprintf(name, sizeof name, "warp R=%d U=%d KS=%d", R, U, KS);
  return {name, MT, [](const Args& a, cudaStream_t s) {
            constexpr int rows_per_block = (kWarps / KS) * R;
            const auto grid = static_cast<unsigned>((a.n + rows_per_block - 1) / rows_per_block);
            if constexpr (INT4) {
              w4a16_warp_kernel<T, MT, R, U, KS><<<grid, kWarps * 32, 0, s>>>(
                  static_cast<T*>(a.y), static_cast<const T*>(a.x), static_cast<const uint32_t*>(a.w),
                  static_cast<const __half2*>(a.p), nullptr, a.m, a.n, a.k, 128);
            } else {
              w8a16_warp_kernel<T, MT, R, U, KS><<<grid, kWarps * 32, 0, s>>>(
                  static_cast<T*>(a.y), static_cast<const T*>(a.x), static_cast<const uint8_t*>(a.w),
                  static_cast<const float*>(a.p), nullptr, a.m, a.n, a.k);
            }
          }};
}

template <class T, bool INT4, int MT, int NPW>
Variant block_variant() {
  char name[64];
  std::snprintf(name, sizeof name, "block NPW=%d", NPW);
  return {name, MT, [](const Args& a, cudaStream_t s) {
            const auto grid = static_cast<unsigned>((a.n + NPW - 1) / NPW);
            if constexpr (INT4)
              w4a16_kernel<T, MT, NPW><<<grid, kWarps * 32, 0, s>>>(
                  static_cast<T*>(a.y), static_cast<const T*>(a.x), static_cast<const uint32_t*>(a.w),
                  static_cast<const __half2*>(a.p), nullptr, a.m, a.n, a.k, 128);
            else
              w8a16_kernel<T, MT, NPW><<<grid, kWarps * 32, 0, s>>>(
                  static_cast<T*>(a.y), static_cast<const T*>(a.x), static_cast<const uint8_t*>(a.w),
                  static_cast<const float*>(a.p), nullptr, a.m, a.n, a.k);
          }};
}

template <class T, bool INT4, int MT, int RT, int S, int KS>
Variant mma_variant() {
  char name[64];
  std::snprintf(name, sizeof name, "mma RT=%d S=%d KS=%d", RT, S, KS);
  return {name, MT, [](const Args& a, cudaStream_t s) {
            constexpr int NT = MT <= 8 ? 1 : 2, rows_per_block = (kWarps / KS) * 16 * RT;
            const auto grid = static_cast<unsigned>((a.n + rows_per_block - 1) / rows_per_block);
            if constexpr (INT4)
              w4a16_mma_kernel<T, NT, RT, 4, S, KS><<<grid, kWarps * 32, 0, s>>>(
                  static_cast<T*>(a.y), static_cast<const T*>(a.x), static_cast<const uint32_t*>(a.w),
                  static_cast<const __half2*>(a.p), nullptr, a.m, a.n, a.k);
            else
              w8a16_mma_kernel<T, NT, RT, S, KS><<<grid, kWarps * 32, 0, s>>>(
                  static_cast<T*>(a.y), static_cast<const T*>(a.x), static_cast<const uint8_t*>(a.w),
                  static_cast<const float*>(a.p), nullptr, a.m, a.n, a.k);
          }};
}

template <class T, bool INT4, int MT, int RT, int S>
void add_mma_ks(std::vector<Variant>& v) {
  v.push_back(mma_variant<T, INT4, MT, RT, S, 1>());
  v.push_back(mma_variant<T, INT4, MT, RT, S, 2>());
  v.push_back(mma_variant<T, INT4, MT, RT, S, 4>());
}
template <class T, bool INT4, int MT>
void add_mma(std::vector<Variant>& v) {  // shared memory: RT = 2 fits 4 stages in the 48 KB of a static array
  add_mma_ks<T, INT4, MT, 1, 3>(v), add_mma_ks<T, INT4, MT, 1, 4>(v), add_mma_ks<T, INT4, MT, 1, 6>(v);
  add_mma_ks<T, INT4, MT, 1, 8>(v), add_mma_ks<T, INT4, MT, 2, 3>(v), add_mma_ks<T, INT4, MT, 2, 4>(v);
}

template <class T, bool INT4, int MT, int R, int KS>
void add_u(std::vector<Variant>& v) {
  v.push_back(warp_variant<T, INT4, MT, R, 1, KS>());
  v.push_back(warp_variant<T, INT4, MT, R, 2, KS>());
  if constexpr (MT <= 2) v.push_back(warp_variant<T, INT4, MT, R, 4, KS>());
}
template <class T, bool INT4, int MT, int R>
void add_ks(std::vector<Variant>& v) {
  add_u<T, INT4, MT, R, 1>(v);
  add_u<T, INT4, MT, R, 2>(v);
  add_u<T, INT4, MT, R, 4>(v);
}

template <class T, bool INT4>
std::vector<Variant> variants() {
  std::vector<Variant> v;
  add_ks<T, INT4, 1, 2>(v), add_ks<T, INT4, 1, 4>(v), add_ks<T, INT4, 1, 8>(v);
  add_ks<T, INT4, 2, 2>(v), add_ks<T, INT4, 2, 4>(v);
  add_ks<T, INT4, 4, 1>(v), add_ks<T, INT4, 4, 2>(v), add_ks<T, INT4, 4, 4>(v);
  add_ks<T, INT4, 8, 1>(v), add_ks<T, INT4, 8, 2>(v);
  add_ks<T, INT4, 16, 1>(v), add_ks<T, INT4, 16, 2>(v);
  v.push_back(block_variant<T, INT4, 8, 4>()), v.push_back(block_variant<T, INT4, 16, 2>());
  add_mma<T, INT4, 1>(v), add_mma<T, INT4, 2>(v), add_mma<T, INT4, 4>(v), add_mma<T, INT4, 8>(v);
  add_mma<T, INT4, 16>(v);
  return v;
}

// An activation of type T (fp16 or bf16) as a double.
template <class T>
double to_double(T v) {
  if constexpr (std::is_same_v<T, __half>)
    return __half2float(v);
  else
    return __bfloat162float(v);
}

__global__ void make_scales(float* p, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x)
    p[i] = 0.005f + 0.01f * static_cast<float>((static_cast<uint32_t>(i) * 2654435761u) >> 8) / 16777216.0f;
}

// (scale, offset) pairs: scale in [0.005, 0.015), offset -8·scale (symmetric) or a few scales off it (asymmetric).
__global__ void make_params(__half2* p, int64_t count, bool asymmetric) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    const uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
    const __half s = __float2half(0.005f + 0.01f * static_cast<float>(h >> 8) / 16777216.0f);
    const float z = asymmetric ? static_cast<float>(h % 16) : 8.0f;
    p[i] = __halves2half2(s, __float2half(-z * __half2float(s)));
  }
}

// The floor any GEMV of these weights meets: a plain read of the same bytes (16-byte loads, grid-stride, `unroll`
// loads in flight per thread), XOR-reduced so that the loads stay; the store never happens for fill_normal's data.
template <int Unroll>
__global__ void read_only(const uint4* __restrict__ src, size_t n, uint32_t* sink) {
  uint32_t acc = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride * Unroll) {
    uint4 v[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) v[u] = i + u * stride < n ? src[i + u * stride] : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < Unroll; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

struct Buffers {
  std::vector<void*> ptrs;
  ~Buffers() {
    for (void* p : ptrs) cudaFree(p);
  }
  void* get(size_t bytes) {
    void* p = nullptr;
    CHECK(cudaMalloc(&p, bytes));
    ptrs.push_back(p);
    return p;
  }
};

// Every shape and M of the run with activations of type T: the read floor, cuBLAS in T, the shipped dispatch and
// every variant, each checked against the shipped kernel's output.
template <class T>
int run(bool int4, bool asymmetric, const std::vector<std::string>& shapes, const std::vector<int>& ms, int launches,
        int reps, const cudaDeviceProp& prop, cudaStream_t s, cublasHandle_t h) {
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  constexpr DType kType = kBf16 ? DType::bf16 : DType::f16;
  constexpr cudaDataType kCublasType = kBf16 ? CUDA_R_16BF : CUDA_R_16F;
  const char* kName = kBf16 ? "bf16" : "fp16";
  const auto all = int4 ? variants<T, true>() : variants<T, false>();
  Buffers pool;
  {
    const size_t bytes = size_t{256} << 20;
    void* a = pool.get(bytes);
    void* b = pool.get(bytes);
    const double us =
        time_us(s, 20, reps, [&](int) { CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s)); });
    std::printf("cudaMemcpy D2D 256 MiB: %.1f µs, %.0f GB/s (read + write)\n", us, 2.0 * bytes / us / 1e3);
  }

  std::printf(
      "\n| shape NxK | M | kernel | µs | vs cuBLAS | weight GB/s | max err / max |y| "
      "|\n|---|---|---|---|---|---|---|\n");
  for (const auto& shape : shapes) {
    const int64_t n = std::stoll(shape.substr(0, shape.find('x'))), k = std::stoll(shape.substr(shape.find('x') + 1));
    const size_t w_bytes = static_cast<size_t>(int4 ? n * k / 2 : n * k),
                 p_bytes = static_cast<size_t>(int4 ? n * (k / 128) * 4 : n * 4),
                 f16_bytes = static_cast<size_t>(n * k * 2);
    const size_t copies = std::max<size_t>(2, ((size_t{192} << 20) + w_bytes - 1) / w_bytes);
    const size_t f16_copies = std::max<size_t>(2, ((size_t{192} << 20) + f16_bytes - 1) / f16_bytes);
    Buffers bufs;
    std::vector<void*> w, p, wf;
    for (size_t c = 0; c < copies; ++c) {
      w.push_back(bufs.get(w_bytes));
      CHECK(fill_normal(DType::f32, w.back(), static_cast<int64_t>(w_bytes / 4), 10 + c, s));
      p.push_back(bufs.get(p_bytes));
      if (int4)
        make_params<<<1024, 256, 0, s>>>(static_cast<__half2*>(p.back()), static_cast<int64_t>(p_bytes / 4),
                                         asymmetric);
      else
        make_scales<<<1024, 256, 0, s>>>(static_cast<float*>(p.back()), n);
    }
    for (size_t c = 0; c < f16_copies; ++c) {
      wf.push_back(bufs.get(f16_bytes));
      CHECK(fill_normal(kType, wf.back(), n * k, 90 + c, s));
    }
    auto* x = static_cast<T*>(bufs.get(static_cast<size_t>(16 * k * 2)));
    CHECK(fill_normal(kType, x, 16 * k, 3, s));
    auto* y = static_cast<T*>(bufs.get(static_cast<size_t>(16 * n * 2)));
    auto* y_ref = static_cast<T*>(bufs.get(static_cast<size_t>(16 * n * 2)));
    {  // the read floor of this shape's weights, best of a few grids
      auto* sink = static_cast<uint32_t*>(bufs.get(4));
      double floor_us = INFINITY;
      std::string floor_name;
      for (int blocks_per_sm : {4, 8, 16})
        for (int unroll : {1, 4}) {
          const auto grid = static_cast<unsigned>(prop.multiProcessorCount * blocks_per_sm);
          const double us = time_us(s, launches, reps, [&](int i) {
            const auto* src = static_cast<const uint4*>(w[static_cast<size_t>(i) % copies]);
            if (unroll == 1)
              read_only<1><<<grid, 256, 0, s>>>(src, w_bytes / 16, sink);
            else
              read_only<4><<<grid, 256, 0, s>>>(src, w_bytes / 16, sink);
          });
          if (us < floor_us)
            floor_us = us,
            floor_name = std::to_string(blocks_per_sm) + " blocks/SM, " + std::to_string(unroll) + " loads in flight";
        }
      std::printf("| %s | - | read floor of the weights (%s) | %.1f | | %.0f | |\n", shape.c_str(), floor_name.c_str(),
                  floor_us, w_bytes / floor_us / 1e3);
    }
    for (int m : ms) {
      const int mt = m <= 1 ? 1 : m <= 2 ? 2 : m <= 4 ? 4 : m <= 8 ? 8 : 16;
      const double cublas_us = time_us(s, launches, reps, [&](int i) {
        const float alpha = 1, beta = 0;
        cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), m, static_cast<int>(k), &alpha,
                     wf[static_cast<size_t>(i) % f16_copies], kCublasType, static_cast<int>(k), x, kCublasType,
                     static_cast<int>(k), &beta, y, kCublasType, static_cast<int>(n), CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT);
      });
      std::printf("| %s | %d | cuBLAS %s | %.1f | 1.00× | %.0f | |\n", shape.c_str(), m, kName, cublas_us,
                  f16_bytes / cublas_us / 1e3);
      CHECK(launch_quant_gemm(int4, kType, QuantArgs{y_ref, x, w[0], p[0], nullptr, m, n, k, int4 ? 128 : 0}, s));
      std::vector<T> ref(static_cast<size_t>(m * n)), got(ref.size());
      CHECK(cudaMemcpy(ref.data(), y_ref, ref.size() * 2, cudaMemcpyDeviceToHost));
      double ref_max = 0;
      for (auto v : ref) ref_max = std::max(ref_max, std::abs(to_double(v)));
      auto report = [&](const std::string& name, const Launch& launch) {
        CHECK(cudaMemsetAsync(y, 0xff, static_cast<size_t>(16 * n * 2), s));  // NaN poison
        launch(Args{y, x, w[0], p[0], m, n, k}, s);
        CHECK(cudaStreamSynchronize(s));
        CHECK(cudaMemcpy(got.data(), y, got.size() * 2, cudaMemcpyDeviceToHost));
        double err = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          const double d = std::abs(static_cast<double>(to_double(got[i])) - to_double(ref[i]));
          err = std::isfinite(d) ? std::max(err, d) : INFINITY;
        }
        const double us = time_us(s, launches, reps, [&](int i) {
          const auto c = static_cast<size_t>(i) % copies;
          launch(Args{y, x, w[c], p[c], m, n, k}, s);
        });
        std::printf("| %s | %d | %s | %.1f | %.2f× | %.0f | %.2g |\n", shape.c_str(), m, name.c_str(), us,
                    cublas_us / us, (w_bytes + p_bytes) / us / 1e3, ref_max > 0 ? err / ref_max : err);
        return us;
      };
      const double shipped = report("shipped", [&](const Args& a, cudaStream_t st) {
        CHECK(
            launch_quant_gemm(int4, kType, QuantArgs{a.y, a.x, a.w, a.p, nullptr, a.m, a.n, a.k, int4 ? 128 : 0}, st));
      });
      double best = shipped;
      std::string best_name = "shipped";
      for (const auto& v : all) {
        if (v.mt != mt) continue;
        const double us = report(v.name, v.launch);
        if (us < best) best = us, best_name = v.name;
      }
      std::printf("| %s | %d | best: %s | %.1f | %.2f× | | |\n", shape.c_str(), m, best_name.c_str(), best,
                  cublas_us / best);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> shapes{"4096x4096", "8192x8192", "8192x28672", "28672x8192"};
  std::vector<int> ms{1, 2, 4, 8, 16};
  bool asymmetric = false, int4 = true, bf16 = false;
  int launches = 200, reps = 7;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] { return tune::option_value(argc, argv, i); };
    if (a == "--shapes") {
      shapes = split(value());
    } else if (a == "--m") {
      ms.clear();
      for (const auto& m : split(value())) ms.push_back(std::stoi(m));
    } else if (a == "--int8") {
      int4 = false;
    } else if (a == "--bf16") {
      bf16 = true;
    } else if (a == "--asymmetric") {
      asymmetric = true;
    } else if (a == "--launches") {
      launches = std::stoi(value());
    } else if (a == "--reps") {
      reps = std::stoi(value());
    } else {
      std::fprintf(stderr,
                   "unknown argument %s\nusage: %s [--int8] [--bf16] [--shapes NxK,...] [--m 1,2,...] [--asymmetric]\n",
                   a.c_str(), argv[0]);
      return 1;
    }
  }
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs; %s, %s activations\n", prop.name, prop.multiProcessorCount,
              !int4        ? "W8A16"
              : asymmetric ? "W4A16, asymmetric"
                           : "W4A16, symmetric",
              bf16 ? "bf16" : "fp16");
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 2;
  cublasSetStream(h, s);
  const int rc = bf16 ? run<__nv_bfloat16>(int4, asymmetric, shapes, ms, launches, reps, prop, s, h)
                      : run<__half>(int4, asymmetric, shapes, ms, launches, reps, prop, s, h);
  cublasDestroy(h);
  return rc;
}
