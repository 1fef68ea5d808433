"""Records two one-rank NCCL traces with torch.profiler for the analyzer's communication findings: gradient-bucket
all_reduce issued asynchronously while matmuls run (overlapped), and the same all_reduce waited on before each matmul
(serialised). One GPU runs a one-rank NCCL communicator: the NCCL kernels and their timing are real, the traffic is local.
Usage: python3 record_nccl_trace.py OUT_DIR → OUT_DIR/torch-comm-{overlap,serial}.json.gz"""
import gzip
import os
import shutil
import sys
import tempfile

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile

out_dir = sys.argv[1]
init = "file://" + os.path.join(tempfile.mkdtemp(), "rendezvous")
dist.init_process_group("nccl", init_method=init, rank=0, world_size=1, device_id=torch.device("cuda:0"))
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
w = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) * 0.01
buckets = [torch.randn(64 << 20, device="cuda") for _ in range(4)]  # 256 MB fp32 buckets


def overlapped():
    x = a
    for i in range(8):
        work = dist.all_reduce(buckets[i % 4], async_op=True)
        x = x @ w
        work.wait()
    return x


def serial():
    x = a
    for i in range(8):
        dist.all_reduce(buckets[i % 4])
        torch.cuda.current_stream().synchronize()
        x = x @ w
    return x


def record(name, fn):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    raw = os.path.join(out_dir, f"torch-comm-{name}.json")
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as src, gzip.open(raw + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(raw)
    print(name, os.path.getsize(raw + ".gz"), "bytes gz")


record("overlap", overlapped)
record("serial", serial)
dist.destroy_process_group()
print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(), torch.cuda.get_device_name())
