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

GSQ_HD Philox4 philox4x32_10(Philox4 c, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0 = 0, hi1 = 0;
    const uint32_t lo0 = mul_hi_lo(kM0, c.v[0], hi0), lo1 = mul_hi_lo(kM1, c.v[2], hi1);
    c = Philox4{{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
    k0 += kW0, k1 += kW1;
  }
  return c;
}

// The four random words for elements 8g … 8g+7 of a dropout call, 16 bits each (see gsq_softmax_dropout in kernels.h).
GSQ_HD Philox4 dropout_words(uint64_t group, uint64_t seed, uint64_t offset) {
  return philox4x32_10(Philox4{{static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32),
                                static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32)}},
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
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

// Element e of group g uses half e % 2 of word (e % 8) / 2.
GSQ_HD bool dropout_keep_in(const Philox4& words, unsigned e, float p) {
  return uniform16(words.v[(e % 8) / 2] >> (16 * (e % 2))) >= p;
}

GSQ_HD bool dropout_keep(uint64_t index, float p, uint64_t seed, uint64_t offset) {
  return dropout_keep_in(dropout_words(index / 8, seed, offset), static_cast<unsigned>(index % 8), p);
}

}  // namespace gsq::kernels
