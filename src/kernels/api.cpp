// The C ABI of libgsqkernels: argument validation (nothing launches on bad input), the row plan, error reporting.
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

std::string RowPlan::describe() const {
  if (accesses_per_thread == 0)
    return fmt::format("block of {} per row{}, two reads{}, {} × {}-element accesses in flight per thread",
                       block_threads, min_blocks > 1 ? fmt::format(" ({} blocks an SM)", min_blocks) : "",
                       !cache_hints       ? ""
                       : hint_second_read ? " (first kept in cache, second evict-first)"
                                          : " (first kept in cache)",
                       in_flight, elems_per_access);
  return fmt::format("{} per row, {} × {}-element accesses per thread{}, held in registers",
                     threads_per_row == 32 ? std::string("warp") : fmt::format("{} threads", threads_per_row),
                     accesses_per_thread, elems_per_access,
                     rows_per_thread > 1 ? fmt::format(" for {} rows", rows_per_thread) : "");
}

RowPlan plan_row(RowOp op, DType dtype, int64_t cols, bool aligned16) {
  RowPlan p;
  const int per16 = 16 / dtype_size(dtype);
  p.vector = aligned16 && cols % per16 == 0;
  p.elems_per_access = p.vector ? per16 : 1;
  const int64_t accesses = (cols + p.elems_per_access - 1) / p.elems_per_access;
  // Rows read twice, the first read marked to stay in L1/L2 and the second evict-first (the shape and hints of
  // torch.compile's looped reductions), for 16-byte rows of RMSNorm past 256 accesses, LayerNorm past 4096 and
  // softmax from 1025 to 16384. On the H200, against the plans they replace (register-resident, or the plain
  // two-read kernel past 4096 accesses; bench/results/2026-12-04-h200-row-sharing/ and 2026-12-04-h200-row-hints/):
  //   RMSNorm   257-512 in blocks of 256 with two accesses in flight, 513-1024 in 512 with two, 1025-2048 in
  //             512 with four, 2049-4096 in 1024 with one +2.3%, past 4096 in 1024 with four +6-11%; where the
  //             compiler's register count leaves threads out (45 registers: five blocks of 256 or two of 512 an
  //             SM), eight blocks of 256 (257-512), four of 512 (513-1024) and three of 512 (1025-2048) are asked
  //             for: 32, 32 and 40 registers, no spills. On five to eight H200s each, these ran 0.980-0.985 × copy
  //             at 16384 bf16 and 0.987-0.991 at 4096 (bench/results/2026-12-04-h200-row-blocks-copy-variants/);
  //             the plans before them (no occupancy asked at 4096 and 16384) ran 0.964-0.983 and 0.962. At 8192,
  //             512 × 2 with four blocks an SM (torch.compile's shape: 512 threads, 32 registers) and 32-bit
  //             indices in the row ran 0.999-1.004 × torch.compile on four H200s where blocks of 256 × 4 ran
  //             0.991-0.992; its second read is a plain load (the row is still in L1), 0.2% faster than one marked
  //             evict-first on two cards (bench/results/2026-12-04-h200-rms-variants/);
  //   LayerNorm past 4096 in blocks of 1024 with two +4-12% (its register plans stay ahead up to 4096: its second
  //             read also loads the bias);
  //   softmax   1025-2048 in 512 with four +10%, 2049-8192 in 1024 with four +22-27%, 8193-16384 in 1024 with two
  //             +7% (past that the plain kernel is level).
  // The same shapes without the hints measured 6-25% slower (norms) and 8-11% (softmax).
  if (p.vector && ((op == RowOp::rms_norm && accesses > 256) || (op == RowOp::layer_norm && accesses > 4096) ||
                   (op == RowOp::softmax && accesses > 1024 && accesses <= 16384))) {
    p.accesses_per_thread = 0, p.cache_hints = true;
    if (op == RowOp::layer_norm)
      p.block_threads = 1024, p.in_flight = 2;
    else if (op == RowOp::softmax)
      p.block_threads = accesses <= 2048 ? 512 : 1024, p.in_flight = accesses <= 8192 ? 4 : 2;
    else if (accesses <= 512)
      p.block_threads = 256, p.in_flight = 2, p.min_blocks = 8;
    else if (accesses <= 1024)
      p.block_threads = 512, p.in_flight = 2, p.min_blocks = 4, p.hint_second_read = false;
    else if (accesses <= 2048)
      p.block_threads = 512, p.in_flight = 4, p.min_blocks = 3;
    else
      p.block_threads = 1024, p.in_flight = accesses <= 4096 ? 1 : 4;
    p.threads_per_row = p.block_threads;
    return p;
  }
  if (accesses > 1024 * 4) {
    p.threads_per_row = p.block_threads = 1024;
    p.accesses_per_thread = 0;
    return p;
  }
  // Accesses per thread and the smallest block, per operation, as bench/tune/row_tune measured them on the H200 (bf16,
  // widths 256…32768, bench/results/2026-12-03-h200-row-plans/ and 2026-12-04-h200-row-sharing/): two accesses per
  // thread in blocks of 128 while the row's threads reduce in a few steps (2-3% faster than four there), four
  // beyond, in blocks of 256 (LayerNorm, softmax) or 512 (RMSNorm); softmax + dropout, bound by its Philox
  // instructions, is fastest with four throughout. LayerNorm's widest rows take eight a thread in blocks of up to 512
  // (at 4096 accesses 14% faster than a block of 1024 with four, which holds an SM alone).
  int64_t two_up_to = 0;  // widest row, in accesses, that takes two per thread
  int min_block = 128;    // the block for four per thread
  switch (op) {
    case RowOp::layer_norm:  // two reductions: past a warp per row the block-wide steps cost more than they win
      two_up_to = 64, min_block = 256;
      break;
    case RowOp::rms_norm:
      two_up_to = 1024, min_block = 512;
      break;
    case RowOp::softmax:
      two_up_to = 256, min_block = 256;
      break;
    case RowOp::softmax_dropout:
      break;
  }
  // Eight a thread: LayerNorm past 1024 accesses (0.1-1.0% faster than four at 16384 bf16; RMSNorm's 16-byte rows
  // that wide take the hinted two reads above). Their kernel reads x marked L2 evict-last (row_body): 2.3-2.4% faster
  // at 16384 and 1.1-1.7% at 32768 bf16 than plain loads (medians over shuffled rounds), and no longer dependent on
  // the kernel that ran before.
  const bool eight = op == RowOp::layer_norm && p.vector && accesses > 1024;
  // RMSNorm's 16-byte rows of 17-32 accesses (256 bf16): one a thread, a warp a row, in blocks of 128: 0.5-0.7%
  // faster than two a thread on three H200s, the only plan there ahead of torch.compile (1.003-1.005 ×;
  // bench/results/2026-12-04-h200-rms-variants/).
  const bool one = op == RowOp::rms_norm && p.vector && accesses > 16 && accesses <= 32;
  const int64_t target = one ? 1 : accesses <= two_up_to ? 2 : (eight ? 8 : 4);
  const auto want = std::bit_ceil(static_cast<uint64_t>((accesses + target - 1) / target));
  p.threads_per_row = static_cast<int>(std::clamp<uint64_t>(want, 4, 1024));
  const int64_t per_thread = (accesses + p.threads_per_row - 1) / p.threads_per_row;
  p.accesses_per_thread = static_cast<int>(std::bit_ceil(static_cast<uint64_t>(per_thread)));
  p.block_threads = std::max(p.threads_per_row, p.accesses_per_thread == 4 ? min_block : 128);
  // LayerNorm's 16-byte rows of up to 256 accesses in blocks of one row group (one warp of two rows a thread up to
  // 128 accesses, sharing one load of the weight and bias packs; 64 threads for one row past that): a block retires,
  // and its slot takes new rows, as soon as its own rows are done instead of waiting for the slowest of four or
  // eight. On the H200 (bench/results/2026-12-04-h200-row-blocks-copy-variants/) 0.6-0.8% faster than blocks of
  // 128 at 256-1024 bf16 and 1.8% than blocks of 256 at 2048; RMSNorm and softmax gained under 0.3% and keep theirs.
  if (p.vector && op == RowOp::layer_norm && accesses <= 128)
    p.rows_per_thread = 2, p.block_threads = 32;
  else if (p.vector && op == RowOp::layer_norm && p.threads_per_row <= 64)
    p.block_threads = p.threads_per_row;
  return p;
}

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
  const auto bytes = static_cast<uintptr_t>(n * c * h * w * dtype_size(static_cast<DType>(d)));
  const auto xb = reinterpret_cast<uintptr_t>(x), yb = reinterpret_cast<uintptr_t>(y);
  if (bytes > 0 && xb < yb + bytes && yb < xb + bytes)
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
