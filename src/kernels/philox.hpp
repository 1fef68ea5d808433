// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a counter-based generator, so
// the GPU and the CPU compute the same dropout mask from (seed, offset, element index) with no state.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GSQ_HD __host__ __device__ __forceinline__
#else
#define GSQ_HD inline
#endif

namespace gsq::kernels {

struct Philox4 {
  uint32_t v[4];
};

GSQ_HD uint32_t mul_hi_lo(uint32_t a, uint32_t b, uint32_t& hi) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  return static_cast<uint32_t>(p);
}

// Philox's key schedule: round r uses (k0 + r·W0, k1 + r·W1). A kernel gets it computed once per launch in its
// parameters, so each round is two wide multiplies and two three-input XORs reading the key from the constant bank.
struct PhiloxKey {
  uint32_t k[10][2];
};

GSQ_HD PhiloxKey philox_key(uint64_t seed) {
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  PhiloxKey key{};
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (auto& round : key.k) round[0] = k0, round[1] = k1, k0 += kW0, k1 += kW1;
  return key;
}

GSQ_HD Philox4 philox4x32_10(Philox4 c, const PhiloxKey& key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (const auto& k : key.k) {
    uint32_t hi0 = 0, hi1 = 0;
    const uint32_t lo0 = mul_hi_lo(kM0, c.v[0], hi0), lo1 = mul_hi_lo(kM1, c.v[2], hi1);
    c = Philox4{{hi1 ^ c.v[1] ^ k[0], lo1, hi0 ^ c.v[3] ^ k[1], lo0}};
  }
  return c;
}

GSQ_HD Philox4 philox4x32_10(Philox4 c, uint32_t k0, uint32_t k1) {
  return philox4x32_10(c, philox_key(k0 | static_cast<uint64_t>(k1) << 32));
}

// The four random words for elements 8g … 8g+7 of a dropout call, 16 bits each (see gsq_softmax_dropout in kernels.h).
GSQ_HD Philox4 dropout_words(uint64_t group, const PhiloxKey& key, uint64_t offset) {
  return philox4x32_10(Philox4{{static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32),
                                static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32)}},
                       key);
}
GSQ_HD Philox4 dropout_words(uint64_t group, uint64_t seed, uint64_t offset) {
  return dropout_words(group, philox_key(seed), offset);
}

// 24 random bits as a float in [0, 1): exact, and the same on host and device.
GSQ_HD float uniform24(uint32_t word) {
  return static_cast<float>(word >> 8) * (1.0f / 16777216.0f);
}

// The low 16 bits as a float in [0, 1) on a grid of 2^-16: enough for a keep probability, and it lets one Philox
// call serve 8 elements.
GSQ_HD float uniform16(uint32_t bits) {
  return static_cast<float>(bits & 0xffffu) * (1.0f / 65536.0f);
}

// uniform16(b) >= p exactly when b >= dropout_threshold(p): b / 2^16 and p * 2^16 are exact in float, so the test
// is one integer compare. 65536 (nothing kept) only for p > 1 - 2^-16.
GSQ_HD uint32_t dropout_threshold(float p) {
  const float t = p * 65536.0f;
  if (!(t > 0.0f)) return 0;
  if (t >= 65536.0f) return 65536;
  const auto i = static_cast<uint32_t>(t);
  return static_cast<float>(i) == t ? i : i + 1;
}

// Element e of group g uses half e % 2 of word (e % 8) / 2.
GSQ_HD bool dropout_keep_in(const Philox4& words, unsigned e, uint32_t threshold) {
  return (words.v[(e % 8) / 2] >> (16 * (e % 2)) & 0xffffu) >= threshold;
}

GSQ_HD bool dropout_keep(uint64_t index, float p, uint64_t seed, uint64_t offset) {
  return dropout_keep_in(dropout_words(index / 8, seed, offset), static_cast<unsigned>(index % 8),
                         dropout_threshold(p));
}

}  // namespace gsq::kernels
