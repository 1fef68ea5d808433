// GPU tests of the kernel library (label `gpu`): every kernel against its fp64 reference on fresh random inputs over
// a sweep of widths that takes every dispatch path (warp, block, 512 × 16, two-pass; 16-byte and one-element
// accesses, unaligned rows), outputs poisoned with NaN first; the dropout mask bit for bit and its keep rate; the
// occupancy arithmetic against the CUDA runtime's.
#include "cuda/raii.hpp"
#include "gpusqueeze/kernels.h"
#include "kernels/philox.hpp"
#include "kernels/reference.hpp"
#include "probes/occupancy.hpp"
#include "support/gpu.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace gsq::kernels {
namespace {

using cuda::DeviceBuffer;

using test::have_gpu;
using namespace probes;  // the occupancy calculator checked against the runtime

std::mt19937_64& rng() {
  static std::mt19937_64 r(std::random_device{}());
  return r;
}

// Normal(mean, sd) values rounded to the dtype, as the device sees them and as doubles.
struct HostTensor {
  std::vector<uint8_t> raw;
  std::vector<double> values;
};
HostTensor random_tensor(DType t, size_t n, double mean = 0, double sd = 1) {
  std::normal_distribution<double> nd(mean, sd);
  std::vector<double> v(n);
  for (auto& x : v) x = nd(rng());
  HostTensor h;
  h.raw = ref::from_double(t, v);
  h.values = ref::to_double(t, h.raw.data(), n);
  return h;
}

// A device copy of `h` starting `shift` elements into its buffer (shift 1 makes every pointer unaligned).
cuda::DeviceBuffer upload(const HostTensor& h, DType t, int shift = 0) {
  const size_t es = static_cast<size_t>(dtype_size(t));
  cuda::DeviceBuffer d = cuda::DeviceBuffer::create(h.raw.size() + 16 + es * static_cast<size_t>(shift));
  GSQ_CUDA_CHECK(
      cudaMemcpy(static_cast<char*>(d.get()) + es * shift, h.raw.data(), h.raw.size(), cudaMemcpyHostToDevice));
  return d;
}

std::vector<double> download(const void* p, DType t, size_t n) {
  std::vector<uint8_t> raw(n * static_cast<size_t>(dtype_size(t)));
  GSQ_CUDA_CHECK(cudaMemcpy(raw.data(), p, raw.size(), cudaMemcpyDeviceToHost));
  return ref::to_double(t, raw.data(), n);
}

const char* name(DType t) {
  return t == DType::f32 ? "f32" : t == DType::f16 ? "f16" : "bf16";
}

struct Shape {
  int64_t rows, cols;
};
// Every plan: warp (≤ 1024 wide), block (2048 with two accesses, 4096, 32768 bf16), two-pass (33000, 65536, 100000,
// 262144), odd widths; the norms' two rows a thread (odd row counts leave a thread's second row out) and eight
// accesses a thread (16384 f32, 24576 and 32768 bf16), with and without a part-filled last pack slot (6144, 24576).
// The span kernel: ragged widths (4095, 30522, 50257: each row starts at another place in its first 16-byte pack), and
// rows too few for the GPU and too wide for registers split over clusters of two to eight blocks (1 × 151936,
// 20 × 50257; 2 × 33000, 2 × 65536, 1 × 100000 and 1 × 262144 above are split too; 8 × 16384 stays in registers).
const Shape kShapes[] = {{37, 1},
                         {33, 7},
                         {64, 64},
                         {17, 100},
                         {9, 256},
                         {5, 512},
                         {5, 1000},
                         {8, 1024},
                         {7, 2048},
                         {6, 4096},
                         {3, 4104},
                         {5, 6144},
                         {4, 8192},
                         {2, 12288},
                         {3, 16384},
                         {3, 24576},
                         {2, 32768},
                         {2, 33000},
                         {2, 65536},
                         {1, 100000},
                         {1, 262144},
                         {5, 4095},
                         {3, 30522},
                         {8, 16384},
                         {20, 50257},
                         {70, 50257},
                         {1, 151936},
                         // Rows enough for the GPU (more than half its SMs): the two-read plans with cache hints
                         // that few rows no longer take (512 × 2, 256 × 2, 1024 × 1-4 blocks).
                         {70, 4096},
                         // and the register plans for many rows that few rows no longer take either.
                         {70, 100},
                         {70, 768},
                         {70, 1000},
                         {70, 8192},
                         {70, 16384},
                         {67, 40000}};

// The GPU's SMs where it has clusters, as the dispatch sees them (plan_row splits rows over them).
int cluster_sms() {
  int device = 0, major = 0, sms = 0;
  GSQ_CUDA_CHECK(cudaGetDevice(&device));
  GSQ_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  GSQ_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return major >= 9 ? sms : 0;
}

using Op = RowOp;
const char* op_name(Op o) {
  switch (o) {
    case Op::layer_norm:
      return "layer_norm";
    case Op::rms_norm:
      return "rms_norm";
    case Op::softmax:
      return "softmax";
    case Op::softmax_dropout:
      return "softmax_dropout";
    case Op::add_rms_norm:
      return "add_rms_norm";
  }
  return "?";
}

void check_row_op(Op op, DType t, Shape s, int shift) {
  const auto n = static_cast<size_t>(s.rows * s.cols);
  const auto cols = static_cast<size_t>(s.cols);
  // LayerNorm rows sit far from zero (mean 3) so the statistics must not cancel; softmax inputs span e^±9.
  const HostTensor x = random_tensor(t, n, op == Op::layer_norm ? 3.0 : 0.0, op == Op::layer_norm ? 1.0 : 3.0);
  const HostTensor w = random_tensor(t, cols, 1.0, 0.5), b = random_tensor(t, cols);
  cuda::DeviceBuffer dx = upload(x, t, shift), dw = upload(w, t, shift), db = upload(b, t, shift);
  cuda::DeviceBuffer dy = cuda::DeviceBuffer::create(x.raw.size() + 64);
  const size_t es = static_cast<size_t>(dtype_size(t));
  void* y = static_cast<char*>(dy.get()) + es * static_cast<size_t>(shift);
  const void* px = static_cast<char*>(dx.get()) + es * static_cast<size_t>(shift);
  const void* pw = static_cast<char*>(dw.get()) + es * static_cast<size_t>(shift);
  const void* pb = static_cast<char*>(db.get()) + es * static_cast<size_t>(shift);
  GSQ_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, x.raw.size() + 64));  // NaN in all three dtypes
  const auto gt = static_cast<gsq_dtype>(t);
  const uint64_t seed = rng()(), offset = rng()() % 1000;
  const float eps = 1e-5f, p = 0.3f;
  gsq_status st = GSQ_SUCCESS;
  std::vector<double> want;
  switch (op) {
    case Op::layer_norm:
      st = gsq_layer_norm(y, px, pw, pb, s.rows, s.cols, eps, gt, nullptr);
      want = ref::layer_norm(x.values, w.values, b.values, s.rows, s.cols, eps);
      break;
    case Op::rms_norm:
      st = gsq_rms_norm(y, px, pw, s.rows, s.cols, eps, gt, nullptr);
      want = ref::rms_norm(x.values, w.values, s.rows, s.cols, eps);
      break;
    case Op::softmax:
      st = gsq_softmax(y, px, s.rows, s.cols, gt, nullptr);
      want = ref::softmax(x.values, s.rows, s.cols);
      break;
    case Op::softmax_dropout:
      st = gsq_softmax_dropout(y, px, s.rows, s.cols, p, seed, offset, gt, nullptr);
      want = ref::softmax_dropout(x.values, s.rows, s.cols, p, seed, offset);
      break;
    case Op::add_rms_norm:  // check_add_rms_norm: it has a residual to give and check
      FAIL() << "check_row_op does not take add_rms_norm";
  }
  ASSERT_EQ(st, GSQ_SUCCESS) << gsq_last_error();
  GSQ_CUDA_CHECK(cudaDeviceSynchronize());
  const auto got = download(y, t, n);
  const std::string where = std::string(op_name(op)) + " " + name(t) + " [" + std::to_string(s.rows) + ", " +
                            std::to_string(s.cols) + "]" + (shift ? " unaligned" : "") +
                            " plan: " + plan_row(op, t, s.cols, shift == 0, s.rows, cluster_sms()).describe();
  if (op == Op::softmax_dropout) {
    int64_t mask_mismatch = 0;
    // A kept value below the dtype's smallest subnormal rounds to 0 (f16 underflows near 3e-8): not a mask error.
    for (size_t i = 0; i < n; ++i)
      mask_mismatch += (want[i] == 0) != (got[i] == 0) && !(got[i] == 0 && want[i] < 2 * ref::subnormal_step(t));
    EXPECT_EQ(mask_mismatch, 0) << where << " seed " << seed << " offset " << offset;
  }
  // Each row is checked on its own scale (a softmax row of 100000 has tiny values).
  for (int64_t r = 0; r < s.rows; ++r) {
    const std::vector<double> g(got.begin() + r * s.cols, got.begin() + (r + 1) * s.cols),
        wr(want.begin() + r * s.cols, want.begin() + (r + 1) * s.cols);
    double tol = ref::tolerance(t);
    if (op == Op::layer_norm) {
      // The kernels' fp32 statistics are sums of x - shift and its square, shift the row's first element: the
      // variance loses (1 + (shift - mean)² / var) times fp32's rounding for each of about log2(cols) + 8 additions
      // an element's contribution passes through (a thread's packs, then the tree), and the output half of that.
      double mean = 0, var = 0;
      for (size_t c = 0; c < cols; ++c) mean += x.values[static_cast<size_t>(r) * cols + c];
      mean /= static_cast<double>(cols);
      for (size_t c = 0; c < cols; ++c) {
        const double d = x.values[static_cast<size_t>(r) * cols + c] - mean;
        var += d * d;
      }
      var /= static_cast<double>(cols);
      const double first = x.values[static_cast<size_t>(r) * cols] - mean;
      tol += 0.5 * std::ldexp(1.0, -24) * (std::log2(static_cast<double>(cols)) + 8) * (1 + first * first / var);
    }
    const auto e = ref::compare(g, wr, tol, ref::subnormal_step(t));
    ASSERT_EQ(e.bad, 0) << where << " row " << r << ": max rel error " << e.max_rel << " at column " << e.worst
                        << " (got " << g[static_cast<size_t>(e.worst)] << ", want " << wr[static_cast<size_t>(e.worst)]
                        << ")";
  }
}

