// Where NVML collection time goes, for tuning the exporter: with GSQ_NVML_PROFILE=1 in the environment every
// CostScope adds its wall and thread-CPU time to a table printed on stderr at exit. Off (one branch) otherwise.
#pragma once

#include <cstdint>

namespace gsq::gpu {

class CostScope {
 public:
  explicit CostScope(const char* what);
  ~CostScope();
  CostScope(const CostScope&) = delete;
  CostScope& operator=(const CostScope&) = delete;

 private:
  const char* what_;
  int64_t wall0_ = 0, cpu0_ = 0;
};

}  // namespace gsq::gpu
