#!/usr/bin/env python3
"""W4A16 and W8A16 through the Python module against torch's `x @ w.T` (cuBLAS) in --dtype, one process, one GPU,
weights rotated through ≥ 192 MiB of copies so the 60 MB L2 never holds them between calls. Also reports the largest
difference from torch's output (the quantization error included; exactness is the GPU tests' job).

With --dtype bfloat16 also PyTorch's own INT4 kernel (tinygemm: torch._weight_int4pack_mm on weights packed by
torch._convert_weight_to_int4pack, group 128, its scales and zeros in bf16) where this torch has it, and the floor:
a device copy (cudaMemcpyAsync D2D) that moves as many bytes as the INT4 kernel must read (weights and group
parameters; the copy reads half and writes half), rotated the same way. Samples are queued behind a GPU spin
(timing.py), so every figure is GPU time. Prints a markdown table; --out writes gpusqueeze.quant_compare/1 JSON."""
import argparse
import json
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python"))
import gpusqueeze_kernels as gk  # noqa: E402
from timing import median_us  # noqa: E402

QUEUE_AHEAD_CYCLES = 4_000_000


def time_us(fns):
    return median_us(fns, queue_ahead_cycles=QUEUE_AHEAD_CYCLES)


def tinygemm_weights(w, group, copies):
    """torch's INT4 layout of w (asymmetric, group-wise, as gpt-fast and torchao build it), `copies` times, or None."""
    if not hasattr(torch, "_weight_int4pack_mm"):
        return None
    n, k = w.shape
    g = w.float().reshape(n, k // group, group)
    lo, hi = g.amin(-1, keepdim=True), g.amax(-1, keepdim=True)
    scale = ((hi - lo).clamp(min=1e-6) / 15)
    q = ((g - lo) / scale).round().clamp(0, 15).to(torch.int32).reshape(n, k)
    zero = lo + scale * 8  # dequantized as (q - 8) * scale + zero
    sz = torch.cat([scale, zero], -1).reshape(n, k // group, 2).transpose(0, 1).contiguous().to(torch.bfloat16)
    packed = torch._convert_weight_to_int4pack((q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8), 8)
    return [(packed.clone(), sz.clone()) for _ in range(copies)]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shapes", default="4096x4096,8192x8192,8192x28672,28672x8192", help="NxK list")
    ap.add_argument("--m", default="1,2,3,4,6,8,12,16")
    ap.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    rows = []
    for shape in a.shapes.split(","):
        n, k = map(int, shape.split("x"))
        dt = getattr(torch, a.dtype)
        w = torch.randn(n, k, device=dev, dtype=dt) * 0.02
        q4, q8 = gk.quantize_w4(w, 128), gk.quantize_w8(w)
        copies = max(2, -(-(192 << 20) // (n * k * 2)))
        ws = [w.clone() for _ in range(copies)]
        c4 = max(2, -(-(192 << 20) // (n * k // 2)))
        c8 = max(2, -(-(192 << 20) // (n * k)))
        q4s = [gk.QuantizedWeight(q4.layout, n, k, q4.data.clone(), q4.params.clone(), 128, q4.error) for _ in range(c4)]
        q8s = [gk.QuantizedWeight(q8.layout, n, k, q8.data.clone(), q8.params.clone(), 0, q8.error) for _ in range(c8)]
        tiny = tinygemm_weights(w, 128, c4) if dt == torch.bfloat16 else None
        read = q4.data.numel() * q4.data.element_size() + q4.params.numel() * q4.params.element_size()
        src = [torch.empty(read // 2, dtype=torch.uint8, device=dev) for _ in range(c4)]
        dst = [torch.empty_like(t) for t in src]
        t_floor = time_us([lambda d=d, t=t: d.copy_(t) for d, t in zip(dst, src)])
        for m in map(int, a.m.split(",")):
            x = torch.randn(m, k, device=dev, dtype=dt)
            e4 = (gk.w4a16_linear(x, q4).float() - (x.float() @ w.float().T)).abs().max().item()
            e8 = (gk.w8a16_linear(x, q8).float() - (x.float() @ w.float().T)).abs().max().item()
            t_t = time_us([lambda wi=wi: x @ wi.T for wi in ws])
            t4 = time_us([lambda qi=qi: gk.w4a16_linear(x, qi) for qi in q4s])
            t8 = time_us([lambda qi=qi: gk.w8a16_linear(x, qi) for qi in q8s])
            r = {"n": n, "k": k, "m": m, "dtype": a.dtype, "torch_fp16_us": t_t, "w4a16_us": t4, "w8a16_us": t8,
                 "w4_speedup": t_t / t4, "w8_speedup": t_t / t8, "w4_max_abs_vs_fp16": e4, "w8_max_abs_vs_fp16": e8,
                 "w4_quant_error": q4.error, "w8_quant_error": q8.error, "w4_read_bytes": read,
                 "floor_us": t_floor, "w4_vs_floor": t_floor / t4}
            if tiny:
                try:
                    et = (torch._weight_int4pack_mm(x, tiny[0][0], 128, tiny[0][1]).float()
                          - (x.float() @ w.float().T)).abs().max().item()
                    r["tinygemm_us"] = time_us([lambda p=p: torch._weight_int4pack_mm(x, p[0], 128, p[1]) for p in tiny])
                    r["tinygemm_max_abs_vs_fp"] = et
                    r["w4_vs_tinygemm"] = r["tinygemm_us"] / t4
                except RuntimeError as e:  # a torch whose INT4 kernel refuses this shape: a result, not a crash
                    r["tinygemm_error"] = str(e)[:200]
            rows.append(r)
            print(f"{shape} M={m}: torch {t_t:.1f} µs, W4 {t4:.1f} ({t_t / t4:.2f}×, floor {t_floor:.1f}"
                  + (f", tinygemm {r['tinygemm_us']:.1f}" if "tinygemm_us" in r else "")
                  + f"), W8 {t8:.1f} ({t_t / t8:.2f}×)", file=sys.stderr, flush=True)
        del ws, q4s, q8s, tiny, src, dst
        torch.cuda.empty_cache()
    print(f"# W4A16 / W8A16 (gpusqueeze, Python module) vs torch {a.dtype} x @ w.T, {torch.cuda.get_device_name()}, "
          f"torch {torch.__version__}\n")
    print(f"| N×K | M | torch {a.dtype} µs | W4A16 µs | × | tinygemm µs | W4 / tinygemm | copy floor µs | W4 × floor "
          "| W8A16 µs | × | max |Δ| vs torch (W4 / W8) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        tg = (f"{r['tinygemm_us']:.1f} | {r['w4_vs_tinygemm']:.2f}" if "tinygemm_us" in r else "– | –")
        print(f"| {r['n']}×{r['k']} | {r['m']} | {r['torch_fp16_us']:.1f} | {r['w4a16_us']:.1f} | {r['w4_speedup']:.2f} | "
              f"{tg} | {r['floor_us']:.1f} | {r['w4_vs_floor']:.2f} | "
              f"{r['w8a16_us']:.1f} | {r['w8_speedup']:.2f} | {r['w4_max_abs_vs_fp16']:.3g} / {r['w8_max_abs_vs_fp16']:.3g} |")
    if a.out:
        pathlib.Path(a.out).write_text(json.dumps({"schema": "gpusqueeze.quant_compare/1", "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
