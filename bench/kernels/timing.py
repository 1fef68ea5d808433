"""CUDA-event timing shared by the kernel comparison scripts."""
import statistics

import torch


def median_us(fns, reps=30, inner=10, queue_ahead_cycles=0):
    """Median over `reps` samples of the time per call in µs. Each sample queues `inner` calls back to back between
    two CUDA events (so Python's per-call cost hides behind the GPU work instead of adding to it), cycling through
    `fns` (one callable, or several, e.g. one per rotated weight copy).

    queue_ahead_cycles > 0: each sample starts with the GPU spinning that many clock cycles (torch.cuda._sleep) before
    the first event, so the host queues the first call, and every later one, while the GPU is busy: the sample is the
    GPU's time for the calls alone. Without it the first call's host cost (argument checks, allocation, the launch:
    tens of µs) lands inside the sample, between the first event and the first kernel."""
    fns = fns if isinstance(fns, (list, tuple)) else [fns]
    for i in range(5):
        fns[i % len(fns)]()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if queue_ahead_cycles:
            torch.cuda._sleep(queue_ahead_cycles)
        a.record()
        for i in range(inner):
            fns[i % len(fns)]()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000 / inner)
    return statistics.median(times)
