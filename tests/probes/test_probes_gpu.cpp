// GPU tests of the probes (label `gpu`): kernels compute the right values, and each probe's figures are positive and
// below the theoretical ceiling.
#include "bench/runner.hpp"
#include "cuda/raii.hpp"
#include "probes/host_probes.hpp"
#include "probes/probe_kernels.hpp"
#include "probes/suites.hpp"

#include "support/gpu.hpp"

#include <gtest/gtest.h>

#include <random>

namespace gsq::bench {
namespace {

using test::have_gpu;

TEST(ProbesGpu, CopyTriadAndWriteKernelsAreExactAtEveryWidth) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: cudaGetDeviceCount found no device";
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-1, 1);
  const size_t n = (1 << 20) + 4;  // not a multiple of the grid: the tail loop runs too
  std::vector<float> b(n), c(n), out(n);
  for (auto& x : b) x = u(rng);
  for (auto& x : c) x = u(rng);
  cuda::DeviceBuffer db = cuda::DeviceBuffer::create(n * 4), dc = cuda::DeviceBuffer::create(n * 4),
                     da = cuda::DeviceBuffer::create(n * 4);
  GSQ_CUDA_CHECK(cudaMemcpy(db.get(), b.data(), n * 4, cudaMemcpyHostToDevice));
  GSQ_CUDA_CHECK(cudaMemcpy(dc.get(), c.data(), n * 4, cudaMemcpyHostToDevice));
  for (int width : {4, 8, 16}) {
    for (auto [op, hint] : {std::pair{probes::MemOp::copy, probes::CacheHint::flat},  // a partial last block
                            std::pair{probes::MemOp::copy, probes::CacheHint::normal},
                            std::pair{probes::MemOp::copy, probes::CacheHint::streaming},
                            std::pair{probes::MemOp::copy, probes::CacheHint::tiled},
                            std::pair{probes::MemOp::copy, probes::CacheHint::bulk},  // a partial last tile
                            std::pair{probes::MemOp::triad, probes::CacheHint::normal},
                            std::pair{probes::MemOp::triad, probes::CacheHint::flat},
                            std::pair{probes::MemOp::write, probes::CacheHint::normal},
                            std::pair{probes::MemOp::write, probes::CacheHint::flat}}) {
      GSQ_CUDA_CHECK(cudaMemset(da.get(), 0xFF, n * 4));  // poisoned
      ASSERT_EQ(probes::launch_mem_op(op, width, da.get(), db.get(), dc.get(), nullptr, n * 4, 132, nullptr, hint),
                cudaSuccess);
      GSQ_CUDA_CHECK(cudaMemcpy(out.data(), da.get(), n * 4, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < n; ++i) {
        const double want = op == probes::MemOp::copy    ? b[i]
                            : op == probes::MemOp::write ? 1.5
                                                         : static_cast<double>(b[i]) + 0.4 * c[i];
        ASSERT_NEAR(out[i], want, 1e-6 * (1 + std::abs(want))) << "width " << width << " at " << i;
      }
    }
  }
  EXPECT_EQ(probes::launch_mem_op(probes::MemOp::copy, 3, da.get(), db.get(), dc.get(), nullptr, 48, 132, nullptr),
            cudaErrorInvalidValue);
}

TEST(ProbesGpu, MemAndPcieFiguresArePositiveAndBelowTheirCeilings) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: cudaGetDeviceCount found no device";
  RunOptions o;
  o.allow_busy = true;
  o.settings.max_seconds = 0.3;
  o.settings.min_seconds = 0.05;
  o.settings.batch = false;
  o.overrides = {{"bytes", {"1Gi"}}, {"width", {"16"}}};
  const bench::Run mem = run_suite("mem", probes::mem_suite(), o);
  o.overrides = {{"bytes", {"64Mi"}}};
  const bench::Run pcie = run_suite("pcie", probes::pcie_suite(), o);
  for (const bench::Run* run : {&mem, &pcie}) {
    for (const auto& r : run->results) {
      ASSERT_FALSE(r.measurements.empty()) << r.name;
      const Derived d = derive(r, r.measurements[0]);
      EXPECT_GT(d.bytes_per_s, 0) << config_label(r);
      ASSERT_GT(r.peak_bytes_per_s, 0) << config_label(r);
      EXPECT_LT(d.bytes_per_s, r.peak_bytes_per_s) << config_label(r);  // cold: L2 flushed, so HBM/PCIe bound
    }
  }
}

TEST(ProbesGpu, L2AndOverlapProbesRunWithPositiveFigures) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: cudaGetDeviceCount found no device";
  RunOptions o;
  o.allow_busy = true;
  o.settings.max_seconds = 0.3;
  o.settings.min_seconds = 0.05;
  o.overrides = {{"bytes", {"4Mi", "32Mi", "256Mi"}}};
  const bench::Run l2 = run_suite("l2", probes::l2_suite(), o);
  ASSERT_EQ(l2.results.size(), 3u);
  for (const auto& r : l2.results) {
    ASSERT_EQ(r.measurements.size(), 1u) << "batch only: a cold sample would flush what the probe measures";
    EXPECT_EQ(r.measurements[0].mode, "batch");
    EXPECT_GT(derive(r, r.measurements[0]).bytes_per_s, 0);
  }
  EXPECT_TRUE(probes::l2_transition(l2).has_value());
  o.overrides = {{"bytes", {"4Mi"}}, {"chunks", {"4"}}, {"fma_per_element", {"256"}}};
  const bench::Run ov = run_suite("overlap", probes::overlap_suite(), o);
  ASSERT_EQ(ov.results.size(), 4u);
  for (const auto& r : ov.results) {
    ASSERT_FALSE(r.measurements.empty()) << config_label(r);
    const Derived d = derive(r, r.measurements[0]);
    EXPECT_GT(d.bytes_per_s, 0) << config_label(r);
    EXPECT_LT(d.bytes_per_s, r.peak_bytes_per_s) << config_label(r);
  }
  EXPECT_EQ(probes::overlap_speedups(ov).size(), 2u);
}

TEST(ProbesGpu, HostCostProbesMeasureEveryCall) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: cudaGetDeviceCount found no device";
  for (const char* group : {"launch", "alloc"}) {
    const auto costs = probes::measure_host_costs(group, 0, 12, {});
    ASSERT_FALSE(costs.empty()) << group;
    for (const auto& c : costs) {
      EXPECT_GT(c.p50_ns, 0) << c.name;
      EXPECT_GE(c.p99_ns, c.p50_ns) << c.name;
      EXPECT_LE(c.ci_lo_ns, c.p50_ns) << c.name;
    }
  }
}

}  // namespace
}  // namespace gsq::bench
