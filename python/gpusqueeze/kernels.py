"""gpusqueeze's tuned kernels from PyTorch.

A thin ctypes layer over libgsqkernels.so (C ABI: include/gpusqueeze/kernels.h): CUDA tensors in and out, launched
on the tensor's device and the current torch stream, so the kernels drop into a model like the torch functions they
replace:

    import gpusqueeze.kernels as gk
    y = gk.layer_norm(x, weight, bias, eps=1e-5)      # F.layer_norm(x, x.shape[-1:], weight, bias, eps)
    y = gk.rms_norm(x, weight, eps=1e-6)              # F.rms_norm(x, x.shape[-1:], weight, eps)
    y = gk.add_rms_norm(x, residual, weight, 1e-6)    # residual += x (in place); F.rms_norm(residual, …, weight, eps)
    y = gk.softmax(x)                                 # torch.softmax(x, -1)
    y = gk.softmax_dropout(x, p=0.1, seed=1234)       # F.dropout(torch.softmax(x, -1), p), one pass, Philox mask
    y = gk.nchw_to_nhwc(x)                            # x.contiguous(memory_format=torch.channels_last)
    y = gk.nhwc_to_nchw(y)                            # y.contiguous()

Weight-only quantized linear layers for decoding (M = 1…16 rows):

    qw = gk.quantize_w4(linear.weight, group=128, asymmetric=False)   # offline; qw.error = (max_rel, rms_rel)
    y = gk.w4a16_linear(x, qw, linear.bias)                            # x [..., K] fp16/bf16 -> y [..., N]
    qw8 = gk.quantize_w8(linear.weight); y = gk.w8a16_linear(x, qw8, linear.bias)

The library is found through $GSQ_KERNELS_LIBRARY, then the wheel's gpusqueeze/lib, a source checkout's build/lib, then
the loader path.
Errors from the library (bad shape, dtype, alignment) raise GsqKernelError with the library's message.
Forward only: the outputs carry no autograd graph.
"""

from __future__ import annotations

import ctypes
import os
import pathlib

import torch

__all__ = ["GsqKernelError", "layer_norm", "rms_norm", "add_rms_norm", "softmax", "softmax_dropout", "nchw_to_nhwc",
           "nhwc_to_nchw", "quantize_w4", "quantize_w8", "w4a16_linear", "w8a16_linear", "QuantizedWeight",
           "library_path"]

_DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_ABI_VERSION = 2


class GsqKernelError(RuntimeError):
    pass


def _candidates():
    env = os.environ.get("GSQ_KERNELS_LIBRARY")
    if env:
        yield env
        return
    here = pathlib.Path(__file__).resolve().parent
    yield str(here / "lib" / "libgsqkernels.so")  # the wheel: gpusqueeze/lib
    yield str(here.parents[1] / "build" / "lib" / "libgsqkernels.so")  # a source checkout: python/gpusqueeze/..
    yield str(here.parent / "build" / "lib" / "libgsqkernels.so")
    yield str(here.parent.parent / "lib" / "libgsqkernels.so")  # share/gpusqueeze/ of a build tree or an install
    yield str(here / "libgsqkernels.so")
    yield "libgsqkernels.so"


_lib = None
_path = None


