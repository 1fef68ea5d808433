"""gpusqueeze's kernels as PyTorch custom operators (torch.library), visible to torch.compile.

    import gpusqueeze.ops as gops                       # registers torch.ops.gpusqueeze.*
    y = torch.ops.gpusqueeze.rms_norm(x, w, 1e-6)       # or gops.rms_norm(x, w, 1e-6)
    y = torch.compile(model, fullgraph=True)(x)         # no graph break: each op has a fake (meta) implementation

Operators (all forward only, CUDA tensors of float32/float16/bfloat16 unless said):

    gpusqueeze::layer_norm(Tensor x, Tensor? weight, Tensor? bias, float eps) -> Tensor
    gpusqueeze::rms_norm(Tensor x, Tensor? weight, float eps) -> Tensor
    gpusqueeze::add_rms_norm(Tensor x, Tensor(a!) residual, Tensor? weight, float eps) -> Tensor
                                                   # residual += x in place, then RMSNorm of it
    gpusqueeze::softmax(Tensor x) -> Tensor                                   # over the last dimension
    gpusqueeze::softmax_dropout(Tensor x, float p, int seed, int offset) -> Tensor
    gpusqueeze::nchw_to_nhwc(Tensor x) -> Tensor                              # 4-D; output channels_last
    gpusqueeze::nhwc_to_nchw(Tensor x) -> Tensor                              # 4-D; output contiguous
    gpusqueeze::w4a16_linear(Tensor x, Tensor words, Tensor params, Tensor? bias, int n, int k, int group) -> Tensor
    gpusqueeze::w8a16_linear(Tensor x, Tensor q, Tensor scales, Tensor? bias, int n, int k) -> Tensor

Two registrations, one set of schemas and fake implementations (gpusqueeze.ops.BACKEND says which is live):
- "cpp" (the default): csrc/torch_ops.cpp registered with TORCH_LIBRARY, compiled on first import against this
  PyTorch with the system C++ compiler and cached (gpusqueeze._torch_ext); a call never enters Python, so its host
  cost is the dispatcher's. A cached build for another PyTorch is refused and rebuilt, never loaded.
- "python": torch.library.custom_op over the ctypes path (gpusqueeze.kernels), used when no compiler is at hand (with a
  warning that says why) or with GSQ_OPS_BACKEND=python.
Inputs are checked the same way in the real and the fake implementation (dtype, shape, device of x and of the
parameters), so a wrong call fails while tracing with an ordinary RuntimeError, not later on the GPU. Non-contiguous
inputs are accepted (copied first). The C ABI stays for other callers.

Needs PyTorch >= 2.4 (torch.library.custom_op, register_fake). Built and tested with: PyTorch 2.11.0+cu130 on an H200
(device runs), and the CPU checks of tests/python/test_ops.py with the PyTorch recorded in bench/results (fake tensors).
"""
from __future__ import annotations

import os
import warnings
from typing import Optional

import torch

_MIN_TORCH = (2, 4)


def _torch_version() -> tuple[int, int]:
    parts = torch.__version__.split("+")[0].split(".")
    return int(parts[0]), int(parts[1])


if _torch_version() < _MIN_TORCH:
    raise ImportError(f"gpusqueeze.ops needs PyTorch >= {_MIN_TORCH[0]}.{_MIN_TORCH[1]} (torch.library.custom_op); "
                      f"this is {torch.__version__}. The ctypes path, gpusqueeze.kernels, works with older versions.")

from gpusqueeze import kernels as _k  # noqa: E402  (after the version check: it loads nothing until first use)

__all__ = ["layer_norm", "rms_norm", "add_rms_norm", "softmax", "softmax_dropout", "nchw_to_nhwc", "nhwc_to_nchw",
           "w4a16_linear", "w8a16_linear", "OPS"]

_FLOATS = (torch.float32, torch.float16, torch.bfloat16)
_HALF = (torch.float16, torch.bfloat16)


