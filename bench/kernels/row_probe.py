"""What each row kernel launches and how long it runs on the GPU, per call, beside Liger-Kernel's: the kernels' names,
their count per call and their device time from torch.profiler (the CUPTI activity records), at a few latency-bound
shapes. A look inside bench/kernels/row_shapes.py's ratios: an operation whose call launches more than one kernel, or
whose one kernel runs longer than a peer's at the same bytes, shows here.

Usage (device, with libgsqkernels.so built): GSQ_KERNELS_LIBRARY=… python3 bench/kernels/row_probe.py
  [--shapes 1x768,8x4096] [--ops layer_norm,rms_norm] [--calls 200] [--plain] [--out probe.json]"""
import argparse
import json
import sys
from collections import defaultdict

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import row_shapes  # noqa: E402  (the contenders: ours, eager, Liger)


def profile(fn, calls):
    """{kernel name: (launches per call, device µs per call)} over `calls` calls after a warm-up."""
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    per = defaultdict(lambda: [0, 0.0])
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            per[e.name][0] += 1
            per[e.name][1] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
    return {k: (n / calls, us / calls) for k, (n, us) in per.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="1x768,32x768,1024x768,1x4096,8x4096,8x8192,8x14336")
    ap.add_argument("--ops", default="layer_norm,rms_norm,softmax")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--plain", action="store_true", help="call ours only, without torch.profiler (under ncu)")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    dt = getattr(torch, args.dtype)
    dev = torch.device("cuda")
    torch.manual_seed(0)
    liger = row_shapes.liger_fns()
    out = {"schema": "gpusqueeze.row_probe/1", "gpu": torch.cuda.get_device_name(dev), "dtype": args.dtype, "rows": []}
    for shape in args.shapes.split(","):
        rows, cols = (int(v) for v in shape.split("x"))
        x = torch.randn(rows, cols, device=dev, dtype=dt)
        w = torch.randn(cols, device=dev, dtype=dt) * 0.5 + 1
        b = torch.randn(cols, device=dev, dtype=dt)
        for op in args.ops.split(","):
            if args.plain:
                for _ in range(args.calls):
                    row_shapes.ours_fn(op)(x, w, b)
                torch.cuda.synchronize()
                continue
            contenders = {"ours": row_shapes.ours_fn(op), "eager": row_shapes.eager_fn(op, cols)}
            if op in liger:
                contenders["liger"] = liger[op]
            for who, fn in contenders.items():
                with torch.no_grad():
                    kernels = profile(lambda: fn(x, w, b), args.calls)
                total = sum(us for _, us in kernels.values())
                out["rows"].append({"op": op, "rows": rows, "cols": cols, "who": who, "device_us": total,
                                    "kernels": {k: {"per_call": n, "us": us} for k, (n, us) in kernels.items()}})
                names = "; ".join(f"{n:.0f}× {k[:90]} {us:.2f} µs" for k, (n, us) in kernels.items())
                print(f"{op:11} {rows:>5}×{cols:<6} {who:6} {total:6.2f} µs  {names}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