def _load():
    global _lib, _path
    if _lib is not None:
        return _lib
    errors = []
    for c in _candidates():
        if os.sep in c and not os.path.exists(c):
            errors.append(f"{c}: not found")
            continue
        try:
            lib = ctypes.CDLL(c)
        except OSError as e:
            errors.append(f"{c}: {e}")
            continue
        _path = c
        break
    else:
        raise GsqKernelError("libgsqkernels.so not found (build gpusqueeze or set GSQ_KERNELS_LIBRARY): " +
                             "; ".join(errors))
    lib.gsq_kernels_abi_version.restype = ctypes.c_int
    if lib.gsq_kernels_abi_version() != _ABI_VERSION:
        raise GsqKernelError(f"{_path}: ABI version {lib.gsq_kernels_abi_version()}, this module expects {_ABI_VERSION}")
    lib.gsq_last_error.restype = ctypes.c_char_p
    lib.gsq_status_name.restype = ctypes.c_char_p
    lib.gsq_status_name.argtypes = [ctypes.c_int]
    p, i64, f32, u64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float, ctypes.c_uint64, ctypes.c_int
    sigs = {
        "gsq_layer_norm": [p, p, p, p, i64, i64, f32, i32, p],
        "gsq_rms_norm": [p, p, p, i64, i64, f32, i32, p],
        "gsq_add_rms_norm": [p, p, p, p, i64, i64, f32, i32, p],
        "gsq_softmax": [p, p, i64, i64, i32, p],
        "gsq_softmax_dropout": [p, p, i64, i64, f32, u64, u64, i32, p],
        "gsq_nchw_to_nhwc": [p, p, i64, i64, i64, i64, i32, p],
        "gsq_nhwc_to_nchw": [p, p, i64, i64, i64, i64, i32, p],
        "gsq_quantize_w8": [p, i64, i64, p, p, p, p],
        "gsq_quantize_w4": [p, i64, i64, i64, i32, p, p, p, p],
        "gsq_w8a16_gemm": [p, p, p, p, p, i64, i64, i64, i32, p],
        "gsq_w4a16_gemm": [p, p, p, p, p, i64, i64, i64, i64, i32, p],
    }
    for name, args in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, ctypes.c_int
    _lib = lib
    return lib


def library_path() -> str:
    _load()
    return _path


def _check(status: int, what: str):
    if status != 0:
        lib = _load()
        raise GsqKernelError(f"{what}: {lib.gsq_status_name(status).decode()}: {lib.gsq_last_error().decode()}")


def _dtype(t: torch.Tensor) -> int:
    if not t.is_cuda:
        raise GsqKernelError(f"expected a CUDA tensor, got one on {t.device}")
    if t.dtype not in _DTYPES:
        raise GsqKernelError(f"dtype {t.dtype} is not supported (float32, float16, bfloat16)")
    return _DTYPES[t.dtype]


def _param(t, x, cols, what):
    if t is None:
        return None
    if t.shape != (cols,) or t.dtype != x.dtype or t.device != x.device:
        raise GsqKernelError(f"{what}: expected shape ({cols},), dtype {x.dtype} on {x.device}; got {tuple(t.shape)}, "
                             f"{t.dtype} on {t.device}")
    return t.contiguous()


def _rows(x):
    x = x.contiguous()
    cols = x.shape[-1] if x.dim() else 1
    return x, x.numel() // max(cols, 1), cols


def _stream(x):
    return ctypes.c_void_p(torch.cuda.current_stream(x.device).cuda_stream)


def _ptr(t):
    return ctypes.c_void_p(t.data_ptr()) if t is not None else None


def layer_norm(x: torch.Tensor, weight=None, bias=None, eps: float = 1e-5) -> torch.Tensor:
    dt = _dtype(x)
    x, rows, cols = _rows(x)
    weight, bias = _param(weight, x, cols, "weight"), _param(bias, x, cols, "bias")
    y = torch.empty_like(x)
    with torch.cuda.device(x.device):
        _check(_load().gsq_layer_norm(_ptr(y), _ptr(x), _ptr(weight), _ptr(bias), rows, cols, eps, dt, _stream(x)),
               "layer_norm")
    return y


def rms_norm(x: torch.Tensor, weight=None, eps: float = 1e-6) -> torch.Tensor:
    dt = _dtype(x)
    x, rows, cols = _rows(x)
    weight = _param(weight, x, cols, "weight")
    y = torch.empty_like(x)
    with torch.cuda.device(x.device):
        _check(_load().gsq_rms_norm(_ptr(y), _ptr(x), _ptr(weight), rows, cols, eps, dt, _stream(x)), "rms_norm")
    return y


