// CPU tests of weight-only quantization: round trips within half a step, the documented bit layout, error reports,
// and shapes the kernels reject (through the C ABI, without a GPU).
#include "core/error.hpp"
#include "gpusqueeze/kernels.h"
#include "kernels/quant.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace gsq::kernels {
namespace {

std::vector<float> random_weights(int64_t n, int64_t k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0, 0.02f);
  std::vector<float> w(static_cast<size_t>(n * k));
  for (auto& v : w) v = nd(rng);
  return w;
}

TEST(Quant, Int8RoundTripIsWithinHalfAStep) {
  const int64_t n = 128, k = 256;
  const auto w = random_weights(n, k, std::random_device{}());
  const W8Weights q = quantize_w8(w.data(), n, k);
  const auto dq = dequantize(q);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) {
      const auto i = static_cast<size_t>(r * k + c);
      EXPECT_LE(std::abs(w[i] - dq[i]), 0.5f * q.scales[static_cast<size_t>(r)] * 1.0001f) << r << "," << c;
    }
  const QuantError e = quant_error(w.data(), dq);
  EXPECT_GT(e.rms_rel, 0);
  EXPECT_LT(e.rms_rel, 0.01);  // 8 bits of a Gaussian row: well under 1%
}

TEST(Quant, Int4RoundTripIsWithinHalfAStepForBothSchemesAndGroups) {
  const int64_t n = 64, k = 512;
  const auto w = random_weights(n, k, std::random_device{}());
  for (int64_t group : {64, 128}) {
    for (bool asym : {false, true}) {
      const W4Weights q = quantize_w4(w.data(), n, k, group, asym);
      ASSERT_EQ(q.words.size(), static_cast<size_t>(n * k / 8));
      ASSERT_EQ(q.params.size(), static_cast<size_t>(n * k / group * 2));
      const auto dq = dequantize(q);
      const QuantError e = quant_error(w.data(), dq);
      EXPECT_LT(e.rms_rel, asym ? 0.12 : 0.15) << "group " << group << (asym ? " asymmetric" : " symmetric");
      EXPECT_LT(e.max_rel, 0.2);
      // Every weight within half a step (plus the fp16 rounding of the offset) of its group's grid.
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < k; ++c) {
          float lo = INFINITY, hi = -INFINITY;
          for (int64_t i = c / group * group; i < (c / group + 1) * group; ++i)
            lo = std::min(lo, w[static_cast<size_t>(r * k + i)]), hi = std::max(hi, w[static_cast<size_t>(r * k + i)]);
          const float step = asym ? (hi - lo) / 15 : std::max(std::abs(lo), std::abs(hi)) / 7;
          const auto i = static_cast<size_t>(r * k + c);
          ASSERT_LE(std::abs(w[i] - dq[i]), 0.5f * step * 1.01f + 1e-5f) << r << "," << c;
        }
    }
  }
}

TEST(Quant, Int4LayoutMatchesTheDocumentedBits) {
  // Rows whose weights are k % 15 - 7: max |w| = 7, so s = 1 and the symmetric nibble is u = w + 8 = k % 15 + 1.
  const int64_t n = 64, k = 64;
  std::vector<float> w(static_cast<size_t>(n * k));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) w[static_cast<size_t>(r * k + c)] = static_cast<float>(c % 15 - 7);
  const W4Weights q = quantize_w4(w.data(), n, k, 64, false);
  for (int64_t c = 0; c < k; ++c) EXPECT_EQ(w4_nibble(q.words, k, 0, c), static_cast<unsigned>(c % 15 + 1)) << c;
  // Word 0 holds k = 0..7 (u = 1..8): k = 2i in bits 4i, k = 2i + 1 in bits 16 + 4i.
  EXPECT_EQ(q.words[0], 0x86427531u);
  EXPECT_EQ(q.params[0], 0x3C00);  // fp16 1.0
  EXPECT_EQ(q.params[1], 0xC800);  // fp16 -8.0
}

TEST(Quant, AbiRejectsShapesTheKernelsCannotRun) {
  const auto w = random_weights(64, 64, 1);
  std::vector<uint32_t> words(64 * 64 / 8);
  std::vector<uint16_t> params(64 * 2);
  double max_rel = -1, rms_rel = -1;
  EXPECT_EQ(gsq_quantize_w4(w.data(), 64, 64, 64, 0, words.data(), params.data(), &max_rel, &rms_rel), GSQ_SUCCESS);
  EXPECT_GT(max_rel, 0);
  EXPECT_GT(rms_rel, 0);
  EXPECT_EQ(gsq_quantize_w4(w.data(), 64, 64, 32, 0, words.data(), params.data(), nullptr, nullptr),
            GSQ_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(gsq_last_error()).find("group"), std::string::npos);
  EXPECT_EQ(gsq_quantize_w8(w.data(), 64, 63, nullptr, nullptr, nullptr, nullptr), GSQ_ERROR_INVALID_VALUE);
  std::vector<uint8_t> q8(64 * 64);
  std::vector<float> s8(64);
  EXPECT_EQ(gsq_quantize_w8(w.data(), 32, 128, q8.data(), s8.data(), nullptr, nullptr), GSQ_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(gsq_last_error()).find("multiples of 64"), std::string::npos);
  EXPECT_THROW((void)quantize_w4(w.data(), 64, 100, 64, false), Error);
  void* dev = reinterpret_cast<void*>(uintptr_t{0x100000});
  EXPECT_EQ(gsq_w4a16_gemm(dev, dev, static_cast<uint32_t*>(dev), dev, nullptr, 17, 64, 64, 64, GSQ_FLOAT16, nullptr),
            GSQ_ERROR_UNSUPPORTED);  // M > 16
  EXPECT_EQ(gsq_w4a16_gemm(dev, dev, static_cast<uint32_t*>(dev), dev, nullptr, 1, 64, 96, 64, GSQ_FLOAT16, nullptr),
            GSQ_ERROR_INVALID_VALUE);  // K not a multiple of 64
  EXPECT_EQ(gsq_w4a16_gemm(dev, dev, static_cast<uint32_t*>(dev), dev, nullptr, 1, 64, 64, 96, GSQ_FLOAT16, nullptr),
            GSQ_ERROR_INVALID_VALUE);  // group
  EXPECT_EQ(gsq_w8a16_gemm(dev, dev, static_cast<uint8_t*>(dev), static_cast<float*>(dev), nullptr, 1, 64, 64,
                           GSQ_FLOAT32, nullptr),
            GSQ_ERROR_UNSUPPORTED);  // fp32 activations
  void* odd = reinterpret_cast<void*>(uintptr_t{0x100008});
  EXPECT_EQ(gsq_w8a16_gemm(dev, odd, static_cast<uint8_t*>(dev), static_cast<float*>(dev), nullptr, 1, 64, 64,
                           GSQ_FLOAT16, nullptr),
            GSQ_ERROR_MISALIGNED);
}

}  // namespace
}  // namespace gsq::kernels