def _check_x(op: str, x: torch.Tensor, dtypes=_FLOATS, dims: Optional[int] = None) -> None:
    torch._check(x.device.type == "cuda", lambda: f"gpusqueeze::{op}: expected a CUDA tensor, got one on {x.device}")
    torch._check(x.dtype in dtypes, lambda: f"gpusqueeze::{op}: dtype {x.dtype} is not supported "
                 f"({', '.join(str(d).replace('torch.', '') for d in dtypes)})")
    torch._check(x.dim() >= 1, lambda: f"gpusqueeze::{op}: expected at least 1 dimension, got a scalar")
    if dims is not None:
        torch._check(x.dim() == dims, lambda: f"gpusqueeze::{op}: expected a {dims}-D tensor, got {x.dim()}-D")


def _check_param(op: str, what: str, t: Optional[torch.Tensor], x: torch.Tensor, size: int) -> None:
    if t is None:
        return
    torch._check(tuple(t.shape) == (size,) and t.dtype == x.dtype and t.device == x.device,
                 lambda: f"gpusqueeze::{op}: {what} must have shape ({size},), dtype {x.dtype} on {x.device}; got "
                 f"{tuple(t.shape)}, {t.dtype} on {t.device}")


# ---- fake (meta) implementations: shapes, dtypes and the same checks, for torch.compile and FakeTensorMode ----

def _fake_layer_norm(x, weight, bias, eps):
    _check_x("layer_norm", x)
    _check_param("layer_norm", "weight", weight, x, x.shape[-1])
    _check_param("layer_norm", "bias", bias, x, x.shape[-1])
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _fake_rms_norm(x, weight, eps):
    _check_x("rms_norm", x)
    _check_param("rms_norm", "weight", weight, x, x.shape[-1])
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _check_residual(x, residual):
    torch._check(tuple(residual.shape) == tuple(x.shape) and residual.dtype == x.dtype and residual.device == x.device
                 and residual.is_contiguous(),
                 lambda: f"gpusqueeze::add_rms_norm: residual must be a contiguous tensor of shape {tuple(x.shape)}, "
                 f"dtype {x.dtype} on {x.device}; got {tuple(residual.shape)}, {residual.dtype} on {residual.device}"
                 + ("" if residual.is_contiguous() else ", not contiguous"))


def _fake_add_rms_norm(x, residual, weight, eps):
    _check_x("add_rms_norm", x)
    _check_residual(x, residual)
    _check_param("add_rms_norm", "weight", weight, x, x.shape[-1])
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _fake_softmax(x):
    _check_x("softmax", x)
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _fake_softmax_dropout(x, p, seed, offset):
    _check_x("softmax_dropout", x)
    torch._check(0.0 <= p < 1.0, lambda: f"gpusqueeze::softmax_dropout: p must be in [0, 1), got {p}")
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _fake_nchw_to_nhwc(x):
    _check_x("nchw_to_nhwc", x, dims=4)
    return torch.empty_like(x, memory_format=torch.channels_last)


def _fake_nhwc_to_nchw(x):
    _check_x("nhwc_to_nchw", x, dims=4)
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


def _check_linear(op: str, x, data, params, bias, n: int, k: int, words_per_row: int):
    _check_x(op, x, dtypes=_HALF)
    torch._check(x.shape[-1] == k, lambda: f"gpusqueeze::{op}: x has {x.shape[-1]} features, the weight has K = {k}")
    torch._check(tuple(data.shape) == (n, words_per_row) and data.device == x.device,
                 lambda: f"gpusqueeze::{op}: packed weight must be ({n}, {words_per_row}) on {x.device}, got "
                 f"{tuple(data.shape)} on {data.device}")
    torch._check(params.device == x.device, lambda: f"gpusqueeze::{op}: scales on {params.device}, x on {x.device}")
    _check_param(op, "bias", bias, x, n)


