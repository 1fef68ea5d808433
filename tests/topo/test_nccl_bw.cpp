// nccl-tests' bandwidth formulas against the tables others published (../shared/data/nccl, sources in its README):
// every row's algbw and busbw are reproduced from its size, time and rank count within the table's print rounding.
#include "topo/nccl_bw.hpp"

#include "core/json_io.hpp"
#include "support/fixtures.hpp"
#include "topo/nccl_logs.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

namespace gsq::topo {
namespace {

TEST(NcclBandwidth, FactorsAreNcclTestsOnes) {
  EXPECT_DOUBLE_EQ(*bus_factor("all_reduce_perf", 8), 1.75);
  EXPECT_DOUBLE_EQ(*bus_factor("all_reduce", 2), 1.0);
  EXPECT_DOUBLE_EQ(*bus_factor("all_reduce", 1), 0.0);  // one rank: "Avg bus bandwidth : 0"
  EXPECT_DOUBLE_EQ(*bus_factor("all_gather", 4), 0.75);
  EXPECT_DOUBLE_EQ(*bus_factor("broadcast", 8), 1.0);
  EXPECT_FALSE(bus_factor("all_to_everyone", 8).has_value());
}

TEST(NcclBandwidth, PublishedTablesAreReproducedWithinPrintRounding) {
  size_t tables = 0, rows = 0;
  // Ranks per table from each run's command line (mpirun -np 2 … -g 1; -g 2) or its "Rank" lines (2).
  const std::pair<const char*, int> published[] = {{"nccltests_h100_2node_1gpu_tree_nccltests232.txt", 2},
                                                   {"nccltests_h100pcie_2gpu_nvlink_bridge_nccltests194.txt", 2},
                                                   {"nccltests_gb10_2node_v2_20_format_dgxspark103.txt", 2}};
  for (const auto& [name, n] : published) {
    const auto file = test::shared_data(std::string("nccl/") + name);
    if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not present (shared test data)";
    const auto log = parse_nccl_log(read_text_file(file), name);
    ASSERT_FALSE(log.rows.empty()) << name;
    if (!log.devices.empty()) {
      EXPECT_EQ(static_cast<int>(log.devices.size()), n) << name;
    }
    const auto coll = log.test.empty() ? std::string("all_reduce") : collective_of(log.test);
    for (const auto& r : log.rows)
      for (int half = 0; half < 2; ++half) {
        if (r.time_us[half] <= 0) continue;
        const auto bw = bandwidth(coll, static_cast<double>(r.bytes), r.time_us[half] * 1e-6, n);
        // Printed with two decimals from a time printed with ~4 significant digits.
        const double tol_alg = 0.006 + 0.003 * r.algbw[half], tol_bus = 0.006 + 0.003 * r.busbw[half];
        EXPECT_NEAR(bw.algbw_gbs, r.algbw[half], tol_alg) << name << " " << r.bytes;
        EXPECT_NEAR(bw.busbw_gbs, r.busbw[half], tol_bus) << name << " " << r.bytes;
        ++rows;
      }
    ++tables;
  }
  EXPECT_EQ(tables, 3u);
  EXPECT_GE(rows, 20u);  // 11 rows, out-of-place and in-place
}

}  // namespace
}  // namespace gsq::topo
