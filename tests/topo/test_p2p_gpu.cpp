// GPU tests of probe p2p's SM side (label `gpu`): the copy kernel is exact (random words, a poisoned destination,
// a length that leaves the grid a tail), the ping-pong finishes every round without timing out, and on this machine's
// GPUs `probe_p2p` fills the matrices it can (the diagonal on one GPU).
#include "cuda/raii.hpp"
#include "topo/multigpu_probe.hpp"
#include "topo/p2p_kernels.hpp"

#include "support/gpu.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace gsq::topo {
namespace {

using test::have_gpu;

TEST(P2pGpu, TheSmCopyKernelIsExactAndTouchesNothingPastTheEnd) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: cudaGetDeviceCount found no device";
  std::mt19937_64 rng(std::random_device{}());
  const size_t words = (3u << 20) + 7;  // 16-byte words: not a multiple of the grid
  std::vector<uint64_t> in(words * 2), out(words * 2 + 2);
  for (auto& x : in) x = rng();
  auto src = cuda::DeviceBuffer::create(words * 16), dst = cuda::DeviceBuffer::create(words * 16 + 16);
  GSQ_CUDA_CHECK(cudaMemcpy(src.get(), in.data(), words * 16, cudaMemcpyHostToDevice));
  GSQ_CUDA_CHECK(cudaMemset(dst.get(), 0xA5, words * 16 + 16));  // poison, and a guard word past the end
  auto s = cuda::Stream::create();
  launch_sm_copy(dst.get(), src.get(), words * 16, 132 * 4, s.get());
  GSQ_CUDA_CHECK(cudaStreamSynchronize(s.get()));
  GSQ_CUDA_CHECK(cudaMemcpy(out.data(), dst.get(), words * 16 + 16, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < words * 2; ++i) ASSERT_EQ(out[i], in[i]) << "word " << i / 2;
  EXPECT_EQ(out[words * 2], 0xA5A5A5A5A5A5A5A5ull);
  EXPECT_EQ(out[words * 2 + 1], 0xA5A5A5A5A5A5A5A5ull);
}

TEST(P2pGpu, TheLocalPingPongPlaysEveryRound) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: cudaGetDeviceCount found no device";
  auto flags = cuda::DeviceBuffer::create(256), late = cuda::DeviceBuffer::create(sizeof(int));
  GSQ_CUDA_CHECK(cudaMemset(flags.get(), 0, 256));
  GSQ_CUDA_CHECK(cudaMemset(late.get(), 0, sizeof(int)));
  auto s = cuda::Stream::create();
  launch_pingpong_local(flags.as<int>(), 500, 2000, late.as<int>(), s.get());
  GSQ_CUDA_CHECK(cudaStreamSynchronize(s.get()));
  int f[64] = {}, timed_out = 1;
  GSQ_CUDA_CHECK(cudaMemcpy(f, flags.get(), sizeof f, cudaMemcpyDeviceToHost));
  GSQ_CUDA_CHECK(cudaMemcpy(&timed_out, late.get(), sizeof timed_out, cudaMemcpyDeviceToHost));
  EXPECT_EQ(timed_out, 0);
  EXPECT_EQ(f[0], 1000);  // the starter's flag: the last answer, 2 × rounds
  EXPECT_EQ(f[32], 999);  // the responder's: the last question
}

TEST(P2pGpu, TheProbeFillsWhatTheGpusHereAllow) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: cudaGetDeviceCount found no device";
  P2pOptions o;
  o.bytes = 64ull << 20;
  o.reps = 2;
  o.trials = 2;
  o.pingpong_rounds = 200;
  const auto r = probe_p2p(o);
  ASSERT_GE(r.gpus, 1);
  for (int s = 0; s < r.gpus; ++s)
    for (int d = 0; d < r.gpus; ++d) {
      EXPECT_GT(r.uni_gbs[s][d], 0) << s << "→" << d;
      const bool mapped = s == d || (r.peer_access[s][d] && r.peer_access[d][s]);
      EXPECT_EQ(r.sm_latency_us[s][d] > 0, mapped) << s << "→" << d;
      if (mapped) {
        EXPECT_LT(r.sm_latency_us[s][d], 50.0) << s << "→" << d;  // µs: a store, not a timeout
      }
      EXPECT_EQ(r.sm_uni_gbs[s][d] > 0, s == d || r.peer_access[s][d] != 0) << s << "→" << d;
    }
}

}  // namespace
}  // namespace gsq::topo
