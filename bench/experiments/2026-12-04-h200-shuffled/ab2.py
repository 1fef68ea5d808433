"""Experiment: LayerNorm through several builds of the library in one process (--libs name=path,...), each into its
own fixed output, beside a copy, eager and torch.compile, in shuffled rounds; each build's time per round is listed
by the contender that ran before it.

  python3 ab2.py --libs shipped=a/libgsqkernels.so,hinted=b/libgsqkernels.so --widths 16384 --out ab2.json
"""
import argparse
import ctypes
import json
import pathlib
import random
import statistics
import sys

import torch
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "bench" / "kernels"))
from timing import median_us  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--libs", required=True)
    ap.add_argument("--widths", default="16384")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    dev = torch.device("cuda")
    p, i64, f32, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float, ctypes.c_int
    libs = {}
    for item in args.libs.split(","):
        name, path = item.split("=", 1)
        lib = ctypes.CDLL(path)
        lib.gsq_layer_norm.argtypes, lib.gsq_layer_norm.restype = [p, p, p, p, i64, i64, f32, i32, p], i32
        libs[name] = lib
    stream = torch.cuda.current_stream().cuda_stream
    result = {"gpu": torch.cuda.get_device_properties(dev).name, "libs": args.libs, "widths": {}}
    for cols in [int(c) for c in args.widths.split(",")]:
        torch.manual_seed(0)
        rows = 128 * 2**20 // cols
        x = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16)
        w = torch.randn(cols, device=dev, dtype=torch.bfloat16) * 0.5 + 1
        b = torch.randn(cols, device=dev, dtype=torch.bfloat16)
        y_copy = torch.empty_like(x)
        fn = lambda t: F.layer_norm(t, (cols,), w, b, 1e-5)  # noqa: E731
        compiled = torch.compile(fn, dynamic=False)
        contenders = {"copy": lambda: y_copy.copy_(x), "eager": lambda: fn(x), "compile": lambda: compiled(x)}
        outs = {}
        for name, lib in libs.items():
            y = outs[name] = torch.full_like(x, float("nan"))
            contenders[name] = (lambda lib=lib, y=y: lib.gsq_layer_norm(
                y.data_ptr(), x.data_ptr(), w.data_ptr(), b.data_ptr(), rows, cols, 1e-5, 2, stream))
            assert contenders[name]() == 0
        first = next(iter(outs.values()))
        for name, y in outs.items():
            assert torch.equal(y, first), f"{name} differs"
        names = list(contenders)
        runs = []
        for r in range(args.rounds):
            order = list(names)
            random.Random(r).shuffle(order)
            for i, k in enumerate(order):
                runs.append({"round": r, "name": k, "after": order[i - 1] if i else None,
                             "us": median_us(contenders[k], args.reps, queue_ahead_cycles=2_000_000)})
        comp = statistics.median(q["us"] for q in runs if q["name"] == "compile")
        print(f"layer_norm {rows} x {cols}: compile median {comp:.2f} us", flush=True)
        for k in names:
            rs = [q for q in runs if q["name"] == k]
            med = statistics.median(q["us"] for q in rs)
            by = {}
            for q in rs:
                by.setdefault(q["after"], []).append(q["us"])
            print(f"  {k:8} median {med:7.2f} us ({comp / med:.4f} x compile); after " +
                  ", ".join(f"{a}: {statistics.median(v):.1f} (n={len(v)})" for a, v in sorted(by.items(), key=str)),
                  flush=True)
        result["widths"][cols] = runs
        del x, y_copy, outs, first
        torch.cuda.empty_cache()
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
