// fp64 references of the kernels on the CPU, and the host-side dtype conversions the tests and benchmarks use.
#pragma once

#include "kernels/launch.hpp"

#include <cstdint>
#include <vector>

namespace gsq::kernels::ref {

// Raw device-format values (4 or 2 bytes each) to double, and double to raw with round-to-nearest-even.
[[nodiscard]] std::vector<double> to_double(DType t, const void* raw, size_t n);
[[nodiscard]] std::vector<uint8_t> from_double(DType t, const std::vector<double>& v);

// weight / bias may be empty (1 / 0).
[[nodiscard]] std::vector<double> layer_norm(const std::vector<double>& x, const std::vector<double>& weight,
                                             const std::vector<double>& bias, int64_t rows, int64_t cols, double eps);
[[nodiscard]] std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<double>& weight,
                                           int64_t rows, int64_t cols, double eps);
// The residual add + RMSNorm: the new residual x + residual rounded to the dtype `t`, and RMSNorm of it.
struct AddRmsNorm {
  std::vector<double> y, residual;
};
[[nodiscard]] AddRmsNorm add_rms_norm(DType t, const std::vector<double>& x, const std::vector<double>& residual,
                                      const std::vector<double>& weight, int64_t rows, int64_t cols, double eps);
[[nodiscard]] std::vector<double> softmax(const std::vector<double>& x, int64_t rows, int64_t cols);
[[nodiscard]] std::vector<double> softmax_dropout(const std::vector<double>& x, int64_t rows, int64_t cols, float p,
                                                  uint64_t seed, uint64_t offset);
// y[b][s][r] = x[b][r][s]
[[nodiscard]] std::vector<double> transpose(const std::vector<double>& x, int64_t batches, int64_t rows, int64_t cols);

// Relative error bound for outputs of this dtype (about one unit in the last place, plus fp32 arithmetic).
[[nodiscard]] double tolerance(DType t);
// Smallest positive subnormal of the dtype: outputs that small are rounded on an absolute grid, not a relative one.
[[nodiscard]] double subnormal_step(DType t);
struct ErrorReport {
  double max_rel = 0;  // max (|got - want| - atol) / (|want| + floor), floor = 10% of the RMS of want
  int64_t worst = -1;  // index of the worst element
  int64_t bad = 0;     // elements beyond the bound
};
[[nodiscard]] ErrorReport compare(const std::vector<double>& got, const std::vector<double>& want, double rtol,
                                  double atol = 0);

}  // namespace gsq::kernels::ref
