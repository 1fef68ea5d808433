"""CUDA-event timing shared by the kernel comparison scripts."""
import statistics

import torch


def median_us(fns, reps=30, inner=10):
    """Median over `reps` samples of the time per call in µs. Each sample queues `inner` calls back to back between
    two CUDA events (so Python's per-call cost hides behind the GPU work instead of adding to it), cycling through
    `fns` (one callable, or several, e.g. one per rotated weight copy)."""
    fns = fns if isinstance(fns, (list, tuple)) else [fns]
    for i in range(5):
        fns[i % len(fns)]()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for i in range(inner):
            fns[i % len(fns)]()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000 / inner)
    return statistics.median(times)
