"""Prometheus metrics for PyTorch inference servers, named as `gpusqueeze rules generate` expects.

    import gpusqueeze.metrics as gm
    gm.start(port=8001)                 # /metrics on 0.0.0.0:8001 (prometheus_client's HTTP server)
    with gm.request_timer():            # one request: gsq_request_latency_seconds histogram
        out = model(batch)

Exports, besides the latency histogram, the caching allocator's state read from torch.cuda.memory_stats() at each
scrape (nothing runs between scrapes): allocated, reserved and inactive split bytes, and two ratios with the
definitions `gpusqueeze memory` uses on snapshots: fragmented = inactive split bytes / reserved (free blocks stuck
between live ones: what the GsqTorchAllocatorFragmented rule watches) and cached = (reserved - active - inactive
split) / reserved (whole free segments: the cache at work, which empty_cache() returns). 1 - allocated/reserved counts
both and fires on a healthy cache, so it is not exported. Needs `pip install prometheus_client`.
"""
import contextlib
import time

from prometheus_client import Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily, REGISTRY

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10)
REQUEST_LATENCY = Histogram("gsq_request_latency_seconds", "Request latency, seconds", buckets=BUCKETS)


class TorchAllocatorCollector:
    """Reads torch.cuda.memory_stats() per visible device when Prometheus scrapes."""

    def collect(self):
        try:
            import torch
        except ImportError:
            return
        if not torch.cuda.is_available():
            return
        fams = {
            "allocated": GaugeMetricFamily("gsq_torch_memory_allocated_bytes", "Bytes in live tensors", labels=["device"]),
            "reserved": GaugeMetricFamily("gsq_torch_memory_reserved_bytes", "Bytes the caching allocator holds", labels=["device"]),
            "inactive": GaugeMetricFamily("gsq_torch_memory_inactive_split_bytes", "Bytes in inactive, split blocks", labels=["device"]),
            "frag": GaugeMetricFamily("gsq_torch_memory_fragmented_ratio",
                                      "Inactive split bytes / reserved: free blocks stuck between live ones", labels=["device"]),
            "cached": GaugeMetricFamily("gsq_torch_memory_cached_ratio",
                                        "(reserved - active - inactive split) / reserved: whole free segments",
                                        labels=["device"]),
        }
        for d in range(torch.cuda.device_count()):
            s = torch.cuda.memory_stats(d)
            alloc = s.get("allocated_bytes.all.current", 0)
            res = s.get("reserved_bytes.all.current", 0)
            dev = str(d)
            fams["allocated"].add_metric([dev], alloc)
            fams["reserved"].add_metric([dev], res)
            split = s.get("inactive_split_bytes.all.current", 0)
            active = s.get("active_bytes.all.current", 0)
            fams["inactive"].add_metric([dev], split)
            fams["frag"].add_metric([dev], split / res if res else 0.0)
            fams["cached"].add_metric([dev], max(0, res - active - split) / res if res else 0.0)
        yield from fams.values()


_registered = False


def start(port=8001, addr="0.0.0.0"):
    """Registers the allocator collector once and serves /metrics."""
    global _registered
    if not _registered:
        REGISTRY.register(TorchAllocatorCollector())
        _registered = True
    start_http_server(port, addr=addr)


@contextlib.contextmanager
def request_timer():
    """Times one request into gsq_request_latency_seconds (wall time; synchronise first if the request is async)."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        REQUEST_LATENCY.observe(time.perf_counter() - t0)