TEST(KernelsGpu, RowKernelsMatchTheReferenceOnEveryPath) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: cudaGetDeviceCount found no device";
  for (Op op : {Op::layer_norm, Op::rms_norm, Op::softmax, Op::softmax_dropout})
    for (DType t : {DType::f32, DType::f16, DType::bf16})
      for (const Shape& s : kShapes)
        for (int shift : {0, 1}) {
          check_row_op(op, t, s, shift);
          if (HasFatalFailure()) return;
        }
}

// The residual add + RMSNorm on every path (register rows, two reads, the span kernel ragged and split over clusters),
// unaligned pointers (one element per access) and in place (y == x): the residual written back must be x + residual
// rounded to the dtype exactly, y RMSNorm of it within the dtype's tolerance; what lies past the rows stays poisoned.
// residual_shift: the residual's own offset in elements (1 with the others aligned: no 16-byte access may touch it).
void check_add_rms_norm(DType t, Shape s, int shift, bool in_place, int residual_shift = -1) {
  if (residual_shift < 0) residual_shift = shift;
  const auto n = static_cast<size_t>(s.rows * s.cols);
  const HostTensor x = random_tensor(t, n), r = random_tensor(t, n, 0.5, 2.0),
                   w = random_tensor(t, static_cast<size_t>(s.cols), 1.0, 0.5);
  cuda::DeviceBuffer dx = upload(x, t, shift), dr = upload(r, t, residual_shift), dw = upload(w, t, shift);
  const size_t es = static_cast<size_t>(dtype_size(t));
  cuda::DeviceBuffer dy = cuda::DeviceBuffer::create(x.raw.size() + 64);
  GSQ_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, x.raw.size() + 64));  // NaN in all three dtypes
  auto at = [&](cuda::DeviceBuffer& b, int k) { return static_cast<char*>(b.get()) + es * static_cast<size_t>(k); };
  void* px = at(dx, shift);
  void* pr = at(dr, residual_shift);
  void* y = in_place ? px : at(dy, shift);
  ASSERT_EQ(gsq_add_rms_norm(y, pr, px, at(dw, shift), s.rows, s.cols, 1e-5f, static_cast<gsq_dtype>(t), nullptr),
            GSQ_SUCCESS)
      << gsq_last_error();
  GSQ_CUDA_CHECK(cudaDeviceSynchronize());
  const auto want = ref::add_rms_norm(t, x.values, r.values, w.values, s.rows, s.cols, 1e-5);
  const std::string where =
      std::string("add_rms_norm ") + name(t) + " [" + std::to_string(s.rows) + ", " + std::to_string(s.cols) + "]" +
      (shift ? " unaligned" : "") + (residual_shift != shift ? " residual unaligned" : "") +
      (in_place ? " in place" : "") + " plan: " +
      plan_row(RowOp::add_rms_norm, t, s.cols, shift == 0 && residual_shift == 0, s.rows, cluster_sms()).describe();
  const auto got_r = download(pr, t, n);
  const auto er = ref::compare(got_r, want.residual, 0);
  ASSERT_EQ(er.bad, 0) << where << ": the residual at " << er.worst << " is " << got_r[static_cast<size_t>(er.worst)]
                       << ", x + residual rounded is " << want.residual[static_cast<size_t>(er.worst)];
  const auto got = download(y, t, n);
  for (int64_t row = 0; row < s.rows; ++row) {
    const std::vector<double> g(got.begin() + row * s.cols, got.begin() + (row + 1) * s.cols),
        wr(want.y.begin() + row * s.cols, want.y.begin() + (row + 1) * s.cols);
    const auto e = ref::compare(g, wr, ref::tolerance(t), ref::subnormal_step(t));
    ASSERT_EQ(e.bad, 0) << where << " row " << row << ": max rel error " << e.max_rel << " at column " << e.worst;
  }
  if (!in_place) {  // nothing written past the last row
    const auto tail = download(static_cast<char*>(y) + n * es, t, 1);
    EXPECT_TRUE(std::isnan(tail[0])) << where << ": wrote past the rows";
  }
}

