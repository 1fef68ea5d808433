// Workloads with a known hardware character, for the hardware layer's device runs (`trace --gpu-metrics`):
//   hw_target matmul    ITER   bf16 GEMM 8192×8192×8192 (cuBLAS, fp32 accumulation): tensor pipes busy
//   hw_target memory    ITER   LayerNorm then softmax, bf16 32768×8192 (gpusqueeze kernels): DRAM bandwidth
//   hw_target fewblocks ITER   a dependent-FMA kernel, one block of 128 threads per SM: every SM busy, 4 of its
//                              64 warp slots used (low occupancy)
// Each iteration is one launch (memory: two). Prints one JSON line: mode, iterations, GPU time of the loop (CUDA
// events), time per iteration, and the mode's throughput.
#include "gpusqueeze/kernels.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define CHECK(x)                                                                       \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(3);                                                                    \
    }                                                                                  \
  } while (0)

namespace {

__global__ void fill_bf16(__nv_bfloat16* x, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    x[i] = __float2bfloat16(static_cast<float>(h & 0xffff) / 32768.0f - 1.0f);
  }
}

// A chain of dependent FMAs: one warp issues one instruction per ~4 cycles of latency, so with few warps resident the
// SM is active but mostly waiting.
__global__ void dependent_fma(float* out, int steps) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f;
  for (int i = 0; i < steps; ++i) a = fmaf(a, b, 1e-7f);
  if (a == 12345.678f) out[threadIdx.x] = a;  // never true; keeps the chain alive
}

void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: cuBLAS status %d\n", what, static_cast<int>(s));
    std::exit(3);
  }
}

void check_gsq(gsq_status s) {
  if (s != GSQ_SUCCESS) {
    std::fprintf(stderr, "gpusqueeze kernel: %s\n", gsq_last_error());
    std::exit(3);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: hw_target matmul|memory|fewblocks ITERATIONS\n");
    return 2;
  }
  const std::string mode = argv[1];
  const int iterations = std::atoi(argv[2]);
  if (iterations <= 0 || (mode != "matmul" && mode != "memory" && mode != "fewblocks")) {
    std::fprintf(stderr, "usage: hw_target matmul|memory|fewblocks ITERATIONS (> 0)\n");
    return 2;
  }
  cudaStream_t stream{};
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start{}, stop{};
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  double work_per_iteration = 0;  // FLOP (matmul), bytes (memory), FMA (fewblocks)
  const char* unit = "";

  __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr;
  float* sink = nullptr;
  cublasHandle_t handle{};
  constexpr int n = 8192;
  constexpr int64_t rows = 32768, cols = 8192;
  int sms = 0;
  constexpr int steps = 1 << 20;

  if (mode == "matmul") {
    const size_t elems = size_t{n} * n;
    CHECK(cudaMalloc(&a, elems * 2));
    CHECK(cudaMalloc(&b, elems * 2));
    CHECK(cudaMalloc(&c, elems * 2));
    fill_bf16<<<1024, 256, 0, stream>>>(a, elems, 1);
    fill_bf16<<<1024, 256, 0, stream>>>(b, elems, 2);
    check_cublas(cublasCreate(&handle), "cublasCreate");
    check_cublas(cublasSetStream(handle, stream), "cublasSetStream");
    work_per_iteration = 2.0 * n * n * n;
    unit = "TFLOP/s";
  } else if (mode == "memory") {
    const size_t elems = size_t{rows} * cols;
    CHECK(cudaMalloc(&a, elems * 2));
    CHECK(cudaMalloc(&b, elems * 2));
    CHECK(cudaMalloc(&c, elems * 2));
    fill_bf16<<<1024, 256, 0, stream>>>(a, elems, 3);
    work_per_iteration = 4.0 * elems * 2;  // each of the two kernels reads and writes the tensor once
    unit = "GB/s";
  } else {
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaMalloc(&sink, 128 * sizeof(float)));
    work_per_iteration = static_cast<double>(sms) * 128 * steps;
    unit = "GFMA/s";
  }
  const float alpha = 1.0f, beta = 0.0f;
  auto iterate = [&]() {
    if (mode == "matmul") {
      check_cublas(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, CUDA_R_16BF, n, b, CUDA_R_16BF, n,
                                &beta, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx");
    } else if (mode == "memory") {
      check_gsq(gsq_layer_norm(b, a, nullptr, nullptr, rows, cols, 1e-5f, GSQ_BFLOAT16, stream));
      check_gsq(gsq_softmax(c, b, rows, cols, GSQ_BFLOAT16, stream));
    } else {
      dependent_fma<<<sms, 128, 0, stream>>>(sink, steps);
      CHECK(cudaGetLastError());
    }
  };
  iterate();  // warm-up: cuBLAS heuristics, module loading
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaEventRecord(start, stream));
  for (int i = 0; i < iterations; ++i) iterate();
  CHECK(cudaEventRecord(stop, stream));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  const double per_s = work_per_iteration * iterations / (ms / 1e3);
  const double scale = mode == "memory" || mode == "fewblocks" ? 1e9 : 1e12;
  std::printf(
      "{\"mode\": \"%s\", \"iterations\": %d, \"gpu_ms\": %.3f, \"ms_per_iteration\": %.5f, \"throughput\": %.2f, "
      "\"unit\": \"%s\"}\n",
      mode.c_str(), iterations, ms, ms / iterations, per_s / scale, unit);
  if (handle) cublasDestroy(handle);
  cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(sink);
  return 0;
}