def add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight=None, eps: float = 1e-6) -> torch.Tensor:
    """A decoder layer's residual add and RMSNorm in one pass (vLLM's fused_add_rms_norm): residual becomes
    x + residual (in place, rounded to the dtype as `residual += x` rounds it), and the result is
    F.rms_norm(residual, residual.shape[-1:], weight, eps). residual must be contiguous, of x's shape, dtype and
    device."""
    dt = _dtype(x)
    x, rows, cols = _rows(x)
    if residual.shape != x.shape or residual.dtype != x.dtype or residual.device != x.device \
            or not residual.is_contiguous():
        raise GsqKernelError(f"residual: expected a contiguous tensor of shape {tuple(x.shape)}, dtype {x.dtype} on "
                             f"{x.device}; got {tuple(residual.shape)}, {residual.dtype} on {residual.device}")
    weight = _param(weight, x, cols, "weight")
    y = torch.empty_like(x)
    with torch.cuda.device(x.device):
        _check(_load().gsq_add_rms_norm(_ptr(y), _ptr(residual), _ptr(x), _ptr(weight), rows, cols, eps, dt,
                                        _stream(x)), "add_rms_norm")
    return y


def softmax(x: torch.Tensor) -> torch.Tensor:
    dt = _dtype(x)
    x, rows, cols = _rows(x)
    y = torch.empty_like(x)
    with torch.cuda.device(x.device):
        _check(_load().gsq_softmax(_ptr(y), _ptr(x), rows, cols, dt, _stream(x)), "softmax")
    return y


def softmax_dropout(x: torch.Tensor, p: float, seed: int | None = None, offset: int = 0) -> torch.Tensor:
    """dropout(softmax(x, -1), p) in one pass. The mask is a function of (seed, offset, element index) only: the same
    arguments give the same mask on any GPU and on the CPU (gsq::kernels::dropout_keep). seed=None draws one from
    torch's default CPU generator, so torch.manual_seed makes runs repeatable."""
    dt = _dtype(x)
    if seed is None:
        seed = int(torch.randint(0, 2**63 - 1, (1,), dtype=torch.int64).item())
    x, rows, cols = _rows(x)
    y = torch.empty_like(x)
    with torch.cuda.device(x.device):
        _check(_load().gsq_softmax_dropout(_ptr(y), _ptr(x), rows, cols, p, seed & (2**64 - 1),
                                           offset & (2**64 - 1), dt, _stream(x)), "softmax_dropout")
    return y


def _dims4(x, what):
    if x.dim() != 4:
        raise GsqKernelError(f"{what}: expected a 4-D tensor, got {x.dim()}-D")
    return x.shape


def nchw_to_nhwc(x: torch.Tensor) -> torch.Tensor:
    """The NCHW-contiguous tensor x as channels_last (same shape, NHWC strides), like
    x.contiguous(memory_format=torch.channels_last)."""
    dt = _dtype(x)
    n, c, h, w = _dims4(x, "nchw_to_nhwc")
    x = x.contiguous()
    y = torch.empty_like(x, memory_format=torch.channels_last)
    with torch.cuda.device(x.device):
        _check(_load().gsq_nchw_to_nhwc(_ptr(y), _ptr(x), n, c, h, w, dt, _stream(x)), "nchw_to_nhwc")
    return y


def nhwc_to_nchw(x: torch.Tensor) -> torch.Tensor:
    """A channels_last tensor back to NCHW-contiguous, like x.contiguous()."""
    dt = _dtype(x)
    n, c, h, w = _dims4(x, "nhwc_to_nchw")
    x = x.contiguous(memory_format=torch.channels_last)
    y = torch.empty((n, c, h, w), dtype=x.dtype, device=x.device)
    with torch.cuda.device(x.device):
        _check(_load().gsq_nhwc_to_nchw(_ptr(y), _ptr(x), n, c, h, w, dt, _stream(x)), "nhwc_to_nchw")
    return y