TEST(KernelsGpu, ResidualAddRmsNormMatchesTheReferenceOnEveryPath) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: cudaGetDeviceCount found no device";
  for (DType t : {DType::f32, DType::f16, DType::bf16})
    for (const Shape& s : kShapes)
      for (int shift : {0, 1}) {
        check_add_rms_norm(t, s, shift, false);
        if (HasFatalFailure()) return;
      }
  for (const Shape& s : {Shape{7, 4096}, Shape{3, 50257}, Shape{1, 151936}, Shape{2, 65536}}) {
    check_add_rms_norm(DType::bf16, s, 0, true);
    if (HasFatalFailure()) return;
    check_add_rms_norm(DType::bf16, s, 0, false, 1);  // only the residual unaligned
    if (HasFatalFailure()) return;
  }
}

TEST(KernelsGpu, NormsWithoutWeightOrBiasAndInPlace) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: cudaGetDeviceCount found no device";
  const DType t = DType::bf16;
  const int64_t rows = 11, cols = 4096;
  const HostTensor x = random_tensor(t, static_cast<size_t>(rows * cols));
  cuda::DeviceBuffer d = upload(x, t);
  ASSERT_EQ(gsq_layer_norm(d.get(), d.get(), nullptr, nullptr, rows, cols, 1e-6f, GSQ_BFLOAT16, nullptr), GSQ_SUCCESS);
  const auto got = download(d.get(), t, x.values.size());
  const auto e = ref::compare(got, ref::layer_norm(x.values, {}, {}, rows, cols, 1e-6), ref::tolerance(t));
  EXPECT_EQ(e.bad, 0) << "max rel " << e.max_rel;
  cuda::DeviceBuffer d2 = upload(x, t);
  ASSERT_EQ(gsq_rms_norm(d2.get(), d2.get(), nullptr, rows, cols, 1e-6f, GSQ_BFLOAT16, nullptr), GSQ_SUCCESS);
  const auto e2 = ref::compare(download(d2.get(), t, x.values.size()), ref::rms_norm(x.values, {}, rows, cols, 1e-6),
                               ref::tolerance(t));
  EXPECT_EQ(e2.bad, 0) << "max rel " << e2.max_rel;
}

