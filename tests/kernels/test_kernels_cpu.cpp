// CPU tests of the kernel library: the Philox generator and the dropout mask, the row plan, argument validation
// through the C ABI (nothing launches on bad input, so no GPU is needed) and the fp64 references.
#include "gpusqueeze/kernels.h"
#include "kernels/philox.hpp"
#include "kernels/reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <tuple>
#include <vector>

namespace gsq::kernels {
namespace {

// Known-answer vectors of Philox4x32-10 from the Random123 distribution (kat_vectors).
TEST(Philox, MatchesTheRandom123KnownAnswers) {
  struct Kat {
    Philox4 ctr;
    uint32_t k0, k1;
    Philox4 want;
  };
  const Kat kats[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}}},
      {{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
       0xffffffffu,
       0xffffffffu,
       {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}}},
      {{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
       0xa4093822u,
       0x299f31d0u,
       {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}}},
  };
  for (const auto& k : kats) {
    const Philox4 got = philox4x32_10(k.ctr, k.k0, k.k1);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(got.v[i], k.want.v[i]) << "word " << i;
  }
}

TEST(Dropout, KeepProbabilityIsStatisticallyRight) {
  const uint64_t seed = std::random_device{}();
  for (float p : {0.1f, 0.5f, 0.9f}) {
    const int64_t n = 1 << 20;
    int64_t kept = 0;
    for (int64_t i = 0; i < n; ++i) kept += dropout_keep(static_cast<uint64_t>(i), p, seed, 3);
    const auto nd = static_cast<double>(n);
    const double mean = nd * (1.0 - p), sd = std::sqrt(nd * p * (1.0 - p));
    EXPECT_LT(std::abs(static_cast<double>(kept) - mean), 5 * sd) << "p=" << p << " seed=" << seed;
  }
}

// The kernels test 16 random bits against dropout_threshold(p) as integers; that must be the documented
// uniform16(bits) >= p for every p, including p on and next to the 2^-16 grid.
TEST(Dropout, IntegerThresholdIsTheDocumentedFloatCompare) {
  std::vector<float> ps = {0.0f,
                           0.1f,
                           0.5f,
                           0.9f,
                           1.0f - 1.0f / 65536,
                           std::nextafter(1.0f - 1.0f / 65536, 1.0f),
                           std::nextafter(1.0f, 0.0f)};
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 64; ++i) {
    const float on_grid = static_cast<float>(rng() % 65536) / 65536;
    ps.insert(ps.end(), {on_grid, std::nextafter(on_grid, 0.0f), std::nextafter(on_grid, 1.0f)});
  }
  for (float p : ps) {
    const uint32_t t = dropout_threshold(p);
    ASSERT_LE(t, 65536u) << "p=" << p;
    for (uint32_t b : {t == 0 ? 0u : t - 1, t, t + 1, 0u, 0xffffu}) {
      if (b > 0xffff) continue;
      EXPECT_EQ(uniform16(b) >= p, b >= t) << "p=" << p << " bits=" << b;
    }
  }
  EXPECT_EQ(dropout_threshold(0.0f), 0u);
  EXPECT_EQ(dropout_threshold(0.5f), 32768u);
  EXPECT_EQ(dropout_threshold(std::nextafter(1.0f, 0.0f)), 65536u);  // nothing kept
}

TEST(Dropout, MaskDependsOnSeedAndOffsetOnly) {
  int64_t same = 0, other_seed = 0, other_offset = 0;
  for (uint64_t i = 0; i < 4096; ++i) {
    same += dropout_keep(i, 0.5f, 42, 7) == dropout_keep(i, 0.5f, 42, 7);
    other_seed += dropout_keep(i, 0.5f, 42, 7) == dropout_keep(i, 0.5f, 43, 7);
    other_offset += dropout_keep(i, 0.5f, 42, 7) == dropout_keep(i, 0.5f, 42, 8);
  }
  EXPECT_EQ(same, 4096);
  EXPECT_NEAR(static_cast<double>(other_seed), 2048, 5 * 32);  // independent masks agree about half the time
  EXPECT_NEAR(static_cast<double>(other_offset), 2048, 5 * 32);
  EXPECT_FALSE(dropout_keep(5, 0.0f, 1, 1) == false);  // p = 0 keeps everything
}