def _fake_w4a16_linear(x, words, params, bias, n, k, group):
    _check_linear("w4a16_linear", x, words, params, bias, n, k, k // 8)
    return x.new_empty((*x.shape[:-1], n))


def _fake_w8a16_linear(x, q, scales, bias, n, k):
    _check_linear("w8a16_linear", x, q, scales, bias, n, k, k)
    return x.new_empty((*x.shape[:-1], n))


# ---- the Python registration: torch.library.custom_op over the ctypes path (the fallback) ----

def _py_layer_norm(x: torch.Tensor, weight: Optional[torch.Tensor], bias: Optional[torch.Tensor],
                   eps: float) -> torch.Tensor:
    _check_x("layer_norm", x)
    return _k.layer_norm(x, weight, bias, eps)


def _py_rms_norm(x: torch.Tensor, weight: Optional[torch.Tensor], eps: float) -> torch.Tensor:
    _check_x("rms_norm", x)
    return _k.rms_norm(x, weight, eps)


def _py_add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor],
                     eps: float) -> torch.Tensor:
    _check_x("add_rms_norm", x)
    _check_residual(x, residual)
    return _k.add_rms_norm(x, residual, weight, eps)


def _py_softmax(x: torch.Tensor) -> torch.Tensor:
    _check_x("softmax", x)
    return _k.softmax(x)


def _py_softmax_dropout(x: torch.Tensor, p: float, seed: int, offset: int) -> torch.Tensor:
    _check_x("softmax_dropout", x)
    return _k.softmax_dropout(x, p, seed, offset)


def _py_nchw_to_nhwc(x: torch.Tensor) -> torch.Tensor:
    _check_x("nchw_to_nhwc", x, dims=4)
    return _k.nchw_to_nhwc(x)


def _py_nhwc_to_nchw(x: torch.Tensor) -> torch.Tensor:
    _check_x("nhwc_to_nchw", x, dims=4)
    return _k.nhwc_to_nchw(x)


def _py_w4a16_linear(x: torch.Tensor, words: torch.Tensor, params: torch.Tensor, bias: Optional[torch.Tensor], n: int,
                     k: int, group: int) -> torch.Tensor:
    _check_linear("w4a16_linear", x, words, params, bias, n, k, k // 8)
    return _k.w4a16_linear(x, _k.QuantizedWeight("gsq.w4/1", n, k, words, params, group, (0.0, 0.0)), bias)


def _py_w8a16_linear(x: torch.Tensor, q: torch.Tensor, scales: torch.Tensor, bias: Optional[torch.Tensor], n: int,
                     k: int) -> torch.Tensor:
    _check_linear("w8a16_linear", x, q, scales, bias, n, k, k)
    return _k.w8a16_linear(x, _k.QuantizedWeight("gsq.w8/1", n, k, q, scales, 0, (0.0, 0.0)), bias)


_NAMES = ("layer_norm", "rms_norm", "add_rms_norm", "softmax", "softmax_dropout", "nchw_to_nhwc", "nhwc_to_nchw",
          "w4a16_linear", "w8a16_linear")
_MUTATES = {"add_rms_norm": ("residual",)}  # the arguments an operator writes (Tensor(a!) in its schema)


def _register() -> tuple[str, str]:
    """Registers the operators once; returns (backend, why) — "cpp" or "python", and why Python when it is."""
    choice = os.environ.get("GSQ_OPS_BACKEND", "auto")
    if choice not in ("auto", "cpp", "python"):
        raise ImportError(f"GSQ_OPS_BACKEND={choice!r}: expected auto, cpp or python")
    why = "GSQ_OPS_BACKEND=python"
    if choice != "python":
        from gpusqueeze import _torch_ext
        try:
            _torch_ext.load(_k.library_path())
        except (_torch_ext.ExtensionError, _k.GsqKernelError, OSError, RuntimeError) as e:
            if choice == "cpp":
                raise ImportError(f"gpusqueeze.ops: the C++ registration could not be loaded: {e}") from None
            why = f"the C++ registration could not be loaded: {e}"
            warnings.warn(f"gpusqueeze.ops: {why}; using the Python registration (about 2x the host cost per call). "
                          "GSQ_OPS_BACKEND=python silences this.", RuntimeWarning, stacklevel=3)
        else:
            for name in _NAMES:
                torch.library.register_fake(f"gpusqueeze::{name}", globals()[f"_fake_{name}"])
            return "cpp", ""
    for name in _NAMES:
        op = torch.library.custom_op(f"gpusqueeze::{name}", globals()[f"_py_{name}"],
                                     mutates_args=_MUTATES.get(name, ()))
        op.register_fake(globals()[f"_fake_{name}"])
    return "python", why


BACKEND, BACKEND_WHY = _register()


def layer_norm(x: torch.Tensor, weight: Optional[torch.Tensor], bias: Optional[torch.Tensor],
               eps: float) -> torch.Tensor:
    return torch.ops.gpusqueeze.layer_norm(x, weight, bias, eps)


def rms_norm(x: torch.Tensor, weight: Optional[torch.Tensor], eps: float) -> torch.Tensor:
    return torch.ops.gpusqueeze.rms_norm(x, weight, eps)


def add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor], eps: float) -> torch.Tensor:
    """A decoder layer's residual add and RMSNorm in one pass: residual += x in place (residual contiguous, of x's
    shape, dtype and device), returns F.rms_norm(residual, residual.shape[-1:], weight, eps)."""
    return torch.ops.gpusqueeze.add_rms_norm(x, residual, weight, eps)


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.ops.gpusqueeze.softmax(x)


