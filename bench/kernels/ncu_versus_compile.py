#!/usr/bin/env python3
"""One call of a gpusqueeze row kernel and one of torch.compile's kernel for the same operation and shape, inside a
cudaProfilerStart/Stop range, for Nsight Compute to put side by side (DRAM bytes, achieved occupancy, L1/L2 hit
rates, registers, block and grid: the compiled kernel's launch shows the config Inductor's autotuner chose):

  ncu --clock-control none --profile-from-start off --metrics ... python3 ncu_versus_compile.py --op layer_norm \\
      --cols 16384

Compiling and autotuning happen before the range, so only the two measured calls are profiled."""
import argparse
import pathlib
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python"))
import gpusqueeze_kernels as gk  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--op", default="layer_norm", choices=["layer_norm", "rms_norm", "softmax"])
    ap.add_argument("--cols", type=int, default=16384)
    ap.add_argument("--elements", type=int, default=128 * 2**20)
    args = ap.parse_args()
    rows, cols = args.elements // args.cols, args.cols
    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(cols, device="cuda", dtype=torch.bfloat16) * 0.5 + 1
    b = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
    if args.op == "layer_norm":
        ours, ref = (lambda: gk.layer_norm(x, w, b, 1e-5)), (lambda t: F.layer_norm(t, (cols,), w, b, 1e-5))
    elif args.op == "rms_norm":
        ours, ref = (lambda: gk.rms_norm(x, w, 1e-5)), (lambda t: F.rms_norm(t, (cols,), w, 1e-5))
    else:
        ours, ref = (lambda: gk.softmax(x)), (lambda t: torch.softmax(t, -1))
    comp = torch.compile(ref, dynamic=False)
    for _ in range(3):
        ours(), comp(x)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    ours()
    comp(x)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    print(f"{args.op} {rows}x{cols} bf16: profiled one call of ours, then one of torch.compile's", file=sys.stderr)


if __name__ == "__main__":
    main()