class QuantizedWeight:
    """A packed weight in layout gsq.w4/1 or gsq.w8/1 (kernels.h), on the device of the weight it came from."""

    def __init__(self, layout, n, k, data, params, group, error):
        self.layout, self.n, self.k, self.data, self.params, self.group = layout, n, k, data, params, group
        self.error = error  # (max |w - ŵ| / max |w|, ‖w - ŵ‖ / ‖w‖)

    def __repr__(self):
        return (f"QuantizedWeight({self.layout}, N={self.n}, K={self.k}, group={self.group}, "
                f"max_rel={self.error[0]:.4g}, rms_rel={self.error[1]:.4g})")


def _host_weight(weight):
    if weight.dim() != 2:
        raise GsqKernelError(f"expected a 2-D weight [N, K], got {weight.dim()}-D")
    return weight.detach().to("cpu", torch.float32).contiguous()


def quantize_w8(weight: torch.Tensor) -> QuantizedWeight:
    """INT8 per output channel (symmetric) of a [N, K] weight, quantized on the host."""
    w = _host_weight(weight)
    n, k = w.shape
    q = torch.empty((n, k), dtype=torch.uint8)
    s = torch.empty((n,), dtype=torch.float32)
    mx, rms = ctypes.c_double(), ctypes.c_double()
    _check(_load().gsq_quantize_w8(_ptr(w), n, k, _ptr(q), _ptr(s), ctypes.byref(mx), ctypes.byref(rms)),
           "quantize_w8")
    dev = weight.device
    return QuantizedWeight("gsq.w8/1", n, k, q.to(dev), s.to(dev), 0, (mx.value, rms.value))


def quantize_w4(weight: torch.Tensor, group: int = 128, asymmetric: bool = False) -> QuantizedWeight:
    """INT4 group-wise along K (group 64 or 128; symmetric or with zero points) of a [N, K] weight."""
    w = _host_weight(weight)
    n, k = w.shape
    words = torch.empty((n, k // 8), dtype=torch.int32)
    params = torch.empty((n, max(k // group, 1), 2), dtype=torch.float16)
    mx, rms = ctypes.c_double(), ctypes.c_double()
    _check(_load().gsq_quantize_w4(_ptr(w), n, k, group, int(asymmetric), _ptr(words), _ptr(params), ctypes.byref(mx),
                                   ctypes.byref(rms)), "quantize_w4")
    dev = weight.device
    return QuantizedWeight("gsq.w4/1", n, k, words.to(dev), params.to(dev), group, (mx.value, rms.value))


def _linear(x, qw, bias, layout):
    if qw.layout != layout:
        raise GsqKernelError(f"expected a {layout} weight, got {qw.layout}")
    dt = _dtype(x)
    if x.shape[-1] != qw.k:
        raise GsqKernelError(f"x has {x.shape[-1]} features, the weight expects K = {qw.k}")
    x2 = x.reshape(-1, qw.k).contiguous()
    m = x2.shape[0]
    bias = _param(bias, x2, qw.n, "bias")
    y = torch.empty((m, qw.n), dtype=x.dtype, device=x.device)
    with torch.cuda.device(x.device):
        if layout == "gsq.w4/1":
            st = _load().gsq_w4a16_gemm(_ptr(y), _ptr(x2), _ptr(qw.data), _ptr(qw.params), _ptr(bias), m, qw.n, qw.k,
                                        qw.group, dt, _stream(x))
        else:
            st = _load().gsq_w8a16_gemm(_ptr(y), _ptr(x2), _ptr(qw.data), _ptr(qw.params), _ptr(bias), m, qw.n, qw.k,
                                        dt, _stream(x))
    _check(st, layout)
    return y.reshape(*x.shape[:-1], qw.n)


def w4a16_linear(x: torch.Tensor, qw: QuantizedWeight, bias=None) -> torch.Tensor:
    """y = x @ dequant(W).T + bias for up to 16 rows of x (fp16 or bf16)."""
    return _linear(x, qw, bias, "gsq.w4/1")


def w8a16_linear(x: torch.Tensor, qw: QuantizedWeight, bias=None) -> torch.Tensor:
    return _linear(x, qw, bias, "gsq.w8/1")