TEST(RowPlan, PicksWarpBlockOrTwoPassByWidth) {
  constexpr RowOp kDropout = RowOp::softmax_dropout;
  RowPlan p = plan_row(kDropout, DType::bf16, 256, true);  // 8 lanes a row, 16 rows a block
  EXPECT_TRUE(p.vector);
  EXPECT_EQ(p.elems_per_access, 8);
  EXPECT_EQ(p.threads_per_row, 8);
  EXPECT_EQ(p.accesses_per_thread, 4);
  EXPECT_EQ(p.block_threads, 128);
  p = plan_row(kDropout, DType::bf16, 4096, true);
  EXPECT_EQ(p.threads_per_row, 128);
  EXPECT_EQ(p.accesses_per_thread, 4);
  EXPECT_EQ(p.block_threads, 128);
  p = plan_row(kDropout, DType::bf16, 32768, true);  // the widest row held in registers: 1024 threads × 4 × 16 bytes
  EXPECT_EQ(p.threads_per_row, 1024);
  EXPECT_EQ(p.accesses_per_thread, 4);
  EXPECT_EQ(plan_row(kDropout, DType::bf16, 32776, true).accesses_per_thread, 0);
  p = plan_row(kDropout, DType::f32, 65536, true);
  EXPECT_EQ(p.accesses_per_thread, 0);  // 256 KiB: two reads by a block of 1024
  EXPECT_EQ(p.block_threads, 1024);
  p = plan_row(kDropout, DType::bf16, 1023, true);  // odd and narrow: one element per access, still in registers
  EXPECT_FALSE(p.vector);
  EXPECT_FALSE(p.span);
  EXPECT_EQ(p.elems_per_access, 1);
  EXPECT_EQ(p.threads_per_row, 256);
  EXPECT_EQ(p.accesses_per_thread, 4);
  p = plan_row(kDropout, DType::bf16, 4095, true);  // odd and wider: the row's span in 16-byte packs
  EXPECT_TRUE(p.vector && p.span);
  EXPECT_EQ(p.elems_per_access, 8);
  EXPECT_EQ(p.parts, 1);
  EXPECT_EQ(p.block_threads, 256);
  EXPECT_EQ(p.accesses_per_thread, 0);
  p = plan_row(kDropout, DType::bf16, 4095, false);  // the same with unaligned pointers: one element per access
  EXPECT_FALSE(p.vector || p.span);
  EXPECT_EQ(p.accesses_per_thread, 4);
  EXPECT_FALSE(plan_row(kDropout, DType::f16, 4096, false).vector);  // unaligned pointers
}

