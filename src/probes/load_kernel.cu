// A short, steady FMA load so doctor reads clocks, event reasons and the PCIe link while the GPU is busy.
#include "probes/load_kernel.hpp"

#include <cuda_runtime.h>

#include <chrono>
#include <thread>

namespace gsq::probes {

namespace {

__global__ void fma_load(float* out, int iterations) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 1e-4f;
  for (int i = 0; i < iterations; ++i) {
    a = fmaf(a, b, c);
    b = fmaf(b, 0.9999f, 1e-5f);
  }
  if (a == 12345.678f) out[blockIdx.x] = a + b;  // keeps the loop alive; practically never taken
}

std::string error_text(cudaError_t e, const char* what) {
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

}  // namespace

std::string run_load(int ordinal, double seconds, int tick_ms, void (*tick)(void*), void* ctx) {
  if (cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess) return error_text(e, "cudaSetDevice");
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal);
  float* out = nullptr;
  if (cudaError_t e = cudaMalloc(&out, sizeof(float) * static_cast<size_t>(sms) * 8); e != cudaSuccess) {
    return error_text(e, "cudaMalloc");
  }
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration<double>(seconds);
  auto next_tick = start;
  std::string err;
  // Each launch is ~10 ms of work; several in flight keep the GPU busy between ticks.
  while (std::chrono::steady_clock::now() < deadline) {
    for (int k = 0; k < 4; ++k) fma_load<<<sms * 8, 256>>>(out, 1 << 16);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
      err = error_text(e, "load kernel launch");
      break;
    }
    while (cudaStreamQuery(nullptr) == cudaErrorNotReady) {
      if (std::chrono::steady_clock::now() >= next_tick) {
        tick(ctx);
        next_tick += std::chrono::milliseconds(tick_ms);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess && err.empty()) err = error_text(e, "load kernel");
  cudaFree(out);
  return err;
}

}  // namespace gsq::probes
