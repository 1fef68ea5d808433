// Where each top kernel sits against this GPU's two roofs, from the hardware counters sampled beside the trace
// (`trace --gpu-metrics`): NVML GPM gives, per interval, DRAM bandwidth as a fraction of peak and the tensor/FP pipes'
// activity as a fraction of their peak. An interval that one kernel fills (≥ 80% of it by default) belongs to that
// kernel, so kernels that run long enough get a speed-of-light point: memory %, compute %, and which roof is closer.
// Kernels shorter than the sampling interval share intervals and get no point; the reason says so.
#pragma once

#include "analyze/analysis.hpp"
#include "analyze/model.hpp"
#include "core/table.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace gsq::analyze {

struct RooflinePoint {
  std::string kernel;  // normalised name, as in Analysis::top_kernels
  int64_t total_ns = 0;
  double share = 0;                    // of kernel time
  size_t samples = 0;                  // counter intervals this kernel filled
  double memory = -1;                  // DRAM bandwidth, fraction of peak (-1: not sampled)
  double compute = -1;                 // busiest pipe (tensor, fp16, fp32, fp64), fraction of its peak
  std::string pipe;                    // which pipe that was
  double dram_bytes_per_s = -1;        // memory × the device's DRAM peak (-1: peak unknown)
  std::map<std::string, double> mean;  // every GPM ratio over those intervals (sm_active, sm_occupancy, ...)
  std::string bound;                   // memory, compute, latency (neither roof above 60%); "" without samples
  std::string reason;                  // why there is no point
};

struct Roofline {
  std::string device;
  double dram_peak_bytes_per_s = 0;
  double min_fill = 0.8;
  std::vector<RooflinePoint> points;
  std::string note;  // why there is no roofline at all ("" when there is one)
};

[[nodiscard]] Roofline roofline(const Trace& t, const Analysis& a, double min_fill = 0.8);
[[nodiscard]] nlohmann::json to_json(const Roofline& r);
[[nodiscard]] Table roofline_table(const Roofline& r);

}  // namespace gsq::analyze