def softmax_dropout(x: torch.Tensor, p: float, seed: int, offset: int) -> torch.Tensor:
    """dropout(softmax(x, -1), p) with a mask fixed by (seed, offset, index): pass the seed explicitly, so the op is
    a pure function that torch.compile may reorder or recompute."""
    return torch.ops.gpusqueeze.softmax_dropout(x, p, seed, offset)


def nchw_to_nhwc(x: torch.Tensor) -> torch.Tensor:
    return torch.ops.gpusqueeze.nchw_to_nhwc(x)


def nhwc_to_nchw(x: torch.Tensor) -> torch.Tensor:
    return torch.ops.gpusqueeze.nhwc_to_nchw(x)


def w4a16_linear(x: torch.Tensor, qw, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    """y = x @ dequant(W).T + bias with qw from gpusqueeze.kernels.quantize_w4 (offline)."""
    return torch.ops.gpusqueeze.w4a16_linear(x, qw.data, qw.params, bias, qw.n, qw.k, qw.group)


def w8a16_linear(x: torch.Tensor, qw, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    """y = x @ dequant(W).T + bias with qw from gpusqueeze.kernels.quantize_w8 (offline)."""
    return torch.ops.gpusqueeze.w8a16_linear(x, qw.data, qw.params, bias, qw.n, qw.k)


# Every operator this module registers: name → the torch function it replaces (for tests and docs).
OPS = {
    "layer_norm": "torch.nn.functional.layer_norm(x, x.shape[-1:], weight, bias, eps)",
    "rms_norm": "torch.nn.functional.rms_norm(x, x.shape[-1:], weight, eps)",
    "add_rms_norm": "residual += x; torch.nn.functional.rms_norm(residual, residual.shape[-1:], weight, eps)",
    "softmax": "torch.softmax(x, -1)",
    "softmax_dropout": "torch.nn.functional.dropout(torch.softmax(x, -1), p)",
    "nchw_to_nhwc": "x.contiguous(memory_format=torch.channels_last)",
    "nhwc_to_nchw": "x.contiguous()",
    "w4a16_linear": "torch.nn.functional.linear(x, dequantized W, bias)",
    "w8a16_linear": "torch.nn.functional.linear(x, dequantized W, bias)",
}
