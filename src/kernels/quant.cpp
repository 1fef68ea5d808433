#include "kernels/quant.hpp"

#include "core/error.hpp"
#include "kernels/reference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gsq::kernels {

namespace {

void check_shape(int64_t n, int64_t k) {
  if (n < 64 || k < 64 || n % 64 != 0 || k % 64 != 0)
    throw_bad_input(fmt::format("weight [{}, {}]: N and K must be positive multiples of 64", n, k));
}

uint16_t to_half(double v) {
  const auto raw = ref::from_double(DType::f16, {v});
  return static_cast<uint16_t>(raw[0] | (raw[1] << 8));
}
double from_half(uint16_t h) {
  const uint8_t raw[2] = {static_cast<uint8_t>(h & 0xff), static_cast<uint8_t>(h >> 8)};
  return ref::to_double(DType::f16, raw, 1)[0];
}

}  // namespace

W8Weights quantize_w8(const float* w, int64_t n, int64_t k) {
  check_shape(n, k);
  W8Weights q;
  q.n = n, q.k = k;
  q.q.resize(static_cast<size_t>(n * k));
  q.scales.resize(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    float amax = 0;
    for (int64_t c = 0; c < k; ++c) amax = std::max(amax, std::abs(w[r * k + c]));
    const float s = amax > 0 ? amax / 127.0f : 1.0f;
    q.scales[static_cast<size_t>(r)] = s;
    for (int64_t c = 0; c < k; ++c) {
      const float v = std::clamp(std::nearbyint(w[r * k + c] / s), -127.0f, 127.0f);
      q.q[static_cast<size_t>(r * k + c)] = static_cast<uint8_t>(static_cast<int>(v) + 128);
    }
  }
  return q;
}

W4Weights quantize_w4(const float* w, int64_t n, int64_t k, int64_t group, bool asymmetric) {
  check_shape(n, k);
  if (group != 64 && group != 128) throw_bad_input(fmt::format("group {}: use 64 or 128", group));
  if (k % group) throw_bad_input(fmt::format("K = {} is not a multiple of the group ({})", k, group));
  W4Weights q;
  q.n = n, q.k = k, q.group = group, q.asymmetric = asymmetric;
  q.words.assign(static_cast<size_t>(n * k / 8), 0);
  q.params.resize(static_cast<size_t>(n * (k / group) * 2));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t g = 0; g < k / group; ++g) {
      const float* wg = w + r * k + g * group;
      float lo = wg[0], hi = wg[0];
      for (int64_t i = 0; i < group; ++i) lo = std::min(lo, wg[i]), hi = std::max(hi, wg[i]);
      double s, z;
      if (asymmetric) {
        s = hi > lo ? (static_cast<double>(hi) - lo) / 15.0 : 1.0;
        z = std::clamp(std::nearbyint(-lo / s), 0.0, 15.0);
      } else {
        const double amax = std::max(std::abs(lo), std::abs(hi));
        s = amax > 0 ? amax / 7.0 : 1.0;
        z = 8;
      }
      // The kernel dequantizes with the fp16 values of (s, o): quantize against those.
      const uint16_t hs = to_half(s), ho = to_half(-z * from_half(hs));
      const size_t p = static_cast<size_t>((r * (k / group) + g) * 2);
      q.params[p] = hs, q.params[p + 1] = ho;
      const double sf = from_half(hs);
      for (int64_t i = 0; i < group; ++i) {
        const double lim_lo = asymmetric ? 0.0 : z - 8, lim_hi = asymmetric ? 15.0 : z + 7;
        const double u = std::clamp(std::nearbyint(wg[i] / sf) + z, lim_lo, lim_hi);
        const int64_t kk = g * group + i, word = r * (k / 8) + kk / 8;
        const int j = static_cast<int>(kk % 8), shift = (j % 2 ? 16 : 0) + 4 * (j / 2);
        q.words[static_cast<size_t>(word)] |= static_cast<uint32_t>(u) << shift;
      }
    }
  }
  return q;
}

unsigned w4_nibble(const std::vector<uint32_t>& words, int64_t k_total, int64_t row, int64_t k) {
  const uint32_t word = words[static_cast<size_t>(row * (k_total / 8) + k / 8)];
  const int j = static_cast<int>(k % 8), shift = (j % 2 ? 16 : 0) + 4 * (j / 2);
  return (word >> shift) & 0xf;
}

std::vector<float> dequantize(const W8Weights& q) {
  std::vector<float> w(q.q.size());
  for (int64_t r = 0; r < q.n; ++r)
    for (int64_t c = 0; c < q.k; ++c) {
      const auto i = static_cast<size_t>(r * q.k + c);
      w[i] = static_cast<float>(static_cast<int>(q.q[i]) - 128) * q.scales[static_cast<size_t>(r)];
    }
  return w;
}

std::vector<float> dequantize(const W4Weights& q) {
  std::vector<float> w(static_cast<size_t>(q.n * q.k));
  for (int64_t r = 0; r < q.n; ++r)
    for (int64_t c = 0; c < q.k; ++c) {
      const size_t p = static_cast<size_t>((r * (q.k / q.group) + c / q.group) * 2);
      const double s = from_half(q.params[p]), o = from_half(q.params[p + 1]);
      w[static_cast<size_t>(r * q.k + c)] = static_cast<float>(w4_nibble(q.words, q.k, r, c) * s + o);
    }
  return w;
}

QuantError quant_error(const float* w, const std::vector<float>& dq) {
  double amax = 0, err_max = 0, e2 = 0, w2 = 0;
  for (size_t i = 0; i < dq.size(); ++i) {
    const double d = static_cast<double>(w[i]) - dq[i];
    amax = std::max(amax, std::abs(static_cast<double>(w[i])));
    err_max = std::max(err_max, std::abs(d));
    e2 += d * d, w2 += static_cast<double>(w[i]) * w[i];
  }
  return {amax > 0 ? err_max / amax : 0, w2 > 0 ? std::sqrt(e2 / w2) : 0};
}

}  // namespace gsq::kernels
