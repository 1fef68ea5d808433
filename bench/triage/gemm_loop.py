"""A steady bf16 GEMM load for a fixed time, for `gpusqueeze jitter` to watch: prints the time of each block of 50
GEMMs so their spread can be set beside the throttle shares. Usage: python3 gemm_loop.py [--seconds 120] [--n 8192]"""
import argparse
import sys
import time

import torch


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--n", type=int, default=8192)
    args = ap.parse_args()
    a = torch.randn(args.n, args.n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(args.n, args.n, device="cuda", dtype=torch.bfloat16)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    blocks = []
    t_end = time.monotonic() + args.seconds
    while time.monotonic() < t_end:
        start.record()
        for _ in range(50):
            torch.mm(a, b)
        stop.record()
        stop.synchronize()
        blocks.append(start.elapsed_time(stop) / 50)
    blocks.sort()
    n = len(blocks)
    print(f"{n} blocks of 50 GEMMs {args.n}^3 bf16: ms per GEMM P50 {blocks[n // 2]:.3f}, P99 {blocks[int(0.99 * (n - 1))]:.3f}, "
          f"max {blocks[-1]:.3f}; TFLOP/s at P50 {2 * args.n ** 3 / blocks[n // 2] / 1e9:.0f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
