"""A program whose daemon thread is inside CUDA calls when the interpreter exits: it pins host buffers and copies them
to the GPU in a loop while the main thread does a little work and returns. Untraced it exits 0; under a tracer it
must end the same way (issue #49 saw SIGABRT in 2 of 11 traced runs).
Usage: python3 bench/teardown/daemon_copy.py [SECONDS]"""
import sys
import threading
import time

import torch


def copier():
    dev = torch.device("cuda")
    while True:
        host = torch.empty(1 << 20, dtype=torch.float32).pin_memory()
        host.fill_(1.0)
        dev_t = host.to(dev, non_blocking=True)
        dev_t.add_(1.0)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    torch.ones(1, device="cuda")  # CUDA up before the thread starts
    threading.Thread(target=copier, daemon=True).start()
    x = torch.randn(1024, 1024, device="cuda")
    end = time.time() + seconds
    while time.time() < end:
        x = x @ x
        x = x / x.norm()
    torch.cuda.synchronize()
    print("main done", flush=True)


if __name__ == "__main__":
    main()
