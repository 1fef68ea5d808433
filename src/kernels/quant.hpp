// Weight-only quantization for LLM decoding (host side): INT8 per output channel and INT4 group-wise along K, packed in
// the layouts the W8A16 / W4A16 kernels read. The layouts are versioned (kernels.h: GSQ_W4_LAYOUT, GSQ_W8_LAYOUT).
//
// W is [N][K] (row n = output channel, as torch.nn.Linear.weight). Y[M][N] = X[M][K] · dequant(W)ᵀ.
//   INT8 (layout gsq.w8/1): u8[N][K] = q + 128 with q = round(w / s) in [-127, 127], s[n] = max|W[n]| / 127 (fp32).
//   INT4 (layout gsq.w4/1): nibbles u in [0, 15]; w ≈ u · s + o per group of G consecutive k (G = 64 or 128):
//     symmetric:  s = max|w| / 7, u = clamp(round(w / s), -8, 7) + 8, o = -8 s
//     asymmetric: s = (max - min) / 15, z = clamp(round(-min / s), 0, 15), u = clamp(round(w / s) + z, 0, 15), o = -z s
//   (s, o) stored as fp16 pairs, [N][K/G]. Words u32[N][K/8]: word j of row n holds k = 8j … 8j+7, with k = 8j + 2i in
//   bits 4i…4i+3 and k = 8j + 2i + 1 in bits 16+4i…16+4i+3 (i = 0…3), so one shift and mask yields the pair
//   (k, k+1) in the two 16-bit halves.
#pragma once

#include <cstdint>
#include <vector>

namespace gsq::kernels {

struct QuantError {
  double max_rel = 0;  // max |w - ŵ| / max |w| over the layer
  double rms_rel = 0;  // ‖w - ŵ‖₂ / ‖w‖₂
};

struct W8Weights {
  int64_t n = 0, k = 0;
  std::vector<uint8_t> q;     // [n][k], q + 128
  std::vector<float> scales;  // [n]
};

struct W4Weights {
  int64_t n = 0, k = 0, group = 128;
  bool asymmetric = false;
  std::vector<uint32_t> words;   // [n][k / 8]
  std::vector<uint16_t> params;  // [n][k / group][2]: fp16 bits of (scale, offset)
};

// Throw bad_input for shapes the kernels reject (n, k multiples of 64; group 64 or 128).
[[nodiscard]] W8Weights quantize_w8(const float* w, int64_t n, int64_t k);
[[nodiscard]] W4Weights quantize_w4(const float* w, int64_t n, int64_t k, int64_t group, bool asymmetric);
[[nodiscard]] std::vector<float> dequantize(const W8Weights& q);
[[nodiscard]] std::vector<float> dequantize(const W4Weights& q);
[[nodiscard]] QuantError quant_error(const float* w, const std::vector<float>& dequantized);

// The nibble of (row, k) in a gsq.w4/1 word array with k / 8 words per row.
[[nodiscard]] unsigned w4_nibble(const std::vector<uint32_t>& words, int64_t k_total, int64_t row, int64_t k);

}  // namespace gsq::kernels
