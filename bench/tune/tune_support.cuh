// What the device tuners (quant_tune, row_tune) share: a CUDA error check that exits, option values, a comma-list
// splitter and the batch timing of back-to-back launches.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#define CHECK(call)                                                                              \
  do {                                                                                           \
    const cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(2);                                                                              \
    }                                                                                            \
  } while (0)

namespace tune {

// The value after option argv[i] (i moves onto it); exits with status 1 when the option is the last argument.
inline std::string option_value(int argc, char** argv, int& i) {
  if (i + 1 >= argc) {
    std::fprintf(stderr, "%s needs a value\n", argv[i]);
    std::exit(1);
  }
  return argv[++i];
}

inline std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t a = 0;
  while (a <= s.size()) {
    const size_t b = std::min(s.find(',', a), s.size());
    if (b > a) out.push_back(s.substr(a, b - a));
    a = b + 1;
  }
  return out;
}

// Median over reps of the mean µs per launch of a batch of `launches` calls of f(i), i counting every call (for
// rotating through copies of the inputs); 8 warm-up calls first.
inline double time_us(cudaStream_t s, int launches, int reps, const std::function<void(int)>& f) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 8; ++i) f(i);
  std::vector<double> t;
  int next = 0;
  for (int r = 0; r < reps; ++r) {
    CHECK(cudaEventRecord(a, s));
    for (int i = 0; i < launches; ++i) f(next++);
    CHECK(cudaEventRecord(b, s));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(1e3 * ms / launches);
  }
  CHECK(cudaGetLastError());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace tune
