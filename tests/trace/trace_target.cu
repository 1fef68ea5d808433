// A CUDA program that does an exact, known amount of work, for the tracer's GPU tests:
//   trace_target N M K S [abort|hang]
// N kernels, M pageable and K pinned host-to-device copies of 1 MiB, S cudaStreamSynchronize calls, one NVTX range
// ("gsq-test-range") around the kernels, and one CUDA graph launch of a one-kernel graph. `abort` calls abort()
// after the work; `hang` writes its pid to $GSQ_TARGET_PID_FILE and sleeps, to be killed; `loop` writes its pid and
// then launches N kernels and a stream sync every 10 ms until killed (a stand-in for a server).
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(x)                                                                       \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      return 3;                                                                        \
    }                                                                                  \
  } while (0)

__global__ void bump(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 1.0001f + 1.0f;
}

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: trace_target N M K S [abort|hang]\n");
    return 2;
  }
  const int n = std::atoi(argv[1]), m = std::atoi(argv[2]), k = std::atoi(argv[3]), s = std::atoi(argv[4]);
  const char* mode = argc > 5 ? argv[5] : "";
  constexpr size_t bytes = 1 << 20;
  const int elems = static_cast<int>(bytes / sizeof(float));
  float* d = nullptr;
  float* pinned = nullptr;
  std::vector<float> pageable(elems, 1.0f);
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&d, bytes));
  CHECK(cudaMallocHost(&pinned, bytes));
  std::memcpy(pinned, pageable.data(), bytes);
  for (int i = 0; i < m; ++i) CHECK(cudaMemcpy(d, pageable.data(), bytes, cudaMemcpyHostToDevice));
  for (int i = 0; i < k; ++i) CHECK(cudaMemcpyAsync(d, pinned, bytes, cudaMemcpyHostToDevice, st));
  nvtxRangePushA("gsq-test-range");
  for (int i = 0; i < n; ++i) bump<<<(elems + 255) / 256, 256, 0, st>>>(d, elems);
  CHECK(cudaGetLastError());
  nvtxRangePop();
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  bump<<<(elems + 255) / 256, 256, 0, st>>>(d, elems);
  CHECK(cudaStreamEndCapture(st, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphLaunch(exec, st));
  for (int i = 0; i < s; ++i) CHECK(cudaStreamSynchronize(st));
  if (std::strcmp(mode, "abort") == 0) std::abort();
  if (std::strcmp(mode, "hang") == 0 || std::strcmp(mode, "loop") == 0) {
    if (const char* f = std::getenv("GSQ_TARGET_PID_FILE")) {
      if (FILE* out = std::fopen(f, "w")) {
        std::fprintf(out, "%d\n", getpid());
        std::fclose(out);
      }
    }
    if (std::strcmp(mode, "hang") == 0)
      for (;;) pause();
    for (;;) {
      for (int i = 0; i < n; ++i) bump<<<(elems + 255) / 256, 256, 0, st>>>(d, elems);
      CHECK(cudaStreamSynchronize(st));
      usleep(10000);
    }
  }
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFree(d));
  CHECK(cudaStreamDestroy(st));
  std::printf("done: %d kernels + 1 graph kernel, %d pageable, %d pinned copies, %d syncs\n", n, m, k, s);
  return 0;
}
