// GPU tests of the probes (label `gpu`): kernels compute the right values, and each probe's figures are positive and
// below the theoretical ceiling.
#include "bench/cuda_raii.hpp"
#include "bench/runner.hpp"
#include "probes/probe_kernels.hpp"

#include <gtest/gtest.h>

#include <random>

namespace gsq::bench {
namespace {

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

TEST(ProbesGpu, CopyAndTriadKernelsAreExactAtEveryWidth) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: cudaGetDeviceCount found no device";
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-1, 1);
  const size_t n = (1 << 20) + 4;  // not a multiple of the grid: the tail loop runs too
  std::vector<float> b(n), c(n), out(n);
  for (auto& x : b) x = u(rng);
  for (auto& x : c) x = u(rng);
  DeviceBuffer db = DeviceBuffer::create(n * 4), dc = DeviceBuffer::create(n * 4), da = DeviceBuffer::create(n * 4);
  GSQ_CUDA_CHECK(cudaMemcpy(db.get(), b.data(), n * 4, cudaMemcpyHostToDevice));
  GSQ_CUDA_CHECK(cudaMemcpy(dc.get(), c.data(), n * 4, cudaMemcpyHostToDevice));
  for (int width : {4, 8, 16}) {
    for (auto op : {probes::MemOp::copy, probes::MemOp::triad}) {
      GSQ_CUDA_CHECK(cudaMemset(da.get(), 0xFF, n * 4));  // poisoned
      ASSERT_EQ(probes::launch_mem_op(op, width, da.get(), db.get(), dc.get(), nullptr, n * 4, 132, nullptr),
                cudaSuccess);
      GSQ_CUDA_CHECK(cudaMemcpy(out.data(), da.get(), n * 4, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < n; ++i) {
        const double want = op == probes::MemOp::copy ? b[i] : static_cast<double>(b[i]) + 0.4 * c[i];
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
  const bench::Run mem = run_suite("mem", mem_suite(), o);
  o.overrides = {{"bytes", {"64Mi"}}};
  const bench::Run pcie = run_suite("pcie", pcie_suite(), o);
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

}  // namespace
}  // namespace gsq::bench