TEST(RowPlan, SplitsRowsTooFewForTheGpuOverACluster) {
  for (RowOp op : {RowOp::layer_norm, RowOp::rms_norm, RowOp::softmax, RowOp::softmax_dropout}) {
    RowPlan p = plan_row(op, DType::bf16, 151936, true, 1, 132);  // one row of Qwen's vocabulary
    EXPECT_TRUE(p.span);
    EXPECT_EQ(p.parts, 8);
    EXPECT_EQ(p.block_threads, 1024);                     // 18993 packs: 2374 a block
    p = plan_row(op, DType::bf16, 50257, true, 20, 132);  // GPT-2's vocabulary, 20 rows: 7 blocks a row fill 132 SMs
    EXPECT_EQ(p.parts, 8);
    EXPECT_EQ(p.block_threads, 256);                      // 786 packs a block
    p = plan_row(op, DType::bf16, 50257, true, 67, 132);  // rows for over half the SMs: a block a row, the span
    EXPECT_TRUE(p.span);
    EXPECT_EQ(p.parts, 1);
    EXPECT_EQ(p.block_threads, 1024);
    p = plan_row(op, DType::bf16, 5000, true, 1, 132);  // one row in registers: read once, by one block
    EXPECT_FALSE(p.span);
    EXPECT_GT(p.accesses_per_thread, 0);
    p = plan_row(op, DType::bf16, 16384, true, 8, 132);  // 2048 packs fit in registers, few rows or many
    EXPECT_FALSE(p.span);
    EXPECT_GT(p.accesses_per_thread, 0);
    p = plan_row(op, DType::bf16, 65536, true, 8, 132);  // 8193 packs do not: split in eight
    EXPECT_TRUE(p.span);
    EXPECT_EQ(p.parts, 8);
    EXPECT_EQ(p.block_threads, 256);                                     // 1025 packs a block
    EXPECT_FALSE(plan_row(op, DType::bf16, 65536, true, 8, 0).span);     // no clusters on this GPU
    EXPECT_FALSE(plan_row(op, DType::bf16, 65536, false, 8, 132).span);  // unaligned pointers
  }
  for (RowOp op : {RowOp::layer_norm, RowOp::rms_norm, RowOp::softmax, RowOp::softmax_dropout, RowOp::add_rms_norm})
    for (int64_t cols = 1; cols <= 300000; cols = cols * 3 + 1) {
      for (DType t : {DType::f32, DType::f16, DType::bf16}) {
        const RowPlan q = plan_row(op, t, cols, true);
        if (q.accesses_per_thread == 0) continue;
        EXPECT_GE(int64_t{q.threads_per_row} * q.accesses_per_thread * q.elems_per_access, cols) << cols;
        EXPECT_EQ(q.block_threads % q.threads_per_row, 0);
        EXPECT_LE(q.block_threads, 1024);
        // Eight accesses or two rows a thread: only the norms' 16-byte plans, in blocks of at most 512.
        const bool norm = op == RowOp::layer_norm || op == RowOp::rms_norm || op == RowOp::add_rms_norm;
        if (q.accesses_per_thread == 8 || q.rows_per_thread > 1) {
          EXPECT_TRUE(norm && q.vector) << cols;
          EXPECT_LE(q.block_threads, 512) << cols;
        } else {
          EXPECT_LE(q.accesses_per_thread, 4);
        }
        EXPECT_TRUE(q.rows_per_thread == 1 || (q.rows_per_thread == 2 && q.accesses_per_thread <= 4)) << cols;
      }
    }
}

TEST(RowPlan, FewRowsTakeOneBlockARowWithFewAccessesEach) {
  for (RowOp op : {RowOp::layer_norm, RowOp::rms_norm, RowOp::add_rms_norm, RowOp::softmax}) {
    RowPlan p = plan_row(op, DType::bf16, 768, true, 8, 132);  // 96 packs: one a thread
    EXPECT_TRUE(p.few);
    EXPECT_EQ(p.accesses_per_thread, 1);
    EXPECT_EQ(p.threads_per_row, 128);
    EXPECT_EQ(p.block_threads, 128);
    p = plan_row(op, DType::bf16, 4096, true, 1, 132);  // 512 packs: two a thread
    EXPECT_TRUE(p.few);
    EXPECT_EQ(p.accesses_per_thread, 2);
    EXPECT_EQ(p.block_threads, 256);
    p = plan_row(op, DType::bf16, 14336, true, 32, 132);  // 1792 packs: four a thread in 512
    EXPECT_TRUE(p.few);
    EXPECT_EQ(p.accesses_per_thread, 4);
    EXPECT_EQ(p.block_threads, 512);
    EXPECT_NE(p.describe().find("few rows"), std::string::npos);
    EXPECT_FALSE(plan_row(op, DType::bf16, 32768, true, 8, 132).few);  // 4096 packs: the plans for many rows
    EXPECT_FALSE(plan_row(op, DType::bf16, 4096, true, 67, 132).few);  // rows for over half the SMs
    EXPECT_FALSE(plan_row(op, DType::bf16, 4096, true, 8, 0).few);     // the GPU's size unknown
    EXPECT_FALSE(plan_row(op, DType::bf16, 4096, false, 8, 132).few);  // unaligned: one element an access
  }
  EXPECT_FALSE(plan_row(RowOp::softmax_dropout, DType::bf16, 4096, true, 8, 132).few);  // Philox-bound, not latency
}

