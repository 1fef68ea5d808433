#!/usr/bin/env python3
"""The three PyTorch workloads of the tracer-overhead benchmark, one per bottleneck class.

    workloads.py WORKLOAD MODE [--export FILE]

WORKLOAD: gpu (a chain of 8192x8192 bf16 matmuls), launch (thousands of tiny elementwise kernels), host (an inference
loop with CPU preprocessing, a pageable host-to-device copy and .item() per request).
MODE: plain (no profiler in the process; run it under `gpusqueeze trace` for the traced case) or torchprof
(torch.profiler with CPU and CUDA activities around the measured region; --export writes its Chrome trace).
The measured region is wrapped in the NVTX range "gsq-region". Prints one JSON line: the region's wall time.
"""
import argparse
import json
import time

import numpy as np
import torch


def gpu_bound():
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) / 90
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) / 90

    def step():
        x = a
        for _ in range(40):
            x = x @ b
        return x

    return step, 12


def launch_bound():
    x = torch.zeros(256, device="cuda")

    def step():
        y = x
        for _ in range(2000):
            y = y + 1.0
        return y

    return step, 8


def host_bound():
    model = torch.nn.Sequential(torch.nn.Linear(3 * 64 * 64, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda()
    rng = np.random.default_rng(0)

    def step():
        total = 0.0
        for _ in range(50):
            img = rng.random((64, 64, 3), dtype=np.float32)  # CPU preprocessing
            img = (img - img.mean()) / (img.std() + 1e-6)
            t = torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))).reshape(1, -1)
            out = model(t.cuda())  # pageable host-to-device copy
            total += out.argmax().item()  # a sync per request
        return total

    return step, 6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workload", choices=["gpu", "launch", "host"])
    p.add_argument("mode", choices=["plain", "torchprof"])
    p.add_argument("--export")
    args = p.parse_args()
    step, iters = {"gpu": gpu_bound, "launch": launch_bound, "host": host_bound}[args.workload]()
    for _ in range(2):  # warm-up: cuBLAS handles, allocator, lazy module loading
        step()
    torch.cuda.synchronize()

    def region():
        torch.cuda.nvtx.range_push("gsq-region")
        t0 = time.perf_counter()
        for _ in range(iters):
            step()
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        torch.cuda.nvtx.range_pop()
        return dt

    if args.mode == "torchprof":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            dt = region()
        if args.export:
            prof.export_chrome_trace(args.export)
    else:
        dt = region()
    print(json.dumps({"workload": args.workload, "mode": args.mode, "region_s": dt}))


if __name__ == "__main__":
    main()
