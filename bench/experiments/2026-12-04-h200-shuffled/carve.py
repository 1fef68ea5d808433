"""Experiment: does the SM's shared-memory / L1 split change our row kernels' time? The library built with
GSQ_CARVEOUT read at each launch (cudaFuncAttributePreferredSharedMemoryCarveout of the kernel: -1 the driver's
default, 0-100 % of the unified memory as shared memory) runs into a fixed output at each value, beside a copy,
PyTorch eager and torch.compile, in shuffled rounds; each time is listed by the contender that ran before it.

  GSQ_KERNELS_LIBRARY=libgsqkernels-carve.so python3 carve.py --op layer_norm --cols 16384 --out carve.json
"""
import argparse
import json
import os
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
    ap.add_argument("--op", default="layer_norm", choices=["layer_norm", "rms_norm", "softmax"])
    ap.add_argument("--cols", type=int, default=16384)
    ap.add_argument("--rows", type=int, default=0, help="default: 128 Mi elements / cols")
    ap.add_argument("--values", default="-1,0,25,50,100")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--no-eager", action="store_true")
    ap.add_argument("--seed", type=int, default=0, help="round r shuffles with seed + r")
    ap.add_argument("--env", default="GSQ_CARVEOUT", help="the variable the library reads (GSQ_DYN_SMEM: dynamic "
                    "shared memory bytes each block of the register plans is launched with, unused)")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    cols, elements = args.cols, 128 * 2**20
    rows = args.rows or elements // cols
    x = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16)
    w = torch.randn(cols, device=dev, dtype=torch.bfloat16) * 0.5 + 1
    b = torch.randn(cols, device=dev, dtype=torch.bfloat16)
    y_copy, y = torch.empty_like(x), torch.empty_like(x)
    lib = gk._load()
    stream = torch.cuda.current_stream().cuda_stream
    eps = gk.ctypes.c_float(1e-5)
    if args.op == "layer_norm":
        def call():
            return lib.gsq_layer_norm(y.data_ptr(), x.data_ptr(), w.data_ptr(), b.data_ptr(), rows, cols, eps, 2,
                                      stream)
        fn = lambda t: F.layer_norm(t, (cols,), w, b, 1e-5)  # noqa: E731
    elif args.op == "rms_norm":
        def call():
            return lib.gsq_rms_norm(y.data_ptr(), x.data_ptr(), w.data_ptr(), rows, cols, eps, 2, stream)
        fn = lambda t: F.rms_norm(t, (cols,), w, 1e-5)  # noqa: E731
    else:
        def call():
            return lib.gsq_softmax(y.data_ptr(), x.data_ptr(), rows, cols, 2, stream)
        fn = lambda t: torch.softmax(t, -1)  # noqa: E731

    def at(v):
        def f():
            os.environ[args.env] = v
            assert call() == 0
        return f

    compiled = torch.compile(fn, dynamic=False)
    contenders = {"copy": lambda: y_copy.copy_(x), "eager": lambda: fn(x), "compile": lambda: compiled(x)}
    if args.no_eager:
        contenders.pop("eager")
    for v in args.values.split(","):
        contenders[f"ours@{v}"] = at(v)
    ref = fn(x).float()
    at(args.values.split(",")[0])()
    assert (y.float() - ref).abs().max().item() < 0.1
    names = list(contenders)
    runs = []
    for r in range(args.rounds):
        order = list(names)
        random.Random(args.seed + r).shuffle(order)
        for i, k in enumerate(order):
            runs.append({"round": r, "name": k, "after": order[i - 1] if i else None,
                         "us": median_us(contenders[k], args.reps, queue_ahead_cycles=2_000_000)})
    comp = statistics.median(p["us"] for p in runs if p["name"] == "compile")
    print(f"{args.op} {rows} x {cols} bf16, {args.rounds} shuffled rounds; compile median {comp:.2f} us")
    for k in names:
        rs = [p for p in runs if p["name"] == k]
        after_c = [p["us"] for p in rs if p["after"] == "compile"]
        other = [p["us"] for p in rs if p["after"] != "compile"]
        med = statistics.median(p["us"] for p in rs)
        print(f"  {k:10} median {med:8.2f} us ({comp / med:.4f} x compile); after compile "
              f"{statistics.median(after_c) if after_c else float('nan'):8.2f} (n={len(after_c)}), after others "
              f"{statistics.median(other) if other else float('nan'):8.2f} (n={len(other)})")
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps({"gpu": torch.cuda.get_device_properties(dev).name,
                                                      "op": args.op, "cols": cols, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
