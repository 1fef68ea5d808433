#include "kernels/reference.hpp"

#include "kernels/philox.hpp"

#include <bit>
#include <cmath>
#include <cstring>

namespace gsq::kernels::ref {

namespace {

double half_to_double(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  double v;
  if (exp == 0)
    v = std::ldexp(man, -24);
  else if (exp == 31)
    v = man ? std::nan("") : INFINITY;
  else
    v = std::ldexp(1024 + man, exp - 25);
  return sign ? -v : v;
}

uint16_t double_to_half(double d) {
  // Via float (exact for every double that rounds to a half the same way, except rare double-rounding ties, which
  // inputs drawn as floats do not hit), then the IEEE round-to-nearest-even of float -> half.
  const auto f = std::bit_cast<uint32_t>(static_cast<float>(d));
  const uint32_t sign = (f >> 16) & 0x8000u;
  const int exp = static_cast<int>((f >> 23) & 0xff) - 127 + 15;
  uint32_t man = f & 0x7fffffu;
  if (((f >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (man ? 0x200u : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {  // subnormal half
    if (exp < -10) return static_cast<uint16_t>(sign);
    man |= 0x800000u;
    const int shift = 14 - exp;
    uint32_t h = man >> shift;
    const uint32_t rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(exp) << 10) | (man >> 13);
  const uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;  // may carry into the exponent: still correct
  return static_cast<uint16_t>(sign | h);
}

double bf16_to_double(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

uint16_t double_to_bf16(double d) {
  const auto f = std::bit_cast<uint32_t>(static_cast<float>(d));
  if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((f >> 16) | 0x40);  // NaN stays NaN
  return static_cast<uint16_t>((f + 0x7fffu + ((f >> 16) & 1)) >> 16);
}

double sum_row(const double* v, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += v[i];
  return s;
}

}  // namespace

std::vector<double> to_double(DType t, const void* raw, size_t n) {
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (t == DType::f32) {
      float f;
      std::memcpy(&f, static_cast<const char*>(raw) + 4 * i, 4);
      out[i] = f;
    } else {
      uint16_t h;
      std::memcpy(&h, static_cast<const char*>(raw) + 2 * i, 2);
      out[i] = t == DType::f16 ? half_to_double(h) : bf16_to_double(h);
    }
  }
  return out;
}

std::vector<uint8_t> from_double(DType t, const std::vector<double>& v) {
  std::vector<uint8_t> out(v.size() * dtype_size(t));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::f32) {
      const auto f = static_cast<float>(v[i]);
      std::memcpy(out.data() + 4 * i, &f, 4);
    } else {
      const uint16_t h = t == DType::f16 ? double_to_half(v[i]) : double_to_bf16(v[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

std::vector<double> layer_norm(const std::vector<double>& x, const std::vector<double>& weight,
                               const std::vector<double>& bias, int64_t rows, int64_t cols, double eps) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x.data() + r * cols;
    const auto n = static_cast<double>(cols);
    const double mean = sum_row(xr, cols) / n;
    double var = 0;
    for (int64_t c = 0; c < cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    const double rstd = 1.0 / std::sqrt(var / n + eps);
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = (xr[c] - mean) * rstd * (weight.empty() ? 1.0 : weight[c]) + (bias.empty() ? 0.0 : bias[c]);
  }
  return y;
}

AddRmsNorm add_rms_norm(DType t, const std::vector<double>& x, const std::vector<double>& residual,
                        const std::vector<double>& weight, int64_t rows, int64_t cols, double eps) {
  std::vector<double> sum(x.size());
  for (size_t i = 0; i < x.size(); ++i) sum[i] = x[i] + residual[i];
  AddRmsNorm out;
  const auto raw = from_double(t, sum);
  out.residual = to_double(t, raw.data(), sum.size());
  out.y = rms_norm(out.residual, weight, rows, cols, eps);
  return out;
}

std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<double>& weight, int64_t rows,
                             int64_t cols, double eps) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x.data() + r * cols;
    const auto n = static_cast<double>(cols);
    double ms = 0;
    for (int64_t c = 0; c < cols; ++c) ms += xr[c] * xr[c];
    const double scale = 1.0 / std::sqrt(ms / n + eps);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = xr[c] * scale * (weight.empty() ? 1.0 : weight[c]);
  }
  return y;
}

std::vector<double> softmax(const std::vector<double>& x, int64_t rows, int64_t cols) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x.data() + r * cols;
    double m = -INFINITY;
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, xr[c]);
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) s += std::exp(xr[c] - m);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = std::exp(xr[c] - m) / s;
  }
  return y;
}

std::vector<double> softmax_dropout(const std::vector<double>& x, int64_t rows, int64_t cols, float p, uint64_t seed,
                                    uint64_t offset) {
  std::vector<double> y = softmax(x, rows, cols);
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = dropout_keep(i, p, seed, offset) ? y[i] / (1.0 - static_cast<double>(p)) : 0.0;
  return y;
}

std::vector<double> transpose(const std::vector<double>& x, int64_t batches, int64_t rows, int64_t cols) {
  std::vector<double> y(x.size());
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t s = 0; s < cols; ++s) y[(b * cols + s) * rows + r] = x[(b * rows + r) * cols + s];
  return y;
}

double tolerance(DType t) {
  switch (t) {
    case DType::f32:
      return 2e-5;
    case DType::f16:
      return 1.5e-3;  // half ulp 4.9e-4, plus the fp32 statistics
    case DType::bf16:
      return 1.2e-2;  // half ulp 3.9e-3, plus the fp32 statistics
  }
  return 0;
}

double subnormal_step(DType t) {
  switch (t) {
    case DType::f32:
      return std::ldexp(1.0, -149);
    case DType::f16:
      return std::ldexp(1.0, -24);
    case DType::bf16:
      return std::ldexp(1.0, -133);
  }
  return 0;
}

ErrorReport compare(const std::vector<double>& got, const std::vector<double>& want, double rtol, double atol) {
  ErrorReport e;
  double rms = 0;
  for (double w : want) rms += w * w;
  rms = want.empty() ? 0 : std::sqrt(rms / static_cast<double>(want.size()));
  // Near-zero outputs carry the absolute error of their larger neighbours: measure against |want| + 10% of the RMS.
  const double floor = 0.1 * rms + 1e-30;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double rel =
        std::isnan(got[i]) ? INFINITY : std::max(0.0, std::abs(got[i] - want[i]) - atol) / (std::abs(want[i]) + floor);
    if (rel > rtol) ++e.bad;
    if (rel > e.max_rel || e.worst < 0) e.max_rel = std::max(e.max_rel, rel), e.worst = static_cast<int64_t>(i);
  }
  return e;
}

}  // namespace gsq::kernels::ref