TEST(KernelsGpu, DropoutIsDeterministicAndKeepsTheRightFraction) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: cudaGetDeviceCount found no device";
  const int64_t rows = 1024, cols = 4096;
  const auto n = static_cast<size_t>(rows * cols);
  const HostTensor x = random_tensor(DType::f32, n);
  cuda::DeviceBuffer dx = upload(x, DType::f32), a = cuda::DeviceBuffer::create(n * 4),
                     b = cuda::DeviceBuffer::create(n * 4);
  const uint64_t seed = rng()();
  for (float p : {0.1f, 0.5f}) {
    ASSERT_EQ(gsq_softmax_dropout(a.get(), dx.get(), rows, cols, p, seed, 0, GSQ_FLOAT32, nullptr), GSQ_SUCCESS);
    ASSERT_EQ(gsq_softmax_dropout(b.get(), dx.get(), rows, cols, p, seed, 0, GSQ_FLOAT32, nullptr), GSQ_SUCCESS);
    std::vector<float> ha(n), hb(n);
    GSQ_CUDA_CHECK(cudaMemcpy(ha.data(), a.get(), n * 4, cudaMemcpyDeviceToHost));
    GSQ_CUDA_CHECK(cudaMemcpy(hb.data(), b.get(), n * 4, cudaMemcpyDeviceToHost));
    EXPECT_EQ(std::memcmp(ha.data(), hb.data(), n * 4), 0) << "same seed and offset, different output";
    int64_t kept = 0;
    for (float v : ha) kept += v != 0;
    const double mean = static_cast<double>(n) * (1 - p), sd = std::sqrt(static_cast<double>(n) * p * (1 - p));
    EXPECT_LT(std::abs(static_cast<double>(kept) - mean), 5 * sd) << "p=" << p << " seed=" << seed;
  }
  // A different offset draws a different mask.
  ASSERT_EQ(gsq_softmax_dropout(b.get(), dx.get(), rows, cols, 0.5f, seed, 1, GSQ_FLOAT32, nullptr), GSQ_SUCCESS);
  std::vector<float> ha(n), hb(n);
  GSQ_CUDA_CHECK(cudaMemcpy(ha.data(), a.get(), n * 4, cudaMemcpyDeviceToHost));
  GSQ_CUDA_CHECK(cudaMemcpy(hb.data(), b.get(), n * 4, cudaMemcpyDeviceToHost));
  int64_t same = 0;
  for (size_t i = 0; i < n; ++i) same += (ha[i] == 0) == (hb[i] == 0);
  EXPECT_LT(static_cast<double>(same), 0.6 * static_cast<double>(n));
}

