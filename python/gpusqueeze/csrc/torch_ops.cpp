// gpusqueeze's kernels registered with PyTorch's dispatcher from C++ (TORCH_LIBRARY): a call through
// torch.ops.gpusqueeze.* reaches the C ABI (include/gpusqueeze/kernels.h) without entering Python, so its host cost is
// the dispatcher's, like a built-in operator's. gpusqueeze/_torch_ext.py compiles this file against the PyTorch it
// runs with (a C++ compiler is all it needs: no CUDA headers) and loads it; gpusqueeze/ops.py registers the fake
// implementations. The schemas are those the Python fallback (torch.library.custom_op) infers, with `int` for SymInt.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include "gpusqueeze/kernels.h"

#include <optional>
#include <string>

namespace {

// PyTorch's current stream on x's device, as a cudaStream_t, through c10's device-generic interface.
gsq_stream current_stream(const at::Tensor& x) {
  const auto* impl = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  return static_cast<gsq_stream>(impl->getStream(x.device()).native_handle());
}

gsq_dtype dtype_of(const char* op, const at::Tensor& x, bool half_only = false) {
  TORCH_CHECK(x.is_cuda(), "gpusqueeze::", op, ": expected a CUDA tensor, got one on ", x.device());
  TORCH_CHECK(x.dim() >= 1, "gpusqueeze::", op, ": expected at least 1 dimension, got a scalar");
  switch (x.scalar_type()) {
    case at::kFloat:
      if (!half_only) return GSQ_FLOAT32;
      break;
    case at::kHalf:
      return GSQ_FLOAT16;
    case at::kBFloat16:
      return GSQ_BFLOAT16;
    default:
      break;
  }
  TORCH_CHECK(false, "gpusqueeze::", op, ": dtype ", x.scalar_type(), " is not supported (",
              half_only ? "float16, bfloat16" : "float32, float16, bfloat16", ")");
}

// A weight or bias of shape (size,), x's dtype and device, made contiguous; nullptr for None.
const void* param(const char* op, const char* what, const std::optional<at::Tensor>& t, const at::Tensor& x,
                  int64_t size, at::Tensor& keep) {
  if (!t.has_value()) return nullptr;
  TORCH_CHECK(t->dim() == 1 && t->size(0) == size && t->scalar_type() == x.scalar_type() && t->device() == x.device(),
              "gpusqueeze::", op, ": ", what, " must have shape (", size, ",), dtype ", x.scalar_type(), " on ",
              x.device(), "; got ", t->sizes(), ", ", t->scalar_type(), " on ", t->device());
  keep = t->contiguous();
  return keep.const_data_ptr();
}

void check(gsq_status s, const char* op) {
  TORCH_CHECK(s == GSQ_SUCCESS, "gpusqueeze::", op, ": ", gsq_status_name(s), ": ", gsq_last_error());
}

struct Rows {
  at::Tensor x;
  int64_t rows, cols;
};
Rows rows_of(const at::Tensor& x) {
  auto c = x.contiguous();
  const int64_t cols = c.size(-1);
  return {c, cols > 0 ? c.numel() / cols : 0, cols};
}

at::Tensor layer_norm(const at::Tensor& x, const std::optional<at::Tensor>& weight,
                      const std::optional<at::Tensor>& bias, double eps) {
  const auto dt = dtype_of("layer_norm", x);
  c10::DeviceGuard guard(x.device());
  const auto r = rows_of(x);
  at::Tensor kw, kb;
  const void* w = param("layer_norm", "weight", weight, x, r.cols, kw);
  const void* b = param("layer_norm", "bias", bias, x, r.cols, kb);
  auto y = at::empty_like(r.x);
  check(gsq_layer_norm(y.data_ptr(), r.x.const_data_ptr(), w, b, r.rows, r.cols, static_cast<float>(eps), dt,
                       current_stream(x)),
        "layer_norm");
  return y;
}

at::Tensor rms_norm(const at::Tensor& x, const std::optional<at::Tensor>& weight, double eps) {
  const auto dt = dtype_of("rms_norm", x);
  c10::DeviceGuard guard(x.device());
  const auto r = rows_of(x);
  at::Tensor kw;
  const void* w = param("rms_norm", "weight", weight, x, r.cols, kw);
  auto y = at::empty_like(r.x);
  check(gsq_rms_norm(y.data_ptr(), r.x.const_data_ptr(), w, r.rows, r.cols, static_cast<float>(eps), dt,
                     current_stream(x)),
        "rms_norm");
  return y;
}

// residual += x (in place, rounded as PyTorch rounds it), then RMSNorm of it: residual must already be contiguous and
// of x's shape, dtype and device, since it is written where it lies.
at::Tensor add_rms_norm(const at::Tensor& x, at::Tensor& residual, const std::optional<at::Tensor>& weight, double eps) {
  const auto dt = dtype_of("add_rms_norm", x);
  TORCH_CHECK(residual.sizes() == x.sizes() && residual.scalar_type() == x.scalar_type() &&
                  residual.device() == x.device() && residual.is_contiguous(),
              "gpusqueeze::add_rms_norm: residual must be a contiguous tensor of shape ", x.sizes(), ", dtype ",
              x.scalar_type(), " on ", x.device(), "; got ", residual.sizes(), ", ", residual.scalar_type(), " on ",
              residual.device(), residual.is_contiguous() ? "" : ", not contiguous");
  c10::DeviceGuard guard(x.device());
  const auto r = rows_of(x);
  at::Tensor kw;
  const void* w = param("add_rms_norm", "weight", weight, x, r.cols, kw);
  auto y = at::empty_like(r.x);
  check(gsq_add_rms_norm(y.data_ptr(), residual.data_ptr(), r.x.const_data_ptr(), w, r.rows, r.cols,
                         static_cast<float>(eps), dt, current_stream(x)),
        "add_rms_norm");
  return y;
}

at::Tensor softmax(const at::Tensor& x) {
  const auto dt = dtype_of("softmax", x);
  c10::DeviceGuard guard(x.device());
  const auto r = rows_of(x);
  auto y = at::empty_like(r.x);
  check(gsq_softmax(y.data_ptr(), r.x.const_data_ptr(), r.rows, r.cols, dt, current_stream(x)), "softmax");
  return y;
}

at::Tensor softmax_dropout(const at::Tensor& x, double p, int64_t seed, int64_t offset) {
  const auto dt = dtype_of("softmax_dropout", x);
  TORCH_CHECK(p >= 0.0 && p < 1.0, "gpusqueeze::softmax_dropout: p must be in [0, 1), got ", p);
  c10::DeviceGuard guard(x.device());
  const auto r = rows_of(x);
  auto y = at::empty_like(r.x);
  check(gsq_softmax_dropout(y.data_ptr(), r.x.const_data_ptr(), r.rows, r.cols, static_cast<float>(p),
                            static_cast<uint64_t>(seed), static_cast<uint64_t>(offset), dt, current_stream(x)),
        "softmax_dropout");
  return y;
}

at::Tensor layout(const char* op, const at::Tensor& x, bool to_nhwc) {
  const auto dt = dtype_of(op, x);
  TORCH_CHECK(x.dim() == 4, "gpusqueeze::", op, ": expected a 4-D tensor, got ", x.dim(), "-D");
  c10::DeviceGuard guard(x.device());
  const auto in = to_nhwc ? x.contiguous() : x.contiguous(at::MemoryFormat::ChannelsLast);
  auto y = to_nhwc ? at::empty_like(in, at::MemoryFormat::ChannelsLast) : at::empty(x.sizes(), x.options());
  const auto fn = to_nhwc ? gsq_nchw_to_nhwc : gsq_nhwc_to_nchw;
  check(fn(y.data_ptr(), in.const_data_ptr(), x.size(0), x.size(1), x.size(2), x.size(3), dt, current_stream(x)), op);
  return y;
}
at::Tensor nchw_to_nhwc(const at::Tensor& x) {
  return layout("nchw_to_nhwc", x, true);
}
at::Tensor nhwc_to_nchw(const at::Tensor& x) {
  return layout("nhwc_to_nchw", x, false);
}

at::Tensor linear(const char* op, const at::Tensor& x, const at::Tensor& data, const at::Tensor& params,
                  const std::optional<at::Tensor>& bias, int64_t n, int64_t k, int64_t group) {
  const auto dt = dtype_of(op, x, /*half_only=*/true);
  c10::DeviceGuard guard(x.device());
  const bool w4 = group > 0;
  TORCH_CHECK(x.size(-1) == k, "gpusqueeze::", op, ": x has ", x.size(-1), " features, the weight has K = ", k);
  const int64_t words = w4 ? k / 8 : k;
  TORCH_CHECK(data.dim() == 2 && data.size(0) == n && data.size(1) == words && data.device() == x.device(),
              "gpusqueeze::", op, ": packed weight must be (", n, ", ", words, ") on ", x.device(), ", got ",
              data.sizes(), " on ", data.device());
  TORCH_CHECK(params.device() == x.device(), "gpusqueeze::", op, ": scales on ", params.device(), ", x on ",
              x.device());
  const auto x2 = x.reshape({-1, k}).contiguous();
  const int64_t m = x2.size(0);
  at::Tensor kb;
  const void* b = param(op, "bias", bias, x, n, kb);
  auto y = at::empty({m, n}, x.options());
  const auto d = data.contiguous();
  const auto p = params.contiguous();
  const gsq_status s =
      w4 ? gsq_w4a16_gemm(y.data_ptr(), x2.const_data_ptr(), static_cast<const uint32_t*>(d.const_data_ptr()),
                          p.const_data_ptr(), b, m, n, k, group, dt, current_stream(x))
         : gsq_w8a16_gemm(y.data_ptr(), x2.const_data_ptr(), static_cast<const uint8_t*>(d.const_data_ptr()),
                          static_cast<const float*>(p.const_data_ptr()), b, m, n, k, dt, current_stream(x));
  check(s, op);
  auto out = x.sizes().vec();
  out.back() = n;
  return y.view(out);
}
at::Tensor w4a16_linear(const at::Tensor& x, const at::Tensor& words, const at::Tensor& params,
                        const std::optional<at::Tensor>& bias, int64_t n, int64_t k, int64_t group) {
  TORCH_CHECK(group > 0, "gpusqueeze::w4a16_linear: group must be 64 or 128, got ", group);
  return linear("w4a16_linear", x, words, params, bias, n, k, group);
}
at::Tensor w8a16_linear(const at::Tensor& x, const at::Tensor& q, const at::Tensor& scales,
                        const std::optional<at::Tensor>& bias, int64_t n, int64_t k) {
  return linear("w8a16_linear", x, q, scales, bias, n, k, 0);
}

}  // namespace

