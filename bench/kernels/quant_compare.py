#!/usr/bin/env python3
"""W4A16 and W8A16 through the Python module against torch's fp16 `x @ w.T` (cuBLAS), one process, one GPU, weights
rotated through ≥ 192 MiB of copies so the 60 MB L2 never holds them between calls. Also reports the largest
difference from torch's fp16 output (the quantization error included; exactness is the GPU tests' job). Prints a markdown table; --out writes gpusqueeze.quant_compare/1 JSON."""
import argparse
import json
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python"))
import gpusqueeze_kernels as gk  # noqa: E402
from timing import median_us as time_us  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shapes", default="4096x4096,8192x8192,8192x28672,28672x8192", help="NxK list")
    ap.add_argument("--m", default="1,2,4,8,16")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    rows = []
    for shape in a.shapes.split(","):
        n, k = map(int, shape.split("x"))
        w = torch.randn(n, k, device=dev, dtype=torch.float16) * 0.02
        q4, q8 = gk.quantize_w4(w, 128), gk.quantize_w8(w)
        copies = max(2, -(-(192 << 20) // (n * k * 2)))
        ws = [w.clone() for _ in range(copies)]
        c4 = max(2, -(-(192 << 20) // (n * k // 2)))
        c8 = max(2, -(-(192 << 20) // (n * k)))
        q4s = [gk.QuantizedWeight(q4.layout, n, k, q4.data.clone(), q4.params.clone(), 128, q4.error) for _ in range(c4)]
        q8s = [gk.QuantizedWeight(q8.layout, n, k, q8.data.clone(), q8.params.clone(), 0, q8.error) for _ in range(c8)]
        for m in map(int, a.m.split(",")):
            x = torch.randn(m, k, device=dev, dtype=torch.float16)
            e4 = (gk.w4a16_linear(x, q4).float() - (x.float() @ w.float().T)).abs().max().item()
            e8 = (gk.w8a16_linear(x, q8).float() - (x.float() @ w.float().T)).abs().max().item()
            t_t = time_us([lambda wi=wi: x @ wi.T for wi in ws])
            t4 = time_us([lambda qi=qi: gk.w4a16_linear(x, qi) for qi in q4s])
            t8 = time_us([lambda qi=qi: gk.w8a16_linear(x, qi) for qi in q8s])
            r = {"n": n, "k": k, "m": m, "torch_fp16_us": t_t, "w4a16_us": t4, "w8a16_us": t8,
                 "w4_speedup": t_t / t4, "w8_speedup": t_t / t8, "w4_max_abs_vs_fp16": e4, "w8_max_abs_vs_fp16": e8,
                 "w4_quant_error": q4.error, "w8_quant_error": q8.error}
            rows.append(r)
            print(f"{shape} M={m}: torch {t_t:.1f} µs, W4 {t4:.1f} ({t_t / t4:.2f}×), W8 {t8:.1f} ({t_t / t8:.2f}×)",
                  file=sys.stderr, flush=True)
        del ws, q4s, q8s
        torch.cuda.empty_cache()
    print(f"# W4A16 / W8A16 (gpusqueeze, Python module) vs torch fp16 x @ w.T, {torch.cuda.get_device_name()}, "
          f"torch {torch.__version__}\n")
    print("| N×K | M | torch fp16 µs | W4A16 µs | × | W8A16 µs | × | max |Δ| vs fp16 (W4 / W8) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']}×{r['k']} | {r['m']} | {r['torch_fp16_us']:.1f} | {r['w4a16_us']:.1f} | {r['w4_speedup']:.2f} | "
              f"{r['w8a16_us']:.1f} | {r['w8_speedup']:.2f} | {r['w4_max_abs_vs_fp16']:.3g} / {r['w8_max_abs_vs_fp16']:.3g} |")
    if a.out:
        pathlib.Path(a.out).write_text(json.dumps({"schema": "gpusqueeze.quant_compare/1", "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
