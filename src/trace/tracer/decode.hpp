// CUPTI activity records → gpusqueeze trace records. Uses only cupti.h's record layouts (no libcupti call), so it is
// tested on any machine with synthetic records (tests/trace/test_decode.cpp).
#pragma once

#include "trace/format.hpp"

#include <cupti.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gsq::trace::tracer {

// "cudaLaunchKernel_v7000" → "cudaLaunchKernel", "cudaMemcpyAsync_ptsz_v7000" → "cudaMemcpyAsync".
[[nodiscard]] std::string clean_api_name(std::string name);
// The calls whose CPU side the analyzer uses: launches, copies, memsets, waits, allocations.
[[nodiscard]] bool wanted_api(std::string_view clean_name);
// The demangled kernel name, or the mangled one when it does not demangle; "(unknown kernel)" for null.
[[nodiscard]] std::string demangle(const char* name);

// Decodes one writer thread's stream of activity records. Kernel names are interned once per distinct CUPTI name
// pointer; NVTX start/end markers are paired into one range record; overhead records are summed, not kept.
class Decoder {
 public:
  using Intern = std::function<uint32_t(std::string_view)>;
  // `runtime_names` / `driver_names`: string ids of the API functions by CUPTI callback id (0 = unknown).
  Decoder(Intern intern, const std::vector<uint32_t>& runtime_names, const std::vector<uint32_t>& driver_names)
      : intern_(std::move(intern)), runtime_names_(runtime_names), driver_names_(driver_names) {}

  // The record for `a`, or nullopt when it yields none (an unknown kind, an overhead record, an open range).
  [[nodiscard]] std::optional<Record> decode(const CUpti_Activity& a);

  [[nodiscard]] uint64_t overhead_ns() const noexcept { return overhead_ns_; }
  [[nodiscard]] uint64_t overhead_records() const noexcept { return overhead_records_; }

 private:
  Intern intern_;
  const std::vector<uint32_t>& runtime_names_;
  const std::vector<uint32_t>& driver_names_;
  std::unordered_map<const char*, uint32_t> kernel_names_;
  std::unordered_map<uint32_t, Record> open_ranges_;
  uint64_t overhead_ns_ = 0, overhead_records_ = 0;
};

}  // namespace gsq::trace::tracer
