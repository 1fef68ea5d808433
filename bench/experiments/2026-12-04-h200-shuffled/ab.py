"""Experiment: LayerNorm through two builds of the library in one process (GSQ_KERNELS_LIBRARY: the new one, --old:
the previous one), each into a fixed output, beside a copy and torch.compile, in shuffled rounds per width.

  GSQ_KERNELS_LIBRARY=new/libgsqkernels.so python3 ab.py --old old/libgsqkernels.so --widths 8192,16384,32768
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
sys.path.insert(0, str(ROOT / "python"))
import gpusqueeze_kernels as gk  # noqa: E402
from timing import median_us  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True)
    ap.add_argument("--widths", default="8192,16384,32768")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    dev = torch.device("cuda")
    new = gk._load()
    old = ctypes.CDLL(args.old)
    p, i64, f32, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float, ctypes.c_int
    old.gsq_layer_norm.argtypes, old.gsq_layer_norm.restype = [p, p, p, p, i64, i64, f32, i32, p], i32
    stream = torch.cuda.current_stream().cuda_stream
    result = {"gpu": torch.cuda.get_device_properties(dev).name, "new": gk.library_path(), "old": args.old,
              "widths": {}}
    for cols in [int(c) for c in args.widths.split(",")]:
        torch.manual_seed(0)
        rows = 128 * 2**20 // cols
        x = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16)
        w = torch.randn(cols, device=dev, dtype=torch.bfloat16) * 0.5 + 1
        b = torch.randn(cols, device=dev, dtype=torch.bfloat16)
        y_copy, y_new, y_old = torch.empty_like(x), torch.empty_like(x), torch.empty_like(x)

        def call(lib, y):
            return lambda: lib.gsq_layer_norm(y.data_ptr(), x.data_ptr(), w.data_ptr(), b.data_ptr(), rows, cols,
                                              1e-5, 2, stream)
        compiled = torch.compile(lambda t: F.layer_norm(t, (cols,), w, b, 1e-5), dynamic=False)
        contenders = {"copy": lambda: y_copy.copy_(x), "compile": lambda: compiled(x), "new": call(new, y_new),
                      "old": call(old, y_old)}
        for k in ("new", "old"):
            assert contenders[k]() == 0
        assert torch.equal(y_new, y_old), "the two builds disagree"
        names = list(contenders)
        t = {k: [] for k in names}
        for r in range(args.rounds):
            order = list(names)
            random.Random(r).shuffle(order)
            for k in order:
                t[k].append(median_us(contenders[k], args.reps, queue_ahead_cycles=2_000_000))
        entry = {"rounds_us": t}
        line = f"layer_norm {rows} x {cols}:"
        for k in names:
            vs = [c / o for c, o in zip(t["compile"], t[k])]
            entry[k] = {"median_us": statistics.median(t[k]), "min_us": min(t[k]), "max_us": max(t[k]),
                        "x_compile": statistics.median(vs)}
            line += (f"  {k} {statistics.median(t[k]):.2f} us [{min(t[k]):.2f}-{max(t[k]):.2f}] "
                     f"{statistics.median(vs):.4f}x")
        print(line, flush=True)
        result["widths"][cols] = entry
        del x, y_copy, y_new, y_old
        torch.cuda.empty_cache()
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
