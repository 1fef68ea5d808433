// The C ABI of libgsqkernels: argument validation (nothing launches on bad input), error reporting (the row plans are
// row_plans.cpp's).
#include "gpusqueeze/kernels.h"
#include "kernels/launch.hpp"
#include "kernels/quant.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

namespace gsq::kernels {

namespace {

thread_local std::string g_last_error;

gsq_status fail(gsq_status s, std::string why) {
  g_last_error = std::move(why);
  return s;
}

gsq_status from_cuda(cudaError_t e) {
  if (e == cudaSuccess) return GSQ_SUCCESS;
  return fail(GSQ_ERROR_CUDA, fmt::format("CUDA: {} ({})", cudaGetErrorString(e), cudaGetErrorName(e)));
}

gsq_status check_dtype(gsq_dtype d) {
  if (d == GSQ_FLOAT32 || d == GSQ_FLOAT16 || d == GSQ_BFLOAT16) return GSQ_SUCCESS;
  return fail(GSQ_ERROR_UNSUPPORTED, fmt::format("dtype {} is not f32, f16 or bf16", int(d)));
}

// Returns GSQ_SUCCESS or the first problem, with g_last_error saying what it is.
gsq_status check_pointer(const void* p, const char* name, gsq_dtype d, bool optional) {
  if (!p) return optional ? GSQ_SUCCESS : fail(GSQ_ERROR_INVALID_VALUE, fmt::format("{} is NULL", name));
  const int size = dtype_size(static_cast<DType>(d));
  if (reinterpret_cast<uintptr_t>(p) % size != 0)
    return fail(GSQ_ERROR_MISALIGNED, fmt::format("{} = {} is not aligned to its {}-byte elements", name, p, size));
  return GSQ_SUCCESS;
}

// Whether `bytes` from a and from b share a byte.
bool overlaps(const void* a, const void* b, uintptr_t bytes) {
  const auto ab = reinterpret_cast<uintptr_t>(a), bb = reinterpret_cast<uintptr_t>(b);
  return bytes > 0 && ab < bb + bytes && bb < ab + bytes;
}

constexpr int64_t kMaxElements = int64_t{1} << 40;

gsq_status check_rows(void* y, const void* x, int64_t rows, int64_t cols, gsq_dtype d) {
  g_last_error.clear();
  if (auto s = check_dtype(d)) return s;
  if (rows < 0 || cols < 1)
    return fail(GSQ_ERROR_INVALID_VALUE, fmt::format("shape [{}, {}]: rows must be ≥ 0 and cols ≥ 1", rows, cols));
  if (rows > (int64_t{1} << 31) - 1 || cols > (int64_t{1} << 30) || (rows > 0 && cols > kMaxElements / rows))
    return fail(GSQ_ERROR_UNSUPPORTED, fmt::format("shape [{}, {}] is beyond what the kernels index", rows, cols));
  if (auto s = check_pointer(x, "x", d, false)) return s;
  return check_pointer(y, "y", d, false);
}

gsq_status run_row(RowOp op, gsq_dtype d, const RowArgs& a, gsq_stream stream) {
  if (a.rows == 0) return GSQ_SUCCESS;
  return from_cuda(launch_row(op, static_cast<DType>(d), a, reinterpret_cast<cudaStream_t>(stream)));
}

gsq_status check_eps(float eps) {
  if (!std::isfinite(eps) || eps < 0)
    return fail(GSQ_ERROR_INVALID_VALUE, fmt::format("eps = {} must be finite and ≥ 0", eps));
  return GSQ_SUCCESS;
}

gsq_status layout(bool to_nhwc, void* y, const void* x, int64_t n, int64_t c, int64_t h, int64_t w, gsq_dtype d,
                  gsq_stream stream) {
  g_last_error.clear();
  if (auto s = check_dtype(d)) return s;
  if (n < 0 || c < 1 || h < 1 || w < 1)
    return fail(GSQ_ERROR_INVALID_VALUE,
                fmt::format("shape [{}, {}, {}, {}]: N must be ≥ 0 and C, H, W ≥ 1", n, c, h, w));
  if (h > kMaxElements / w || c > kMaxElements / (h * w) || (n > 0 && n > kMaxElements / (c * h * w)))
    return fail(GSQ_ERROR_UNSUPPORTED,
                fmt::format("shape [{}, {}, {}, {}] is beyond what the kernel indexes", n, c, h, w));
  if ((h * w + 63) / 64 * ((c + 63) / 64) > (int64_t{1} << 31) - 1)
    return fail(GSQ_ERROR_UNSUPPORTED, fmt::format("shape [{}, {}, {}, {}]: too many tiles per image", n, c, h, w));
  if (auto s = check_pointer(x, "x", d, false)) return s;
  if (auto s = check_pointer(y, "y", d, false)) return s;
  if (overlaps(x, y, static_cast<uintptr_t>(n * c * h * w * dtype_size(static_cast<DType>(d)))))
    return fail(GSQ_ERROR_INVALID_VALUE, "y overlaps x: the conversion cannot run in place");
  if (n == 0) return GSQ_SUCCESS;
  const int64_t hw = h * w;
  return from_cuda(launch_transpose(static_cast<DType>(d), y, x, n, to_nhwc ? c : hw, to_nhwc ? hw : c,
                                    reinterpret_cast<cudaStream_t>(stream)));
}

gsq_status check_quant(void* y, const void* x, const void* w, const void* params, const void* bias, int64_t m,
                       int64_t n, int64_t k, int64_t group, gsq_dtype d) {
  g_last_error.clear();
  if (group != 0 && group != 64 && group != 128)
    return fail(GSQ_ERROR_INVALID_VALUE, fmt::format("group = {}: use 64 or 128", group));
  if (d != GSQ_FLOAT16 && d != GSQ_BFLOAT16)
    return fail(GSQ_ERROR_UNSUPPORTED, fmt::format("dtype {}: activations must be f16 or bf16", int(d)));
  if (m < 1 || m > 16) return fail(GSQ_ERROR_UNSUPPORTED, fmt::format("M = {}: the kernels take 1 to 16 rows", m));
  if (n < 64 || k < 64 || n % 64 || k % 64 || n > (int64_t{1} << 31) || k > (int64_t{1} << 31))
    return fail(GSQ_ERROR_INVALID_VALUE, fmt::format("N = {}, K = {}: both must be positive multiples of 64", n, k));
  if (group && k % group)
    return fail(GSQ_ERROR_INVALID_VALUE, fmt::format("K = {} is not a multiple of the group ({})", k, group));
  if (!y || !x || !w || !params) return fail(GSQ_ERROR_INVALID_VALUE, "y, x, w and the scales must not be NULL");
  for (auto [p, name] : {std::pair{x, "x"}, std::pair{static_cast<const void*>(w), "w"}})
    if (reinterpret_cast<uintptr_t>(p) % 16)
      return fail(GSQ_ERROR_MISALIGNED, fmt::format("{} = {} is not 16-byte aligned", name, p));
  if (auto s = check_pointer(y, "y", d, false)) return s;
  return check_pointer(bias, "bias", d, true);
}

template <class F>
gsq_status quantize_guarded(F&& f) {
  g_last_error.clear();
  try {
    f();
    return GSQ_SUCCESS;
  } catch (const gsq::Error& e) {
    return fail(GSQ_ERROR_INVALID_VALUE, e.what());
  }
}

void report(const float* w, const std::vector<float>& dq, double* max_rel, double* rms_rel) {
  if (!max_rel && !rms_rel) return;
  const QuantError e = quant_error(w, dq);
  if (max_rel) *max_rel = e.max_rel;
  if (rms_rel) *rms_rel = e.rms_rel;
}

}  // namespace
}  // namespace gsq::kernels