// What any plan must satisfy, whatever the tuner chose (the choices themselves are measured, not asserted:
// bench/tune/row_tune times each against the shipped dispatch on the device). A plan that broke one of these would
// read past or short of its row, or launch a block the hardware refuses.
TEST(RowPlan, EveryPlanCoversItsRowWithALaunchableBlock) {
  for (RowOp op : {RowOp::layer_norm, RowOp::rms_norm, RowOp::softmax, RowOp::softmax_dropout, RowOp::add_rms_norm}) {
    for (DType dt : {DType::bf16, DType::f16, DType::f32}) {
      for (int64_t cols : {1, 7, 8, 255, 256, 512, 1000, 1024, 2048, 4096, 8190, 8192, 16384, 32768, 65536, 262144}) {
        for (bool aligned : {true, false})
          for (int64_t rows : {0, 1, 7, 40, 1000}) {
            const RowPlan p = plan_row(op, dt, cols, aligned, rows, 132);
            const std::string where =
                p.describe() + " for " + std::to_string(rows) + " × " + std::to_string(cols) + " columns";
            if (p.span) {
              EXPECT_TRUE(aligned && p.vector) << where << ": the span kernel reads 16-byte packs";
              EXPECT_TRUE(p.parts == 1 || p.parts == 2 || p.parts == 4 || p.parts == 8) << where;
              EXPECT_TRUE(p.parts == 1 || rows * 2 <= 132) << where << ": rows that fill the GPU are not split";
              EXPECT_TRUE(p.block_threads == 256 || p.block_threads == 1024) << where << ": no such instantiation";
            }
            if (op == RowOp::add_rms_norm || op == RowOp::softmax_dropout) {
              EXPECT_FALSE(p.cache_hints) << where << ": no hinted two-read kernel is built for it";
            }
            EXPECT_TRUE(p.block_threads >= 32 && p.block_threads <= 1024 && p.block_threads % 32 == 0) << where;
            EXPECT_GE(p.threads_per_row, 1) << where;
            EXPECT_EQ(p.block_threads % p.threads_per_row, 0) << where << ": a row may not straddle two blocks";
            EXPECT_TRUE(p.rows_per_thread == 1 || p.rows_per_thread == 2) << where;
            if (!aligned) {
              EXPECT_FALSE(p.vector) << where << ": 16-byte accesses on unaligned rows";
            }
            if (p.accesses_per_thread > 0) {
              // One read: the row must fit in the lanes' accesses, and not leave a lane without one.
              const int64_t per_row = int64_t{p.threads_per_row} * p.accesses_per_thread * p.elems_per_access;
              EXPECT_GE(per_row, cols) << where;
              EXPECT_LT(int64_t{p.threads_per_row} * (p.accesses_per_thread - 1) * p.elems_per_access, cols) << where;
            } else {
              EXPECT_EQ(p.rows_per_thread, 1) << where << ": two-read plans take a row a block";
              EXPECT_EQ(p.threads_per_row, p.block_threads) << where;
              EXPECT_GE(p.in_flight, 1) << where;
              EXPECT_LE(int64_t{p.block_threads} * p.min_blocks, 2048) << where << ": more threads than an SM holds";
            }
          }
      }
    }
  }
}

// Addresses that are never dereferenced: validation rejects the call before anything reaches the GPU.
void* fake(uintptr_t a) {
  return reinterpret_cast<void*>(a);
}

