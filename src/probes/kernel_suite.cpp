// The `kernels` bench suite: each kernel, ours and the naive version, next to cudaMemcpy D2D of the same bytes, all
// in one run so the ratios compare figures taken side by side. Inputs are normal(0, 1) values, 256 MiB by default
// (four times the H200's L2), so every launch reads from HBM.
#include "core/error.hpp"
#include "cuda/raii.hpp"
#include "gpusqueeze/kernels.h"
#include "probes/kernel_suites.hpp"
#include "probes/naive_kernels.hpp"

#include <fmt/format.h>

#include <array>
#include <map>

namespace gsq::probes {

using namespace kernels;  // the kernels measured here, their launchers and types

std::optional<DType> parse_dtype(const std::string& s) {
  if (s == "f32" || s == "fp32" || s == "float32" || s == "float") return DType::f32;
  if (s == "f16" || s == "fp16" || s == "float16" || s == "half") return DType::f16;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  return std::nullopt;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
  }
  return "?";
}

namespace {

using bench::State;
using cuda::DeviceBuffer;

DType dtype_axis(State& st) {
  const auto d = parse_dtype(st.axis("dtype"));
  if (!d) throw_bad_input("dtype=" + st.axis("dtype") + " (f32, f16 or bf16)");
  return *d;
}

bool naive_impl(State& st) {
  const std::string& impl = st.axis("impl");
  if (impl != "ours" && impl != "naive") throw_bad_input("impl=" + impl + " (ours or naive)");
  return impl == "naive";
}

void row_benchmark(State& st, RowOp op) {
  const DType dt = dtype_axis(st);
  const int64_t cols = st.axis_int("cols"), elements = st.axis_int("elements");
  if (cols < 1 || elements < cols) throw_bad_input(fmt::format("cols={} elements={}", cols, elements));
  const int64_t rows = elements / cols, n = rows * cols;
  const bool naive = naive_impl(st);
  const auto bytes = static_cast<size_t>(n * dtype_size(dt));
  cuda::DeviceBuffer x = cuda::DeviceBuffer::create(bytes), y = cuda::DeviceBuffer::create(bytes);
  cuda::DeviceBuffer w = cuda::DeviceBuffer::create(static_cast<size_t>(cols * dtype_size(dt)));
  cuda::DeviceBuffer b = cuda::DeviceBuffer::create(static_cast<size_t>(cols * dtype_size(dt)));
  GSQ_CUDA_CHECK(fill_normal(dt, x.get(), n, 1, st.stream()));
  GSQ_CUDA_CHECK(fill_normal(dt, w.get(), cols, 2, st.stream()));
  GSQ_CUDA_CHECK(fill_normal(dt, b.get(), cols, 3, st.stream()));
  st.set_bytes_per_launch(2.0 * static_cast<double>(bytes));  // the row is read once and written once
  st.set_items_per_launch(static_cast<double>(n));
  st.compare_to_dram_peak();
  const auto gd = static_cast<gsq_dtype>(dt);
  st.exec([&, op, naive, gd](cudaStream_t s) {
    auto gs = reinterpret_cast<gsq_stream>(s);
    if (naive) {
      RowArgs a{y.get(), x.get(), w.get(), b.get(), rows, cols, 1e-5f, 0.1f, 7, 0};
      GSQ_CUDA_CHECK(launch_row_naive(op, static_cast<DType>(gd), a, s));
      return;
    }
    switch (op) {
      case RowOp::layer_norm:
        check_status(gsq_layer_norm(y.get(), x.get(), w.get(), b.get(), rows, cols, 1e-5f, gd, gs));
        break;
      case RowOp::rms_norm:
        check_status(gsq_rms_norm(y.get(), x.get(), w.get(), rows, cols, 1e-5f, gd, gs));
        break;
      case RowOp::softmax:
        check_status(gsq_softmax(y.get(), x.get(), rows, cols, gd, gs));
        break;
      case RowOp::softmax_dropout:
        check_status(gsq_softmax_dropout(y.get(), x.get(), rows, cols, 0.1f, 7, 0, gd, gs));
        break;
      case RowOp::add_rms_norm:  // not in the suite: every call would grow its residual (bench/kernels/row_shapes.py
        break;                   // times it against PyTorch with fresh inputs)
    }
  });
}

// "NxCxHxW"
std::array<int64_t, 4> parse_shape(const std::string& s) {
  const auto d = parse_dims(s, 4);
  if (!d) throw_bad_input("shape=" + s + " (use NxCxHxW, e.g. 32x256x56x56)");
  return {(*d)[0], (*d)[1], (*d)[2], (*d)[3]};
}

void layout_benchmark(State& st, bool to_nhwc) {
  const DType dt = dtype_axis(st);
  const auto [n, c, h, w] = parse_shape(st.axis("shape"));
  const bool naive = naive_impl(st);
  const int64_t count = n * c * h * w;
  const auto bytes = static_cast<size_t>(count * dtype_size(dt));
  cuda::DeviceBuffer x = cuda::DeviceBuffer::create(bytes), y = cuda::DeviceBuffer::create(bytes);
  GSQ_CUDA_CHECK(fill_normal(dt, x.get(), count, 4, st.stream()));
  st.set_bytes_per_launch(2.0 * static_cast<double>(bytes));
  st.compare_to_dram_peak();
  const int64_t rows = to_nhwc ? c : h * w, cols = to_nhwc ? h * w : c;
  // The shape's parts by value: structured bindings are not capturable before clang 16 (the fuzz build's compiler).
  st.exec([&, naive, rows, cols, n = n, c = c, h = h, w = w](cudaStream_t s) {
    if (naive) {
      GSQ_CUDA_CHECK(launch_transpose_naive(dt, y.get(), x.get(), n, rows, cols, s));
    } else {
      auto f = to_nhwc ? gsq_nchw_to_nhwc : gsq_nhwc_to_nchw;
      check_status(f(y.get(), x.get(), n, c, h, w, static_cast<gsq_dtype>(dt), reinterpret_cast<gsq_stream>(s)));
    }
  });
}

const std::vector<std::string> kWidths{"256", "1024", "4096", "16384", "65536"};

bench::Benchmark row_entry(const char* name, const char* what, RowOp op) {
  return {fmt::format("kernels.{}", name),
          fmt::format("{} over the last dimension of elements/cols rows (read + write counted)", what),
          {{"dtype", {"bf16"}}, {"cols", kWidths}, {"elements", {"128Mi"}}, {"impl", {"ours", "naive"}}},
          [op](State& st) { row_benchmark(st, op); }};
}

}  // namespace

