// The `quant` bench suite: W4A16 and W8A16 against cuBLAS fp16 (cublasGemmEx, the GEMM torch's `x @ w.T` calls) on
// the decoding shapes, and cudaMemcpy D2D as the bandwidth ceiling, in one run. Each benchmark cycles through enough
// copies of its weights (≥ 192 MiB together, three times the H200's L2) that no launch finds them cached, in batch
// mode too; cold mode flushes the L2 besides.
#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/cublas.hpp"
#include "cuda/raii.hpp"
#include "gpusqueeze/kernels.h"
#include "probes/kernel_suites.hpp"

#include <fmt/format.h>

#include <map>
#include <memory>

namespace gsq::probes {

using namespace kernels;  // the kernels measured here, their launchers and types

namespace {

using bench::State;
using cuda::DeviceBuffer;

enum class Impl { w4, w8, cublas };

std::pair<int64_t, int64_t> parse_nk(const std::string& s) {
  const auto d = parse_dims(s, 2);
  if (!d || (*d)[0] < 64 || (*d)[1] < 64 || (*d)[0] % 64 || (*d)[1] % 64)
    throw_bad_input("shape=" + s + " (NxK, multiples of 64, e.g. 8192x8192)");
  return {(*d)[0], (*d)[1]};
}

void quant_benchmark(State& st, Impl impl) {
  const auto [n, k] = parse_nk(st.axis("shape"));
  const int64_t m = st.axis_int("m");
  if (m < 1 || m > 16) throw_bad_input(fmt::format("m={} (1 to 16)", m));
  const int64_t group = impl == Impl::w4 ? st.axis_int("group") : 0;
  const DType dt = DType::f16;
  const size_t w_bytes = impl == Impl::w4   ? static_cast<size_t>(n * k / 2)
                         : impl == Impl::w8 ? static_cast<size_t>(n * k)
                                            : static_cast<size_t>(n * k * 2);
  const size_t p_bytes = impl == Impl::w4   ? static_cast<size_t>(n * (k / group) * 4)
                         : impl == Impl::w8 ? static_cast<size_t>(n * 4)
                                            : 0;
  const size_t copies = std::max<size_t>(2, ((size_t{192} << 20) + w_bytes - 1) / w_bytes);
  std::vector<cuda::DeviceBuffer> w, p;
  for (size_t c = 0; c < copies; ++c) {
    w.push_back(cuda::DeviceBuffer::create(w_bytes));
    GSQ_CUDA_CHECK(fill_normal(impl == Impl::cublas ? DType::f16 : DType::f32, w.back().get(),
                               static_cast<int64_t>(w_bytes / (impl == Impl::cublas ? 2 : 4)), 10 + c, st.stream()));
    if (p_bytes) {
      p.push_back(cuda::DeviceBuffer::create(p_bytes));
      GSQ_CUDA_CHECK(fill_normal(impl == Impl::w4 ? DType::f16 : DType::f32, p.back().get(),
                                 static_cast<int64_t>(p_bytes / (impl == Impl::w4 ? 2 : 4)), 50 + c, st.stream()));
    }
  }
  cuda::DeviceBuffer x = cuda::DeviceBuffer::create(static_cast<size_t>(m * k * 2)),
                     y = cuda::DeviceBuffer::create(static_cast<size_t>(m * n * 2));
  GSQ_CUDA_CHECK(fill_normal(dt, x.get(), m * k, 3, st.stream()));
  st.set_bytes_per_launch(static_cast<double>(w_bytes + p_bytes) + 2.0 * static_cast<double>(m * (k + n)));
  st.set_flops_per_launch(2.0 * static_cast<double>(m * n * k));
  st.compare_to_dram_peak();
  const auto handle = impl == Impl::cublas ? std::make_unique<cuda::CublasHandle>(st.stream()) : nullptr;
  const auto gemm_ex = handle ? cuda::cublas().gemm_ex : nullptr;  // looked up once, outside the timed calls
  size_t next = 0;
  st.exec([&, n = n, k = k](cudaStream_t s) {  // the shape by value: clang 14 cannot capture structured bindings
    const size_t c = next++ % copies;
    gsq_status r = GSQ_SUCCESS;
    if (impl == Impl::w4) {
      r = gsq_w4a16_gemm(y.get(), x.get(), w[c].as<uint32_t>(), p[c].get(), nullptr, m, n, k, group, GSQ_FLOAT16,
                         reinterpret_cast<gsq_stream>(s));
    } else if (impl == Impl::w8) {
      r = gsq_w8a16_gemm(y.get(), x.get(), w[c].as<uint8_t>(), p[c].as<float>(), nullptr, m, n, k, GSQ_FLOAT16,
                         reinterpret_cast<gsq_stream>(s));
    } else {
      // Y[M][N] = X[M][K] · W[N][K]ᵀ in column-major terms: Yᵀ (N×M) = op_T(W as K×N) · Xᵀ (K×M).
      const float alpha = 1, beta = 0;
      GSQ_CUBLAS_CHECK(gemm_ex(handle->get(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                               static_cast<int>(k), &alpha, w[c].get(), CUDA_R_16F, static_cast<int>(k), x.get(),
                               CUDA_R_16F, static_cast<int>(k), &beta, y.get(), CUDA_R_16F, static_cast<int>(n),
                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    check_status(r);
  });
}

const std::vector<std::string> kShapes{"4096x4096", "8192x8192", "8192x28672", "28672x8192"};
const std::vector<std::string> kM{"1", "2", "4", "8", "16"};

}  // namespace

bench::Suite quant_suite() {
  return {
      {"quant.w4a16",
       "INT4 weights (group-wise fp16 scale and offset), fp16 activations: Y = X · Wᵀ, W given as NxK",
       {{"shape", kShapes}, {"m", kM}, {"group", {"128"}}},
       [](State& st) { quant_benchmark(st, Impl::w4); }},
      {"quant.w8a16",
       "INT8 weights (per-channel fp32 scale), fp16 activations",
       {{"shape", kShapes}, {"m", kM}},
       [](State& st) { quant_benchmark(st, Impl::w8); }},
      {"quant.cublas_fp16",
       "cublasGemmEx fp16 weights and activations, fp32 accumulation (torch's x @ w.T)",
       {{"shape", kShapes}, {"m", kM}},
       [](State& st) { quant_benchmark(st, Impl::cublas); }},
      {"quant.memcpy_d2d", "cudaMemcpyAsync D2D: the bandwidth ceiling", {{"bytes", {"256Mi"}}}, bench::memcpy_d2d},
  };
}

Table quant_table(const bench::Run& run) {
  Table t{{"shape NxK", "M", "W4A16 µs", "W8A16 µs", "cuBLAS fp16 µs", "W4 speedup", "W8 speedup", "W4 weight GB/s",
           "W4 × copy", "W8 × copy"},
          {}};
  double copy = 0;
  struct Cell {
    double us = 0, weight_gbps = 0;
  };
  std::map<std::pair<std::string, int64_t>, std::map<std::string, Cell>> cells;
  for (const auto& r : run.results) {
    if (r.measurements.empty()) continue;
    const auto d = bench::derive(r, r.measurements[0]);
    if (r.name == "quant.memcpy_d2d") {
      copy = std::max(copy, d.bytes_per_s);
      continue;
    }
    if (!r.axes.contains("shape")) continue;
    const auto key = std::pair{r.axes.at("shape"), std::stoll(r.axes.at("m"))};
    cells[key][r.name] = {d.p50 / 1e3, d.bytes_per_s};
  }
  for (const auto& cell : cells) {
    const auto& key = cell.first;  // the lambdas take `cell`: clang 14 cannot capture structured bindings
    auto us = [&cell](const char* name) { return cell.second.contains(name) ? cell.second.at(name).us : 0.0; };
    auto bw = [&cell](const char* name) { return cell.second.contains(name) ? cell.second.at(name).weight_gbps : 0.0; };
    const double w4 = us("quant.w4a16"), w8 = us("quant.w8a16"), cb = us("quant.cublas_fp16");
    auto ratio = [](double a, double b) { return a > 0 && b > 0 ? fmt::format("{:.2f}×", b / a) : std::string(); };
    t.rows.push_back({key.first, std::to_string(key.second), w4 > 0 ? fmt::format("{:.1f}", w4) : "",
                      w8 > 0 ? fmt::format("{:.1f}", w8) : "", cb > 0 ? fmt::format("{:.1f}", cb) : "", ratio(w4, cb),
                      ratio(w8, cb), fmt::format("{:.0f}", bw("quant.w4a16") / 1e9),
                      copy > 0 ? fmt::format("{:.2f}", bw("quant.w4a16") / copy) : "",
                      copy > 0 ? fmt::format("{:.2f}", bw("quant.w8a16") / copy) : ""});
  }
  return t;
}

}  // namespace gsq::probes
