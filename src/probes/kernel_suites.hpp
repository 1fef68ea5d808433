// What the `kernels` bench suite and the tests need beyond the C ABI.
#pragma once

#include "bench/runner.hpp"
#include "core/table.hpp"
#include "gpusqueeze/kernels.h"
#include "kernels/launch.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gsq::probes {

using kernels::DType;

// The `kernels` suite: ours and naive versions of each kernel, and cudaMemcpy D2D of the same bytes.
[[nodiscard]] bench::Suite kernels_suite();

// Throws bad_input with the library's message unless `s` is GSQ_SUCCESS.
void check_status(gsq_status s);
// "8192x8192" or "32x256x56x56": exactly `count` positive sizes (Ki/Mi suffixes allowed), else nullopt.
[[nodiscard]] std::optional<std::vector<int64_t>> parse_dims(const std::string& s, size_t count);

// The `quant` suite: W4A16 and W8A16 against cuBLAS fp16 over M = 1…16 and the decoding shapes.
[[nodiscard]] bench::Suite quant_suite();
// Per shape and M: times (cold), speedups over cuBLAS fp16, bytes moved per second against cudaMemcpy D2D.
[[nodiscard]] Table quant_table(const bench::Run& run);

[[nodiscard]] std::optional<DType> parse_dtype(const std::string& s);  // "f32"/"fp32"/"float32", "f16", "bf16"
[[nodiscard]] const char* dtype_name(DType t);

// Each kernel's bandwidth next to cudaMemcpy D2D measured in the same run: the "≥ 0.90 × copy" table.
[[nodiscard]] Table copy_ratio_table(const bench::Run& run);

}  // namespace gsq::probes