using namespace gsq::kernels;

extern "C" {

int gsq_kernels_abi_version(void) {
  return GSQ_KERNELS_ABI_VERSION;
}

const char* gsq_status_name(gsq_status s) {
  switch (s) {
    case GSQ_SUCCESS:
      return "GSQ_SUCCESS";
    case GSQ_ERROR_INVALID_VALUE:
      return "GSQ_ERROR_INVALID_VALUE";
    case GSQ_ERROR_MISALIGNED:
      return "GSQ_ERROR_MISALIGNED";
    case GSQ_ERROR_UNSUPPORTED:
      return "GSQ_ERROR_UNSUPPORTED";
    case GSQ_ERROR_CUDA:
      return "GSQ_ERROR_CUDA";
  }
  return "GSQ_UNKNOWN_STATUS";
}

const char* gsq_last_error(void) {
  return g_last_error.c_str();
}

gsq_status gsq_layer_norm(void* y, const void* x, const void* weight, const void* bias, int64_t rows, int64_t cols,
                          float eps, gsq_dtype dtype, gsq_stream stream) {
  if (auto s = check_rows(y, x, rows, cols, dtype)) return s;
  if (auto s = check_pointer(weight, "weight", dtype, true)) return s;
  if (auto s = check_pointer(bias, "bias", dtype, true)) return s;
  if (auto s = check_eps(eps)) return s;
  return run_row(RowOp::layer_norm, dtype, RowArgs{y, x, weight, bias, rows, cols, eps}, stream);
}

gsq_status gsq_rms_norm(void* y, const void* x, const void* weight, int64_t rows, int64_t cols, float eps,
                        gsq_dtype dtype, gsq_stream stream) {
  if (auto s = check_rows(y, x, rows, cols, dtype)) return s;
  if (auto s = check_pointer(weight, "weight", dtype, true)) return s;
  if (auto s = check_eps(eps)) return s;
  return run_row(RowOp::rms_norm, dtype, RowArgs{y, x, weight, nullptr, rows, cols, eps}, stream);
}

gsq_status gsq_add_rms_norm(void* y, void* residual, const void* x, const void* weight, int64_t rows, int64_t cols,
                            float eps, gsq_dtype dtype, gsq_stream stream) {
  if (auto s = check_rows(y, x, rows, cols, dtype)) return s;
  if (auto s = check_pointer(residual, "residual", dtype, false)) return s;
  if (auto s = check_pointer(weight, "weight", dtype, true)) return s;
  if (auto s = check_eps(eps)) return s;
  // The residual is read and written row by row while x is read and y written: it may share no byte with them.
  const auto bytes = static_cast<uintptr_t>(rows * cols * dtype_size(static_cast<DType>(dtype)));
  for (const void* other : {static_cast<const void*>(x), static_cast<const void*>(y)})
    if (overlaps(residual, other, bytes))
      return fail(
          GSQ_ERROR_INVALID_VALUE,
          fmt::format("residual overlaps {}: it is read and written in place beside them", other == x ? "x" : "y"));
  RowArgs a{y, x, weight, nullptr, rows, cols, eps};
  a.residual = residual;
  return run_row(RowOp::add_rms_norm, dtype, a, stream);
}

gsq_status gsq_softmax(void* y, const void* x, int64_t rows, int64_t cols, gsq_dtype dtype, gsq_stream stream) {
  if (auto s = check_rows(y, x, rows, cols, dtype)) return s;
  return run_row(RowOp::softmax, dtype, RowArgs{y, x, nullptr, nullptr, rows, cols}, stream);
}

gsq_status gsq_softmax_dropout(void* y, const void* x, int64_t rows, int64_t cols, float p, uint64_t seed,
                               uint64_t offset, gsq_dtype dtype, gsq_stream stream) {
  if (auto s = check_rows(y, x, rows, cols, dtype)) return s;
  if (!(p >= 0.0f && p < 1.0f))
    return fail(GSQ_ERROR_INVALID_VALUE, fmt::format("dropout probability p = {} must be in [0, 1)", p));
  RowArgs a{y, x, nullptr, nullptr, rows, cols};
  a.p = p, a.seed = seed, a.offset = offset;
  return run_row(RowOp::softmax_dropout, dtype, a, stream);
}

gsq_status gsq_nchw_to_nhwc(void* y, const void* x, int64_t n, int64_t c, int64_t h, int64_t w, gsq_dtype dtype,
                            gsq_stream stream) {
  return layout(true, y, x, n, c, h, w, dtype, stream);
}

gsq_status gsq_nhwc_to_nchw(void* y, const void* x, int64_t n, int64_t c, int64_t h, int64_t w, gsq_dtype dtype,
                            gsq_stream stream) {
  return layout(false, y, x, n, c, h, w, dtype, stream);
}

gsq_status gsq_quantize_w8(const float* w, int64_t n, int64_t k, uint8_t* q, float* scales, double* max_rel,
                           double* rms_rel) {
  if (!w || !q || !scales) return fail(GSQ_ERROR_INVALID_VALUE, "w, q and scales must not be NULL");
  return quantize_guarded([&] {
    const W8Weights r = quantize_w8(w, n, k);
    std::copy(r.q.begin(), r.q.end(), q);
    std::copy(r.scales.begin(), r.scales.end(), scales);
    report(w, dequantize(r), max_rel, rms_rel);
  });
}

gsq_status gsq_quantize_w4(const float* w, int64_t n, int64_t k, int64_t group, int asymmetric, uint32_t* words,
                           uint16_t* params, double* max_rel, double* rms_rel) {
  if (!w || !words || !params) return fail(GSQ_ERROR_INVALID_VALUE, "w, words and params must not be NULL");
  return quantize_guarded([&] {
    const W4Weights r = quantize_w4(w, n, k, group, asymmetric != 0);
    std::copy(r.words.begin(), r.words.end(), words);
    std::copy(r.params.begin(), r.params.end(), params);
    report(w, dequantize(r), max_rel, rms_rel);
  });
}

gsq_status gsq_w8a16_gemm(void* y, const void* x, const uint8_t* w, const float* scales, const void* bias, int64_t m,
                          int64_t n, int64_t k, gsq_dtype dtype, gsq_stream stream) {
  if (auto s = check_quant(y, x, w, scales, bias, m, n, k, 0, dtype)) return s;
  return from_cuda(launch_quant_gemm(false, static_cast<DType>(dtype), QuantArgs{y, x, w, scales, bias, m, n, k, 0},
                                     reinterpret_cast<cudaStream_t>(stream)));
}

gsq_status gsq_w4a16_gemm(void* y, const void* x, const uint32_t* words, const void* params, const void* bias,
                          int64_t m, int64_t n, int64_t k, int64_t group, gsq_dtype dtype, gsq_stream stream) {
  if (group == 0) return fail(GSQ_ERROR_INVALID_VALUE, "group = 0: use 64 or 128");  // 0 is W8A16's "no groups"
  if (auto s = check_quant(y, x, words, params, bias, m, n, k, group, dtype)) return s;
  return from_cuda(launch_quant_gemm(true, static_cast<DType>(dtype),
                                     QuantArgs{y, x, words, params, bias, m, n, k, group},
                                     reinterpret_cast<cudaStream_t>(stream)));
}

}  // extern "C"