TEST(KernelsGpu, LayoutConversionsAreExact) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: cudaGetDeviceCount found no device";
  // Odd sizes (element tiles), even ones (32-bit pairs), multiples of 8 with partial tiles (16-byte chunks).
  const int64_t shapes[][4] = {{1, 1, 1, 1},     {2, 3, 5, 7},     {1, 64, 64, 1},  {3, 130, 17, 19}, {4, 67, 33, 65},
                               {2, 256, 14, 14}, {1, 3, 224, 224}, {2, 72, 10, 12}, {2, 136, 28, 28}, {1, 8, 8, 1}};
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    for (const auto& sh : shapes) {
      const int64_t n = sh[0], c = sh[1], h = sh[2], w = sh[3];
      const auto count = static_cast<size_t>(n * c * h * w);
      const HostTensor x = random_tensor(t, count);
      cuda::DeviceBuffer dx = upload(x, t), dy = cuda::DeviceBuffer::create(x.raw.size()),
                         dz = cuda::DeviceBuffer::create(x.raw.size());
      GSQ_CUDA_CHECK(cudaMemset(dy.get(), 0xFF, x.raw.size()));
      GSQ_CUDA_CHECK(cudaMemset(dz.get(), 0xFF, x.raw.size()));
      const auto gt = static_cast<gsq_dtype>(t);
      ASSERT_EQ(gsq_nchw_to_nhwc(dy.get(), dx.get(), n, c, h, w, gt, nullptr), GSQ_SUCCESS) << gsq_last_error();
      ASSERT_EQ(gsq_nhwc_to_nchw(dz.get(), dy.get(), n, c, h, w, gt, nullptr), GSQ_SUCCESS) << gsq_last_error();
      const auto nhwc = download(dy.get(), t, count), back = download(dz.get(), t, count);
      const auto want = ref::transpose(x.values, n, c, h * w);
      const std::string where = std::string(name(t)) + " " + std::to_string(n) + "x" + std::to_string(c) + "x" +
                                std::to_string(h) + "x" + std::to_string(w);
      EXPECT_EQ(nhwc, want) << where;
      EXPECT_EQ(back, x.values) << where << " round trip";
    }
  }
}

