// Where NVML collection time goes, for tuning the exporter: with GSQ_NVML_PROFILE=1 in the environment every
// CostScope adds its wall and thread-CPU time to a table the CLI prints on stderr when the command ends. Off (one
// branch) otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

struct CostRow {
  std::string section;
  uint64_t calls = 0;
  int64_t wall_ns = 0, cpu_ns = 0;
};
// What the scopes recorded so far, by section name; empty when GSQ_NVML_PROFILE is off.
[[nodiscard]] std::vector<CostRow> collection_costs();

}  // namespace gsq::gpu
