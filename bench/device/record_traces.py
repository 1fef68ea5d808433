"""Records PyTorch-profiler (Kineto) traces on the GPU for the analyzer's fixtures:
  host-slow   an inference loop with the classic mistakes: pageable host-to-device copies, a .item() sync every step,
              CPU preprocessing between steps, many tiny kernels;
  host-fixed  the same loop fixed: pinned memory with non_blocking copies, no per-step sync, preprocessing overlapped;
  matmul      a chain of large bf16 matmuls (GPU-bound, matrix);
  norm        layer_norm/rms_norm over a large activation (GPU-bound, memory);
  tiny        a loop of tiny elementwise kernels (launch-bound);
  overlap     copies on a side stream overlapping matmuls on the default stream.
Usage: python3 record_traces.py OUT_DIR  → OUT_DIR/torch-NAME.json.gz"""
import os
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile
from trace_export import export_gz  # beside this script (bench/device)

out_dir = sys.argv[1]
torch.manual_seed(0)
dev = "cuda"
layers = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.GELU()) for _ in range(6)])
model = layers.to(dev, torch.bfloat16).eval()
batch = 16


def preprocess(n):
    # CPU-side work standing in for tokenisation/decoding: about 3 ms of Python and numpy-free math.
    x = torch.randn(n, 2048)
    t = time.perf_counter()
    while time.perf_counter() - t < 0.003:
        pass
    return x


def slow_step():
    x = preprocess(batch).to(dev).to(torch.bfloat16)  # pageable H2D, synchronous w.r.t. the host
    with torch.no_grad():
        y = model(x)
        y = torch.softmax(y.float(), dim=-1)
        for _ in range(8):  # many tiny elementwise kernels
            y = y * 1.0001 + 1e-6
    return y.sum().item()  # device-to-host sync every step


pinned = [torch.empty(batch, 2048).pin_memory() for _ in range(2)]


def fixed_steps(n):
    results = []
    nxt = preprocess(batch)
    for i in range(n):
        with torch.profiler.record_function(f"ProfilerStep#{i}"):
            buf = pinned[i % 2]
            buf.copy_(nxt)
            x = buf.to(dev, non_blocking=True).to(torch.bfloat16)
            with torch.no_grad():
                y = model(x)
                y = torch.softmax(y.float(), dim=-1)
                y = torch.addcmul(torch.full_like(y, 1e-6), y, torch.full_like(y, 1.0001))  # one op, not eight
            results.append(y.sum())
            nxt = preprocess(batch)  # overlaps with the GPU work just queued
    return torch.stack(results).sum().item()  # one sync at the end


def record(name, fn):
    for _ in range(3):
        fn()  # warm up: cuBLAS handles, allocator, lazy module loading
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    gz = export_gz(prof, os.path.join(out_dir, f"torch-{name}.json"))
    print(name, os.path.getsize(gz), "bytes gz")


def matmul_chain():
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    w = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16) * 0.01
    for _ in range(20):
        a = a @ w
    return a


def norms():
    x = torch.randn(32768, 4096, device=dev, dtype=torch.bfloat16)
    wt = torch.ones(4096, device=dev, dtype=torch.bfloat16)
    for _ in range(30):
        x = torch.nn.functional.layer_norm(x, (4096,), wt)
        x = torch.nn.functional.rms_norm(x, (4096,), wt)
    return x


def tiny_loop():
    x = torch.ones(1024, device=dev)
    for _ in range(2000):
        x = x * 1.0001 + 1e-6
    return x


side = torch.cuda.Stream()
host_chunks = [torch.randn(64 << 20 >> 2).pin_memory() for _ in range(4)]


def overlap():
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    w = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16) * 0.01
    dst = [torch.empty_like(h, device=dev) for h in host_chunks]
    for i in range(8):
        with torch.cuda.stream(side):
            dst[i % 4].copy_(host_chunks[i % 4], non_blocking=True)
        a = a @ w
    torch.cuda.current_stream().wait_stream(side)
    return a


def slow_steps(n):
    for i in range(n):
        with torch.profiler.record_function(f"ProfilerStep#{i}"):  # the step markers the analyzer times steps by
            slow_step()


record("host-slow", lambda: slow_steps(20))
record("host-fixed", lambda: fixed_steps(20))
record("matmul", matmul_chain)
record("norm", norms)
record("tiny", tiny_loop)
record("overlap", overlap)
print("torch", torch.__version__, "device", torch.cuda.get_device_name())