bench::Suite kernels_suite() {
  const std::vector<std::string> shapes{"32x256x56x56", "8x64x224x224", "64x512x28x28"};
  return {
      row_entry("layer_norm", "LayerNorm (weight and bias, eps 1e-5)", RowOp::layer_norm),
      row_entry("rms_norm", "RMSNorm (weight, eps 1e-5)", RowOp::rms_norm),
      row_entry("softmax", "softmax", RowOp::softmax),
      row_entry("softmax_dropout", "softmax then dropout p = 0.1 (Philox), fused", RowOp::softmax_dropout),
      {"kernels.nchw_to_nhwc",
       "NCHW → NHWC (read + write counted)",
       {{"dtype", {"bf16"}}, {"shape", shapes}, {"impl", {"ours", "naive"}}},
       [](State& st) { layout_benchmark(st, true); }},
      {"kernels.nhwc_to_nchw",
       "NHWC → NCHW (read + write counted)",
       {{"dtype", {"bf16"}}, {"shape", shapes}, {"impl", {"ours", "naive"}}},
       [](State& st) { layout_benchmark(st, false); }},
      {"kernels.memcpy_d2d",
       "cudaMemcpyAsync D2D of the inputs' size: the copy ceiling",
       {{"bytes", {"256Mi"}}},
       bench::memcpy_d2d},
  };
}

void check_status(gsq_status s) {
  if (s != GSQ_SUCCESS) throw_bad_input(fmt::format("{}: {}", gsq_status_name(s), gsq_last_error()));
}

std::optional<std::vector<int64_t>> parse_dims(const std::string& s, size_t count) {
  std::vector<int64_t> d;
  for (size_t pos = 0; pos <= s.size();) {
    const size_t x = std::min(s.find('x', pos), s.size());
    const auto v = bench::parse_size(s.substr(pos, x - pos));
    if (!v || *v < 1) return std::nullopt;
    d.push_back(*v);
    pos = x + 1;
  }
  if (d.size() != count) return std::nullopt;
  return d;
}

Table copy_ratio_table(const bench::Run& run) {
  Table t{{"kernel", "configuration", "GB/s", "× cudaMemcpy D2D", "× naive"}, {}};
  auto gbps = [](const bench::Result& r) {
    return r.measurements.empty() ? 0.0 : bench::derive(r, r.measurements[0]).bytes_per_s;
  };
  double copy = 0;
  for (const auto& r : run.results)
    if (r.name == "kernels.memcpy_d2d") copy = std::max(copy, gbps(r));
  std::map<std::string, double> naive;  // by configuration without the impl axis
  auto key = [](const bench::Result& r) {
    std::string k = r.name;
    for (const auto& [a, v] : r.axes)
      if (a != "impl") k += "," + a + "=" + v;
    return k;
  };
  for (const auto& r : run.results)
    if (r.axes.contains("impl") && r.axes.at("impl") == "naive") naive[key(r)] = gbps(r);
  for (const auto& r : run.results) {
    if (!r.axes.contains("impl") || r.axes.at("impl") != "ours" || r.measurements.empty()) continue;
    std::string config;
    for (const auto& [a, v] : r.axes)
      if (a != "impl") config += (config.empty() ? "" : ", ") + a + "=" + v;
    const double g = gbps(r);
    const auto nv = naive.find(key(r));
    t.rows.push_back({r.name, config, fmt::format("{:.0f}", g / 1e9), copy > 0 ? fmt::format("{:.3f}", g / copy) : "",
                      nv != naive.end() && nv->second > 0 ? fmt::format("{:.2f}", g / nv->second) : ""});
  }
  if (copy > 0) t.rows.push_back({"kernels.memcpy_d2d", "bytes=256Mi", fmt::format("{:.0f}", copy / 1e9), "1.000", ""});
  return t;
}

}  // namespace gsq::probes
