#!/usr/bin/env python3
"""A stand-in for a PyTorch inference server whose GPU is under-used: each request does CPU preprocessing, a pageable
host-to-device copy, a small MLP and .item() (a sync). Runs until killed; writes its pid to --pid-file once CUDA is
up. Used by the exporter's device run: `gpusqueeze trace --on-demand -- python3 torch_server.py`, then `capture` or
the exporter's watcher."""
import argparse
import os

import numpy as np
import torch


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pid-file", required=True)
    a = ap.parse_args()
    model = torch.nn.Sequential(torch.nn.Linear(3 * 64 * 64, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda()
    rng = np.random.default_rng(0)
    torch.cuda.synchronize()
    with open(a.pid_file + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(a.pid_file + ".tmp", a.pid_file)
    total = 0.0
    while True:
        img = rng.random((64, 64, 3), dtype=np.float32)
        img = (img - img.mean()) / (img.std() + 1e-6)
        t = torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))).reshape(1, -1)
        total += model(t.cuda()).argmax().item()


if __name__ == "__main__":
    main()
