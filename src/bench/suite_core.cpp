// Suite `core`: proves the harness on launch latency (with and without CUDA graphs), D2D copies and a cuBLAS GEMM.
#include "bench/benchmark.hpp"

#include "bench/device_kernels.hpp"
#include "core/error.hpp"
#include "cuda/cublas.hpp"
#include "cuda/raii.hpp"

#include <cuda_fp16.h>
#include <fmt/format.h>

#include <memory>

namespace gsq::bench {

namespace {

struct GraphExec {
  cudaGraphExec_t exec = nullptr;
  GraphExec() = default;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  ~GraphExec() {
    if (exec) GSQ_CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(exec));
  }
};

void launch_latency(State& st) {
  const bool graph = st.axis("graph") == "yes";
  constexpr int kPerGraph = 100;
  st.set_items_per_launch(graph ? kPerGraph : 1);
  st.also_host_paced();  // what users mean by launch cost is the CPU side: time it as the host issues launches too
  if (!graph) {
    st.exec([](cudaStream_t s) { launch_empty_kernel(s); });
    return;
  }
  // One graph of 100 empty kernels: the per-kernel cost with graphs is the sample divided by 100.
  cudaGraph_t g = nullptr;
  cuda::Stream capture = cuda::Stream::create();
  GSQ_CUDA_CHECK(cudaStreamBeginCapture(capture.get(), cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kPerGraph; ++i) launch_empty_kernel(capture.get());
  GSQ_CUDA_CHECK(cudaStreamEndCapture(capture.get(), &g));
  auto exec = std::make_shared<GraphExec>();
  GSQ_CUDA_CHECK(cudaGraphInstantiate(&exec->exec, g, 0));
  GSQ_CUDA_CHECK(cudaGraphDestroy(g));
  st.exec([exec](cudaStream_t s) { GSQ_CUDA_CHECK(cudaGraphLaunch(exec->exec, s)); });
}

}  // namespace

void memcpy_d2d(State& st) {
  const auto bytes = static_cast<size_t>(st.axis_int("bytes"));
  cuda::DeviceBuffer src = cuda::DeviceBuffer::create(bytes), dst = cuda::DeviceBuffer::create(bytes);
  launch_fill_kernel(src.as<float>(), bytes / sizeof(float), 7, st.stream());
  st.set_bytes_per_launch(2.0 * static_cast<double>(bytes));  // read + write, as BabelStream and nvbench count
  st.compare_to_dram_peak();
  st.exec([&](cudaStream_t s) {
    GSQ_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, s));
  });
}

namespace {

void copy_kernel_bench(State& st) {
  const auto bytes = static_cast<size_t>(st.axis_int("bytes"));
  const double fraction = std::stod(st.axis("grid_fraction"));
  if (bytes % 16 != 0) throw_bad_input(fmt::format("copy.kernel: bytes={} is not a multiple of 16", bytes));
  if (fraction <= 0 || fraction > 1) throw_bad_input("copy.kernel: grid_fraction must be in (0, 1]");
  int sms = 0;
  GSQ_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, st.device()));
  cuda::DeviceBuffer src = cuda::DeviceBuffer::create(bytes), dst = cuda::DeviceBuffer::create(bytes);
  launch_fill_kernel(src.as<float>(), bytes / sizeof(float), 11, st.stream());
  st.set_bytes_per_launch(2.0 * static_cast<double>(bytes));
  st.compare_to_dram_peak();
  st.exec([&](cudaStream_t s) {
    launch_copy_kernel(dst.get(), src.get(), bytes, sms, fraction, s);
    GSQ_CUDA_CHECK(cudaGetLastError());
  });
}

void cublas_gemm(State& st) {
  const auto n = static_cast<int>(st.axis_int("mnk"));
  const std::string& dtype = st.axis("dtype");
  if (dtype != "bf16" && dtype != "fp16") throw_bad_input("gemm.cublas: dtype must be fp16 or bf16");
  const cudaDataType_t t = dtype == "bf16" ? CUDA_R_16BF : CUDA_R_16F;
  const size_t elems = static_cast<size_t>(n) * static_cast<size_t>(n);
  cuda::DeviceBuffer a = cuda::DeviceBuffer::create(elems * 2), b = cuda::DeviceBuffer::create(elems * 2),
                     c = cuda::DeviceBuffer::create(elems * 2);
  // Byte patterns 0x3C and 0x3B are finite, non-zero values in both fp16 (about 1.06 and 0.90) and bf16 (about 0.012
  // and 0.003): never zeros, which tensor cores and compressible memory could treat specially.
  GSQ_CUDA_CHECK(cudaMemsetAsync(a.get(), 0x3C, elems * 2, st.stream()));
  GSQ_CUDA_CHECK(cudaMemsetAsync(b.get(), 0x3B, elems * 2, st.stream()));
  const cuda::CublasHandle handle(st.stream());
  cublasHandle_t h = handle.get();
  const auto gemm_ex = cuda::cublas().gemm_ex;  // looked up once, outside the timed calls
  const float alpha = 1.0f, beta = 0.0f;
  st.set_flops_per_launch(2.0 * n * static_cast<double>(n) * n);
  st.exec([&](cudaStream_t) {
    GSQ_CUBLAS_CHECK(gemm_ex(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.get(), t, n, b.get(), t, n, &beta, c.get(),
                             t, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  });
}

}  // namespace

Suite core_suite() {
  return {
      {"launch.empty",
       "empty kernel <<<1,1>>>: GPU time (cold), back-to-back GPU cost (batch), CPU-paced launch rate (host); "
       "graph=yes: 100 per graph",
       {{"graph", {"no", "yes"}}},
       launch_latency},
      {"copy.memcpy_d2d",
       "cudaMemcpyAsync device to device; bytes counted as read + write",
       {{"bytes", {"1Mi", "64Mi", "1Gi"}}},
       memcpy_d2d},
      {"copy.kernel",
       "float4 grid-stride copy kernel; grid_fraction < 1 starves it of blocks on purpose",
       {{"bytes", {"1Mi", "64Mi", "1Gi"}}, {"grid_fraction", {"1"}}},
       copy_kernel_bench},
      {"gemm.cublas",
       "cublasGemmEx square GEMM, fp32 accumulation",
       {{"mnk", {"1024", "4096", "8192"}}, {"dtype", {"bf16"}}},
       cublas_gemm},
  };
}

}  // namespace gsq::bench
