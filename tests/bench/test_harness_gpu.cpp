// GPU tests of the harness (label `gpu`): the copy kernel is exact, and a short run of the core suite gives samples.
#include "bench/device_kernels.hpp"
#include "bench/runner.hpp"
#include "cuda/raii.hpp"

#include "support/gpu.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace gsq::bench {
namespace {

using test::have_gpu;

TEST(HarnessGpu, CopyKernelCopiesEveryByteAtEveryGridFraction) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: cudaGetDeviceCount found no device";
  std::mt19937 rng(std::random_device{}());  // fresh inputs each run
  for (const size_t bytes : {size_t{16}, size_t{4096 + 16}, size_t{3} << 20}) {
    for (const double fraction : {1.0, 0.5, 0.01}) {
      std::vector<uint32_t> in(bytes / 4), out(bytes / 4);
      for (auto& x : in) x = static_cast<uint32_t>(rng());
      cuda::DeviceBuffer src = cuda::DeviceBuffer::create(bytes), dst = cuda::DeviceBuffer::create(bytes);
      GSQ_CUDA_CHECK(cudaMemcpy(src.get(), in.data(), bytes, cudaMemcpyHostToDevice));
      GSQ_CUDA_CHECK(cudaMemset(dst.get(), 0xFF, bytes));  // poisoned: NaN patterns where nothing was written
      launch_copy_kernel(dst.get(), src.get(), bytes, 132, fraction, nullptr);
      GSQ_CUDA_CHECK(cudaGetLastError());
      GSQ_CUDA_CHECK(cudaMemcpy(out.data(), dst.get(), bytes, cudaMemcpyDeviceToHost));
      EXPECT_EQ(std::memcmp(in.data(), out.data(), bytes), 0) << bytes << " bytes, grid fraction " << fraction;
    }
  }
}

TEST(HarnessGpu, ShortCoreRunGivesSamplesInBothModes) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: cudaGetDeviceCount found no device";
  RunOptions o;
  o.filter = "copy.memcpy_d2d|launch.empty";
  o.overrides = {{"bytes", {"64Mi"}}};
  o.settings.max_seconds = 0.3;
  o.allow_busy = true;
  const bench::Run run = run_suite("core", core_suite(), o);
  ASSERT_EQ(run.results.size(), 3u);  // launch.empty graph=no/yes, memcpy 64Mi
  for (const auto& r : run.results) {
    ASSERT_EQ(r.measurements.size(), r.name == "launch.empty" ? 3u : 2u) << r.name;  // launch.empty adds host mode
    for (const auto& m : r.measurements) {
      EXPECT_GE(m.samples_ns.size(), 5u);
      for (double ns : m.samples_ns) EXPECT_GT(ns, 0);
      EXPECT_FALSE(m.stop_reason.empty());
    }
  }
  const Derived d = derive(run.results[2], run.results[2].measurements[0]);
  EXPECT_GT(d.bytes_per_s, 0);
  EXPECT_GT(run.results[2].peak_bytes_per_s, 0) << "theoretical HBM from NVML";
}

TEST(HarnessGpu, InterleavedRunKeepsEveryConfigurationInOrder) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: cudaGetDeviceCount found no device";
  RunOptions o;
  o.filter = "copy.memcpy_d2d|launch.empty";
  o.overrides = {{"bytes", {"16Mi", "64Mi"}}};
  o.settings.max_seconds = 0.3;
  o.settings.interleave = true;
  o.allow_busy = true;
  const bench::Run run = run_suite("core", core_suite(), o);
  ASSERT_EQ(run.results.size(), 4u);
  EXPECT_EQ(run.results[0].name, "launch.empty");
  EXPECT_EQ(run.results[2].axes.at("bytes"), "16Mi");
  EXPECT_EQ(run.results[3].axes.at("bytes"), "64Mi");
  for (const auto& r : run.results) {
    for (const auto& m : r.measurements) {
      EXPECT_GE(m.samples_ns.size(), 5u) << config_label(r) << " " << m.mode;
      for (double ns : m.samples_ns) EXPECT_GT(ns, 0);
      // Its own time, not the turns it waited (four configurations: about 1.2 s if the waits counted).
      EXPECT_LT(m.wall_s, 0.6) << config_label(r) << " " << m.mode;
    }
  }
  EXPECT_GT(derive(run.results[3], run.results[3].measurements[0]).bytes_per_s,
            derive(run.results[2], run.results[2].measurements[0]).bytes_per_s * 0.5);
  EXPECT_TRUE(to_json(run, false).at("settings").at("interleave").get<bool>());
}

}  // namespace
}  // namespace gsq::bench