TEST(KernelsAbi, RejectsBadArgumentsWithoutLaunching) {
  void* x = fake(0x100000);
  void* y = fake(0x200000);
  EXPECT_EQ(gsq_layer_norm(y, nullptr, nullptr, nullptr, 4, 64, 1e-5f, GSQ_BFLOAT16, nullptr), GSQ_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(gsq_last_error()).find("x is NULL"), std::string::npos);
  EXPECT_EQ(gsq_layer_norm(y, x, nullptr, nullptr, 4, 0, 1e-5f, GSQ_BFLOAT16, nullptr), GSQ_ERROR_INVALID_VALUE);
  EXPECT_EQ(gsq_layer_norm(y, x, nullptr, nullptr, -1, 64, 1e-5f, GSQ_BFLOAT16, nullptr), GSQ_ERROR_INVALID_VALUE);
  EXPECT_EQ(gsq_layer_norm(y, x, nullptr, nullptr, 4, 64, NAN, GSQ_BFLOAT16, nullptr), GSQ_ERROR_INVALID_VALUE);
  EXPECT_EQ(gsq_layer_norm(y, x, fake(0x300001), nullptr, 4, 64, 1e-5f, GSQ_FLOAT16, nullptr), GSQ_ERROR_MISALIGNED);
  EXPECT_NE(std::string(gsq_last_error()).find("weight"), std::string::npos);
  EXPECT_EQ(gsq_rms_norm(fake(0x200002), x, nullptr, 4, 64, 1e-5f, GSQ_FLOAT32, nullptr), GSQ_ERROR_MISALIGNED);
  EXPECT_EQ(gsq_add_rms_norm(y, nullptr, x, nullptr, 4, 64, 1e-5f, GSQ_BFLOAT16, nullptr), GSQ_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(gsq_last_error()).find("residual is NULL"), std::string::npos);
  EXPECT_EQ(gsq_add_rms_norm(y, fake(0x100040), x, nullptr, 4, 64, 1e-5f, GSQ_BFLOAT16, nullptr),
            GSQ_ERROR_INVALID_VALUE);  // 64 bytes into x's 512
  EXPECT_NE(std::string(gsq_last_error()).find("residual overlaps x"), std::string::npos) << gsq_last_error();
  EXPECT_EQ(gsq_add_rms_norm(y, fake(0x300001), x, nullptr, 4, 64, 1e-5f, GSQ_BFLOAT16, nullptr), GSQ_ERROR_MISALIGNED);
  EXPECT_EQ(gsq_add_rms_norm(y, fake(0x300000), x, nullptr, 4, 64, NAN, GSQ_BFLOAT16, nullptr),
            GSQ_ERROR_INVALID_VALUE);
  const auto bad_dtype = static_cast<gsq_dtype>(std::atoi("7"));  // outside the enum, as from a careless caller
  EXPECT_EQ(gsq_softmax(y, x, 4, 64, bad_dtype, nullptr), GSQ_ERROR_UNSUPPORTED);
  EXPECT_EQ(gsq_softmax(y, x, int64_t{1} << 40, 1 << 20, GSQ_FLOAT32, nullptr), GSQ_ERROR_UNSUPPORTED);
  EXPECT_EQ(gsq_softmax_dropout(y, x, 4, 64, 1.0f, 1, 0, GSQ_FLOAT32, nullptr), GSQ_ERROR_INVALID_VALUE);
  EXPECT_EQ(gsq_softmax_dropout(y, x, 4, 64, -0.1f, 1, 0, GSQ_FLOAT32, nullptr), GSQ_ERROR_INVALID_VALUE);
  EXPECT_EQ(gsq_softmax_dropout(y, x, 4, 64, NAN, 1, 0, GSQ_FLOAT32, nullptr), GSQ_ERROR_INVALID_VALUE);
  EXPECT_EQ(gsq_nchw_to_nhwc(y, x, 2, 0, 4, 4, GSQ_FLOAT32, nullptr), GSQ_ERROR_INVALID_VALUE);
  EXPECT_EQ(gsq_nchw_to_nhwc(fake(0x100010), x, 2, 3, 4, 4, GSQ_FLOAT32, nullptr), GSQ_ERROR_INVALID_VALUE);
  EXPECT_NE(std::string(gsq_last_error()).find("overlaps"), std::string::npos);
  EXPECT_EQ(gsq_nhwc_to_nchw(y, x, 2, 3, 4, 4, GSQ_BFLOAT16, nullptr) == GSQ_ERROR_MISALIGNED, false);
  // Empty tensors are valid and launch nothing.
  EXPECT_EQ(gsq_softmax(y, x, 0, 64, GSQ_FLOAT32, nullptr), GSQ_SUCCESS);
  EXPECT_STREQ(gsq_last_error(), "");
  EXPECT_EQ(gsq_nchw_to_nhwc(y, x, 0, 3, 4, 4, GSQ_FLOAT32, nullptr), GSQ_SUCCESS);
  EXPECT_STREQ(gsq_status_name(GSQ_ERROR_MISALIGNED), "GSQ_ERROR_MISALIGNED");
  EXPECT_EQ(gsq_kernels_abi_version(), GSQ_KERNELS_ABI_VERSION);
}