TEST(KernelsGpu, OccupancyArithmeticAgreesWithTheRuntime) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: cudaGetDeviceCount found no device";
  int major = 0, minor = 0;
  GSQ_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  GSQ_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
  const auto limits = arch_limits(major * 10 + minor);
  ASSERT_TRUE(limits.has_value()) << "sm_" << major << minor << " not in the table";
  ASSERT_FALSE(find_cuobjdump().empty()) << "cuobjdump not found: scripts/setup.sh installs it (PyPI "
                                            "nvidia-cuda-cuobjdump); without it the comparison below checks nothing";
  const std::vector<KernelResources> dumped = read_resource_usage(GSQ_KERNELS_LIBRARY);
  for (const auto& [label, fn] : sample_kernels()) {
    cudaFuncAttributes attr{};
    ASSERT_EQ(cudaFuncGetAttributes(&attr, fn), cudaSuccess) << label;
    const char* mangled = nullptr;
    ASSERT_EQ(cudaFuncGetName(&mangled, fn), cudaSuccess) << label;
    int matched = 0;
    for (const auto& k : dumped) {
      if (k.mangled != mangled) continue;
      ++matched;
      EXPECT_EQ(k.regs, attr.numRegs) << label << ": cuobjdump vs cudaFuncGetAttributes";
      EXPECT_EQ(static_cast<size_t>(k.shared), attr.sharedSizeBytes) << label;
      EXPECT_EQ(static_cast<size_t>(k.local), attr.localSizeBytes) << label;
    }
    EXPECT_GE(matched, 1) << label << ": cuobjdump lists no kernel named " << mangled;
    for (int block : {32, 128, 256, 512, 1024}) {
      if (block > attr.maxThreadsPerBlock) continue;
      for (size_t dyn : {size_t{0}, size_t{20000}}) {
        int blocks = 0;
        ASSERT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn, block, dyn), cudaSuccess);
        const auto o =
            theoretical_occupancy(*limits, block, attr.numRegs, static_cast<int64_t>(attr.sharedSizeBytes + dyn));
        EXPECT_EQ(o.blocks_per_sm, blocks) << label << ", " << block << " threads, " << attr.numRegs << " registers, "
                                           << dyn << " B dynamic shared memory";
      }
    }
  }
}

}  // namespace
}  // namespace gsq::kernels
