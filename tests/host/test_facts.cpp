// Host facts: CPU list parsing and formatting (pure), and readers that must answer on any Linux machine.
#include "host/facts.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace gsq::host {
namespace {

TEST(CpuList, ParsesRangesAndRejectsGarbage) {
  EXPECT_EQ(parse_cpulist("0-3,8"), (std::vector<int>{0, 1, 2, 3, 8}));
  EXPECT_EQ(parse_cpulist("5"), std::vector<int>{5});
  EXPECT_TRUE(parse_cpulist("3-1").empty());
  EXPECT_TRUE(parse_cpulist("a-b").empty());
}

TEST(CpuList, FormatsRunsAsRangesAndRoundTrips) {
  EXPECT_EQ(format_cpulist({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(format_cpulist({}), "");
  const std::vector<int> cpus{2, 4, 5, 6, 9};
  EXPECT_EQ(parse_cpulist(format_cpulist(cpus)), cpus);
}

TEST(ReadFirstLine, GivesTheLineOrSaysWhichFileIsMissing) {
  const std::string path = ::testing::TempDir() + "gsq_first_line.txt";
  std::ofstream(path) << "performance\nsecond\n";
  const auto line = read_first_line(path);
  ASSERT_TRUE(line.ok());
  EXPECT_EQ(*line, "performance");
  std::remove(path.c_str());
  const auto missing = read_first_line(path);
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.unsupported.find(path), std::string::npos);
}

TEST(ProcessAffinity, ListsAtLeastOneCpuThisProcessMayUse) {
  const auto cpus = process_cpu_affinity();
  ASSERT_TRUE(cpus.has_value());
  ASSERT_FALSE(cpus->empty());
  EXPECT_LT(static_cast<uint32_t>(cpus->back()), cpu_count() * 64);
}

}  // namespace
}  // namespace gsq::host
