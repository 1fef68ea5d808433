// CPU tests of what measures the kernels: the occupancy arithmetic and cuobjdump's resource-usage parser
// (probes/occupancy.hpp), and the kernel suites' shape axes (probes/kernel_suites.hpp).
#include "probes/occupancy.hpp"

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "probes/kernel_suites.hpp"
#include "support/fixtures.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gsq::probes {
namespace {

TEST(Occupancy, FollowsTheOccupancyCalculator) {
  const ArchLimits h = *arch_limits(90);
  Occupancy o = theoretical_occupancy(h, 256, 32, 0);
  EXPECT_EQ(o.blocks_per_sm, 8);
  EXPECT_DOUBLE_EQ(o.ratio, 1.0);
  EXPECT_EQ(o.limiter, "warps");
  o = theoretical_occupancy(h, 256, 64, 0);  // 2048 registers a warp: 8 warps per sub-partition
  EXPECT_EQ(o.blocks_per_sm, 4);
  EXPECT_DOUBLE_EQ(o.ratio, 0.5);
  EXPECT_EQ(o.limiter, "registers");
  o = theoretical_occupancy(h, 128, 40, 0);  // 1280 registers a warp: 12 warps per sub-partition = 48
  EXPECT_EQ(o.blocks_per_sm, 12);
  o = theoretical_occupancy(h, 256, 32, 100 * 1024);  // 101 KiB with the reserved 1 KiB: two fit in 228 KiB
  EXPECT_EQ(o.blocks_per_sm, 2);
  EXPECT_EQ(o.limiter, "shared memory");
  o = theoretical_occupancy(h, 32, 16, 0);  // 64 warps would fit, 32 blocks do
  EXPECT_EQ(o.blocks_per_sm, 32);
  EXPECT_EQ(o.limiter, "blocks per SM");
  EXPECT_DOUBLE_EQ(o.ratio, 0.5);
  o = theoretical_occupancy(h, 1024, 255, 0);
  EXPECT_EQ(o.blocks_per_sm, 0);
  EXPECT_NE(o.limiter.find("register"), std::string::npos);
  o = theoretical_occupancy(h, 256, 32, 228 * 1024);
  EXPECT_EQ(o.blocks_per_sm, 0);
  const ArchLimits ampere = *arch_limits(86);  // 48 warps per SM: one block of 1024 leaves a third idle
  o = theoretical_occupancy(ampere, 1024, 32, 0);
  EXPECT_EQ(o.blocks_per_sm, 1);
  EXPECT_NEAR(o.ratio, 2.0 / 3, 1e-12);
  EXPECT_FALSE(arch_limits(91).has_value());
}

TEST(Occupancy, ParsesCuobjdumpResourceUsage) {
  // cuobjdump 13 --dump-resource-usage of libgsqkernels.so, recorded by the tool.
  const auto kernels = parse_resource_usage(read_text_file(test::fixture("cuobjdump-gsqkernels-sm90.txt")));
  ASSERT_GT(kernels.size(), 50u);
  bool saw_wide = false;
  for (const auto& k : kernels) {
    EXPECT_EQ(k.arch, 90);
    EXPECT_GT(k.regs, 0) << k.name;
    EXPECT_FALSE(k.mangled.empty());
    saw_wide |= k.name.find("row_kernel_wide") != std::string::npos;
  }
  EXPECT_TRUE(saw_wide);
  EXPECT_THROW((void)parse_resource_usage("not cuobjdump output\n"), Error);
  EXPECT_TRUE(parse_resource_usage("Resource usage:\n Common:\n  GLOBAL:0\n").empty());
}

// Our own kernels, read from the library just built: no register spills, no stack (the compiler's report).
TEST(Occupancy, OurKernelsDoNotSpill) {
  if (find_cuobjdump().empty()) GTEST_SKIP() << "cuobjdump not found (pip install nvidia-cuda-cuobjdump)";
  const auto kernels = read_resource_usage(GSQ_KERNELS_LIBRARY);
  ASSERT_GT(kernels.size(), 50u);
  for (const auto& k : kernels) {
    EXPECT_EQ(k.local, 0) << k.name;
    EXPECT_EQ(k.stack, 0) << k.name;
  }
}

TEST(KernelsSuite, ShapeAxesParseExactlyTheirDimensions) {
  EXPECT_EQ(parse_dims("8192x28672", 2), (std::vector<int64_t>{8192, 28672}));
  EXPECT_EQ(parse_dims("32x256x56x56", 4), (std::vector<int64_t>{32, 256, 56, 56}));
  EXPECT_EQ(parse_dims("4Kix4Ki", 2), (std::vector<int64_t>{4096, 4096}));
  EXPECT_FALSE(parse_dims("8192x", 2).has_value());
  EXPECT_FALSE(parse_dims("1x2x3", 4).has_value());
  EXPECT_FALSE(parse_dims("8x8x8", 2).has_value());
  EXPECT_FALSE(parse_dims("0x64", 2).has_value());
  EXPECT_FALSE(parse_dims("", 1).has_value());
}

}  // namespace
}  // namespace gsq::probes
