"""Experiment: LayerNorm 16384 bf16 (8192 rows) through the library's C ABI with the output placed at chosen offsets
inside one pool (and, with --allocated, in tensors from torch.empty_like), beside the library's call through
gpusqueeze_kernels (which allocates its output), a copy and torch.compile, all taking turns for --rounds rounds
(one fixed cycle, the start rotating). Shows how much of ours' time depends on where the output lies.

  python3 ln_offsets.py --rounds 10 --out ln_offsets.json
"""
import argparse
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
    ap.add_argument("--cols", type=int, default=16384)
    ap.add_argument("--op", default="layer_norm", choices=["layer_norm", "rms_norm"])
    ap.add_argument("--offsets-kib", default="0,256,512,1024,2048,3072,4096,8192,16384,32768,65536,131072")
    ap.add_argument("--allocated", type=int, default=0, help="also this many outputs from torch.empty_like")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    cols, elements = args.cols, 128 * 2**20
    rows = elements // cols
    x = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16)
    w = torch.randn(cols, device=dev, dtype=torch.bfloat16) * 0.5 + 1
    b = torch.randn(cols, device=dev, dtype=torch.bfloat16)
    offsets = [int(k) * 1024 for k in args.offsets_kib.split(",")]
    pool = torch.empty(elements + max(offsets) // 2, device=dev, dtype=torch.bfloat16)
    y_copy = torch.empty_like(x)
    lib = gk._load()
    stream = torch.cuda.current_stream().cuda_stream
    ln = args.op == "layer_norm"
    ref = gk.layer_norm(x, w, b, 1e-5) if ln else gk.rms_norm(x, w, 1e-5)

    def at(off):
        ptr = pool.data_ptr() + off
        if ln:
            return lambda: lib.gsq_layer_norm(ptr, x.data_ptr(), w.data_ptr(), b.data_ptr(), rows, cols,
                                              gk.ctypes.c_float(1e-5), 2, stream)
        return lambda: lib.gsq_rms_norm(ptr, x.data_ptr(), w.data_ptr(), rows, cols, gk.ctypes.c_float(1e-5), 2,
                                        stream)

    # Outputs the caching allocator hands out, used through the C ABI like the pool's (--allocated N of them).
    held = [torch.empty_like(x) for _ in range(args.allocated)]
    contenders = {"copy": lambda: y_copy.copy_(x),
                  "ours (allocating)": ((lambda: gk.layer_norm(x, w, b, 1e-5)) if ln else
                                        (lambda: gk.rms_norm(x, w, 1e-5)))}
    fn = (lambda t: F.layer_norm(t, (cols,), w, b, 1e-5)) if ln else (lambda t: F.rms_norm(t, (cols,), w, 1e-5))
    compiled = torch.compile(fn, dynamic=False)
    contenders["compile"] = lambda: compiled(x)
    for off in offsets:
        f = at(off)
        pool.fill_(float("nan"))
        assert f() == 0
        got = pool[off // 2: off // 2 + elements].view(rows, cols)
        assert torch.equal(got, ref), f"offset {off}: output differs from the library's call"
        contenders[f"ours, output at pool + {off // 1024} KiB"] = f
    for i, t in enumerate(held):
        off = t.data_ptr() - pool.data_ptr()
        contenders[f"ours, output in allocated tensor {i} (pool {off / 2**20:+.0f} MiB)"] = (
            lambda t=t: lib.gsq_layer_norm(t.data_ptr(), x.data_ptr(), w.data_ptr(), b.data_ptr(), rows, cols, 1e-5,
                                           2, stream)) if ln else (
            lambda t=t: lib.gsq_rms_norm(t.data_ptr(), x.data_ptr(), w.data_ptr(), rows, cols, 1e-5, 2, stream))
    names = list(contenders)
    per_round = {k: [] for k in names}
    for r in range(args.rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            per_round[k].append(median_us(contenders[k], args.reps, queue_ahead_cycles=2_000_000))
    result = {"gpu": torch.cuda.get_device_properties(dev).name, "op": args.op, "rows": rows, "cols": cols,
              "x_ptr": x.data_ptr(), "pool_ptr": pool.data_ptr(), "rounds_us": per_round, "contenders": {}}
    print(f"{args.op} {rows} x {cols} bf16, {args.rounds} rounds; x at {x.data_ptr():#x}, pool at "
          f"{pool.data_ptr():#x} (pool - x = {(pool.data_ptr() - x.data_ptr()) / 2**20:.2f} MiB)")
    print(f"  {'contender':58} {'median us':>10} {'min':>8} {'max':>8} {'x compile':>10}")
    for k in names:
        t = per_round[k]
        vs = statistics.median(c / o for c, o in zip(per_round["compile"], t))
        result["contenders"][k] = {"median_us": statistics.median(t), "min_us": min(t), "max_us": max(t),
                                   "x_compile": vs}
        print(f"  {k:58} {statistics.median(t):10.2f} {min(t):8.2f} {max(t):8.2f} {vs:10.4f}")
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
