"""Before/after pairs for the analyzer's what-if predictions: each pair is one loop written two ways, the "before"
recorded with the PyTorch profiler (ProfilerStep# markers per step), and both timed untraced in interleaved rounds
(medians), so `gpusqueeze analyze --what-if FIX before.json.gz` can be checked against the measured "after".
  launch   50 tiny elementwise ops per step            → the step captured once in a CUDA graph and replayed (graphs)
  pinned   a 32 MiB pageable host-to-device copy + GEMM → a pinned buffer with non_blocking=True (pinned)
  sync     a GEMM chain and .item() every step          → no .item() (sync)
  layout   a bf16 conv stack in NCHW (cuDNN transposes)  → model and input channels_last at load (layout)
  copystream  a pinned 64 MiB copy, then GEMMs, one stream → the next batch's copy on a side stream (prefetch) while
           this one computes (no what-if models a prefetch yet: recorded so one can be checked against it)
Usage: python3 record_pairs.py OUT_DIR [NAME ...] → OUT_DIR/pair-NAME-before.json.gz and OUT_DIR/pairs.json (P50s)."""
import json
import os
import statistics
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile, record_function
from trace_export import export_gz  # beside this script (bench/device)

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
dev = "cuda"
torch.manual_seed(0)

# --- launch-bound: 50 tiny ops per step, or the same step from a CUDA graph ---
x_small = torch.ones(1024, device=dev)


def launch_step():
    y = x_small
    for _ in range(25):
        y = y * 1.0001 + 1e-6
    return y


static_out = None
graph = torch.cuda.CUDAGraph()
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    launch_step()  # warm-up on a side stream, as torch.cuda.graphs asks
torch.cuda.current_stream().wait_stream(s)
with torch.cuda.graph(graph):
    static_out = launch_step()


def launch_fixed():
    graph.replay()
    return static_out


# --- pageable vs pinned input copies ---
host_pageable = torch.randn(8 << 20)  # 32 MiB of fp32
host_pinned = host_pageable.clone().pin_memory()
w = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)


def pinned_before():
    a = host_pageable.to(dev).view(2048, 4096).to(torch.bfloat16)
    return a @ w


def pinned_after():
    a = host_pinned.to(dev, non_blocking=True).view(2048, 4096).to(torch.bfloat16)
    return a @ w


# --- a sync every step on a GPU-heavy step ---
big = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
wb = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16) * 0.01


def sync_before():
    a = big
    for _ in range(3):
        a = a @ wb
    return a.float().sum().item()


def sync_after():
    a = big
    for _ in range(3):
        a = a @ wb
    return a.float().sum()


# --- NCHW convolutions (cuDNN runs NHWC kernels and transposes around them) vs channels_last at load ---
convs = torch.nn.Sequential(*[torch.nn.Conv2d(128, 128, 3, padding=1) for _ in range(4)]).to(dev, torch.bfloat16).eval()
convs_cl = torch.nn.Sequential(*[torch.nn.Conv2d(128, 128, 3, padding=1) for _ in range(4)]).to(dev, torch.bfloat16)
convs_cl.load_state_dict(convs.state_dict())
convs_cl = convs_cl.eval().to(memory_format=torch.channels_last)
img = torch.randn(32, 128, 56, 56, device=dev, dtype=torch.bfloat16)
img_cl = img.contiguous(memory_format=torch.channels_last)


def layout_before():
    with torch.no_grad():
        return convs(img)


def layout_after():
    with torch.no_grad():
        return convs_cl(img_cl)


# --- a copy then compute on one stream vs the next batch's copy prefetched on a side stream ---
batches = [torch.randn(4096, 4096, dtype=torch.float32).pin_memory() for _ in range(2)]  # 64 MiB each
wc = torch.randn(4096, 4096, device=dev)
copy_stream = torch.cuda.Stream()
state = {"i": 0, "next": None, "ready": None}


def copy_before():
    a = batches[state["i"] % 2].to(dev, non_blocking=True)
    state["i"] += 1
    for _ in range(4):
        a = a @ wc
    return a


def copy_after():
    if state["next"] is None:  # the first batch: nothing was prefetched
        with torch.cuda.stream(copy_stream):
            state["next"] = batches[state["i"] % 2].to(dev, non_blocking=True)
            state["ready"] = torch.cuda.Event()
            state["ready"].record(copy_stream)
    torch.cuda.current_stream().wait_event(state["ready"])
    a = state["next"]
    a.record_stream(torch.cuda.current_stream())
    state["i"] += 1
    with torch.cuda.stream(copy_stream):  # prefetch the next batch while this one computes
        state["next"] = batches[state["i"] % 2].to(dev, non_blocking=True)
        state["ready"] = torch.cuda.Event()
        state["ready"].record(copy_stream)
    for _ in range(4):
        a = a @ wc
    return a


pairs = {"launch": (launch_step, launch_fixed, "graphs"), "pinned": (pinned_before, pinned_after, "pinned"),
         "sync": (sync_before, sync_after, "sync"), "layout": (layout_before, layout_after, "layout"),
         "copystream": (copy_before, copy_after, "pinned")}
if len(sys.argv) > 2:
    pairs = {k: v for k, v in pairs.items() if k in sys.argv[2:]}


def steps_ms(fn, n):
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e3


result = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "pairs": {}}
for name, (before, after, fix) in pairs.items():
    for fn in (before, after):
        steps_ms(fn, 20)  # warm-up
    b, a = [], []
    for _ in range(15):  # interleaved rounds
        b.append(steps_ms(before, 40))
        a.append(steps_ms(after, 40))
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(30):
            with record_function(f"ProfilerStep#{i}"):
                before()
        torch.cuda.synchronize()
    export_gz(prof, os.path.join(out, f"pair-{name}-before.json"))
    result["pairs"][name] = {"fix": fix, "before_p50_ms": statistics.median(b), "after_p50_ms": statistics.median(a),
                             "before_ms": b, "after_ms": a}
    print(f"{name}: before {statistics.median(b):.3f} ms, after {statistics.median(a):.3f} ms ({fix})", flush=True)
json.dump(result, open(os.path.join(out, "pairs.json"), "w"), indent=1)
