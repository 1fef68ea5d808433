"""Experiment (not shipped): rowx9.so's RMSNorm (--op layer_norm: LayerNorm) variants beside the shipped kernel
(gpusqueeze_kernels), a copy and torch.compile, timed in rotating rounds (one fixed cycle, the start rotating); per
variant the median time and time ratios per round (median, bootstrap 95% interval) against torch.compile and the
shipped kernel. Above 1: the variant is faster.

  python3 rowx9.py --so rowx9.so --widths 8192,256,512 --rounds 15 --out rowx9.json
"""
import argparse
import ctypes
import json
import pathlib
import random
import re
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[4] / "bench" / "kernels"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[4] / "python"))
import gpusqueeze_kernels as gk  # noqa: E402
from timing import median_us  # noqa: E402


def ci(ratios):
    rng = random.Random(0)
    boot = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(2000))
    return statistics.median(ratios), boot[50], boot[1949]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--so", required=True)
    ap.add_argument("--widths", default="8192,256,512")
    ap.add_argument("--elements", type=int, default=128 * 2**20)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--only", default="", help="regular expression a variant's name must match (re.search)")
    ap.add_argument("--op", default="rms_norm", choices=["rms_norm", "layer_norm"])
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    lib = ctypes.CDLL(args.so)
    lib.rv_name.restype = ctypes.c_char_p
    lib.rv_cols.restype = ctypes.c_longlong
    lib.rv_launch.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.c_longlong, ctypes.c_longlong, ctypes.c_float, ctypes.c_void_p]
    ln = args.op == "layer_norm"
    dev = torch.device("cuda")
    torch.manual_seed(0)
    result = {"gpu": torch.cuda.get_device_properties(dev).name, "torch": torch.__version__, "rows": []}
    for cols in [int(c) for c in args.widths.split(",")]:
        rows = args.elements // cols
        x = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16)
        w = torch.randn(cols, device=dev, dtype=torch.bfloat16) * 0.5 + 1
        b = torch.randn(cols, device=dev, dtype=torch.bfloat16)
        y = torch.empty_like(x)
        y_copy = torch.empty_like(x)
        ours = (lambda: gk.layer_norm(x, w, b, 1e-5)) if ln else (lambda: gk.rms_norm(x, w, 1e-5))
        shipped = ours()
        contenders = {"copy": lambda: y_copy.copy_(x), "shipped": ours}
        compiled = torch.compile((lambda t: F.layer_norm(t, (cols,), w, b, 1e-5)) if ln else
                                 (lambda t: F.rms_norm(t, (cols,), w, 1e-5)), dynamic=False)
        contenders["compile"] = lambda: compiled(x)
        checks = {}
        for i in range(lib.rv_count()):
            name = lib.rv_name(i).decode()
            if lib.rv_cols(i) != cols or lib.rv_op(i) != int(ln) or not re.search(args.only, name):
                continue

            def launch(i=i):
                rc = lib.rv_launch(i, y.data_ptr(), x.data_ptr(), w.data_ptr(), b.data_ptr() if ln else None, rows,
                                   cols, 1e-5, torch.cuda.current_stream().cuda_stream)
                if rc:
                    raise RuntimeError(f"{name}: cudaError {rc}")
            y.fill_(float("nan"))
            launch()
            torch.cuda.synchronize()
            diff = (y.float() - shipped.float()).abs().max().item()
            checks[name] = diff
            if not diff <= 0.0625:  # NaN (a value not written) fails too
                print(f"{cols} {name}: max |diff| {diff} against the shipped kernel, left out", file=sys.stderr)
                continue
            contenders[name] = launch
        names = list(contenders)
        per_round = {k: [] for k in names}
        for r in range(args.rounds):
            for k in names[r % len(names):] + names[:r % len(names)]:
                per_round[k].append(median_us(contenders[k], args.reps, queue_ahead_cycles=2_000_000))
        entry = {"op": args.op, "cols": cols, "rows": rows, "max_abs_diff_vs_shipped": checks, "rounds_us": per_round,
                 "variants": {}}
        copy_us = statistics.median(per_round["copy"])
        print(f"\n{args.op} {rows} x {cols} bf16, {args.rounds} rounds; copy {copy_us:.2f} us")
        print(f"  {'contender':52} {'us':>8} {'x copy':>7}  {'x compile [95%]':>22}  {'x shipped [95%]':>22}")
        for k in names:
            m = statistics.median(per_round[k])
            vc = ci([c / o for c, o in zip(per_round["compile"], per_round[k])])
            vs = ci([c / o for c, o in zip(per_round["shipped"], per_round[k])])
            cp = statistics.median([c / o for c, o in zip(per_round["copy"], per_round[k])])
            entry["variants"][k] = {"us": m, "x_copy": cp, "x_compile": vc, "x_shipped": vs}
            print(f"  {k:52} {m:8.2f} {cp:7.3f}  {vc[0]:.4f} [{vc[1]:.4f}-{vc[2]:.4f}]  "
                  f"{vs[0]:.4f} [{vs[1]:.4f}-{vs[2]:.4f}]", flush=True)
        result["rows"].append(entry)
        del x, y, y_copy, shipped
        torch.cuda.empty_cache()
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