TORCH_LIBRARY(gpusqueeze, m) {
  m.def("layer_norm(Tensor x, Tensor? weight, Tensor? bias, float eps) -> Tensor");
  m.def("rms_norm(Tensor x, Tensor? weight, float eps) -> Tensor");
  m.def("add_rms_norm(Tensor x, Tensor(a!) residual, Tensor? weight, float eps) -> Tensor");
  m.def("softmax(Tensor x) -> Tensor");
  m.def("softmax_dropout(Tensor x, float p, int seed, int offset) -> Tensor");
  m.def("nchw_to_nhwc(Tensor x) -> Tensor");
  m.def("nhwc_to_nchw(Tensor x) -> Tensor");
  m.def("w4a16_linear(Tensor x, Tensor words, Tensor params, Tensor? bias, int n, int k, int group) -> Tensor");
  m.def("w8a16_linear(Tensor x, Tensor q, Tensor scales, Tensor? bias, int n, int k) -> Tensor");
}

// CUDA tensors reach the kernels; any other device gets dtype_of's "expected a CUDA tensor" through the same
// functions (registered for CPU too, so the message is ours and not the dispatcher's "could not run").
#define GSQ_REGISTER(KEY)                        \
  TORCH_LIBRARY_IMPL(gpusqueeze, KEY, m) {       \
    m.impl("layer_norm", &layer_norm);           \
    m.impl("rms_norm", &rms_norm);               \
    m.impl("add_rms_norm", &add_rms_norm);       \
    m.impl("softmax", &softmax);                 \
    m.impl("softmax_dropout", &softmax_dropout); \
    m.impl("nchw_to_nhwc", &nchw_to_nhwc);       \
    m.impl("nhwc_to_nchw", &nhwc_to_nchw);       \
    m.impl("w4a16_linear", &w4a16_linear);       \
    m.impl("w8a16_linear", &w8a16_linear);       \
  }
GSQ_REGISTER(CUDA)
GSQ_REGISTER(CPU)
