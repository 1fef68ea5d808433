// What the `kernels` bench suite and the tests need beyond the C ABI.
#pragma once

#include "bench/runner.hpp"
#include "core/table.hpp"
#include "kernels/launch.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gsq::kernels {

// The `kernels` suite: ours and naive versions of each kernel, and cudaMemcpy D2D of the same bytes.
[[nodiscard]] bench::Suite kernels_suite();

// cudaMemcpyAsync D2D of `bytes` (read + write counted): the copy ceiling both suites report against.
void memcpy_ceiling(bench::State& st);

// The `quant` suite: W4A16 and W8A16 against cuBLAS fp16 over M = 1…16 and the decoding shapes.
[[nodiscard]] bench::Suite quant_suite();
// Per shape and M: times (cold), speedups over cuBLAS fp16, bytes moved per second against cudaMemcpy D2D.
[[nodiscard]] Table quant_table(const bench::Run& run);

[[nodiscard]] std::optional<DType> parse_dtype(const std::string& s);  // "f32"/"fp32"/"float32", "f16", "bf16"
[[nodiscard]] const char* dtype_name(DType t);

// Each kernel's bandwidth next to cudaMemcpy D2D measured in the same run: the "≥ 0.90 × copy" table.
[[nodiscard]] Table copy_ratio_table(const bench::Run& run);

}  // namespace gsq::kernels