TEST(References, AgreeWithHandComputedValues) {
  const std::vector<double> x{1, 2, 3, 4};
  const auto ln = ref::layer_norm(x, {}, {}, 1, 4, 0);
  const double sd = std::sqrt(1.25);
  EXPECT_NEAR(ln[0], -1.5 / sd, 1e-12);
  EXPECT_NEAR(ln[3], 1.5 / sd, 1e-12);
  const auto rms = ref::rms_norm(x, {2, 2, 2, 2}, 1, 4, 0);
  EXPECT_NEAR(rms[1], 2 * 2 / std::sqrt(7.5), 1e-12);
  const auto sm = ref::softmax(x, 2, 2);
  EXPECT_NEAR(sm[0] + sm[1], 1, 1e-12);
  EXPECT_NEAR(sm[1] / sm[0], std::exp(1.0), 1e-12);
  const auto t = ref::transpose({0, 1, 2, 3, 4, 5}, 1, 2, 3);  // [2][3] -> [3][2]
  EXPECT_EQ(t, (std::vector<double>{0, 3, 1, 4, 2, 5}));
  const auto d = ref::softmax_dropout(x, 1, 4, 0.5f, 9, 0);
  for (size_t i = 0; i < 4; ++i)
    EXPECT_DOUBLE_EQ(d[i], dropout_keep(i, 0.5f, 9, 0) ? 2 * ref::softmax(x, 1, 4)[i] : 0.0);
}

TEST(References, DtypeConversionsRoundToNearestEven) {
  // 1 + 2^-8 is halfway between two bf16 values: ties go to the even one (1.0); 1 + 3*2^-8 goes up.
  EXPECT_EQ(ref::to_double(DType::bf16, ref::from_double(DType::bf16, {1 + std::ldexp(1, -8)}).data(), 1)[0], 1.0);
  EXPECT_EQ(ref::to_double(DType::bf16, ref::from_double(DType::bf16, {1 + 3 * std::ldexp(1, -8)}).data(), 1)[0],
            1 + std::ldexp(1, -6));
  EXPECT_EQ(ref::to_double(DType::f16, ref::from_double(DType::f16, {1 + std::ldexp(1, -11)}).data(), 1)[0], 1.0);
  EXPECT_EQ(ref::to_double(DType::f16, ref::from_double(DType::f16, {65504}).data(), 1)[0], 65504);
  EXPECT_TRUE(std::isinf(ref::to_double(DType::f16, ref::from_double(DType::f16, {70000}).data(), 1)[0]));
  EXPECT_EQ(ref::to_double(DType::f16, ref::from_double(DType::f16, {std::ldexp(1, -24)}).data(), 1)[0],
            std::ldexp(1, -24));  // smallest subnormal
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> nd;
  for (int i = 0; i < 1000; ++i) {
    const double v = nd(rng);
    for (DType t : {DType::f16, DType::bf16}) {
      const double back = ref::to_double(t, ref::from_double(t, {v}).data(), 1)[0];
      EXPECT_LE(std::abs(back - v), std::abs(v) * (t == DType::f16 ? std::ldexp(1, -11) : std::ldexp(1, -8)) + 1e-7);
    }
  }
}

}  // namespace
}  // namespace gsq::kernels
