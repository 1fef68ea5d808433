"""Time PyTorch code with gpusqueeze's protocol and write the same gpusqueeze.bench/1 JSON that `gpusqueeze compare` reads.

    import torch, gpusqueeze.bench as gb
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    res = gb.measure("rms_norm", lambda: torch.nn.functional.rms_norm(x, (8192,)),
                     axes={"rows": "8192"}, bytes_per_launch=2 * x.numel() * x.element_size())
    gb.write_run([res], "torch.json")

Protocol (the C++ harness's, docs/timing-protocol.md): warmup kept out; "cold" samples with the L2 flushed by a kernel
that reads a zeroed buffer of twice its size (a read leaves only clean lines; a memset's dirty lines would be written
back inside the timed call) and the call queued behind torch.cuda._sleep so its launch cost is not timed; "batch"
samples of many calls between one event pair; each mode stops when the 95% CI of the median is within the target, or at
the time limit. With NVML's Python binding (PyPI nvidia-ml-py, module pynvml) the SM clock and clock-event reasons are
read with every sample while the call runs, and the throttle rule is the harness's: a sample is flagged when a
slowdown or power-cap reason is set or its clock is below 95% of the run's highest, and flagged samples leave the
statistics unless more than half are flagged.

What differs from the C++ harness, plainly: the blocking kernel is torch.cuda._sleep (a fixed spin, not a host-mapped
flag released by the CPU), so a call whose launch takes longer than the spin is timed with part of its launch cost;
the flush is torch's reduction kernel, not the harness's own; the launching thread is not pinned to a CPU near the GPU;
no idle check; without pynvml no clocks are read and nothing is flagged (the result says so in `clock_source`).
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import time
from typing import Callable

import torch

SCHEMA = "gpusqueeze.bench/1"

# NVML clock-event bits that make a sample "throttled" (src/gpu/clock_events.hpp, kThrottles): SW power cap, HW
# slowdown, SW thermal, HW thermal, HW power brake.
_THROTTLE_REASONS = 0x004 | 0x008 | 0x020 | 0x040 | 0x080
_THROTTLE_CLOCK_RATIO = 0.95


class _Clocks:
    """The SM clock and clock-event reasons of the GPU behind a torch device, through pynvml when it is installed."""

    def __init__(self, device: torch.device):
        self.handle = None
        self.source = "none (pynvml not installed: pip install nvidia-ml-py)"
        try:
            import pynvml  # noqa: PLC0415 - optional dependency
        except ImportError:
            return
        try:
            pynvml.nvmlInit()
            # torch's device index counts CUDA_VISIBLE_DEVICES' GPUs, NVML's all of them: match by UUID.
            uuid = str(getattr(torch.cuda.get_device_properties(device), "uuid", ""))
            self.handle = (pynvml.nvmlDeviceGetHandleByUUID("GPU-" + uuid) if uuid else
                           pynvml.nvmlDeviceGetHandleByIndex(device.index or 0))
            self.nvml = pynvml
            self.source = "nvml"
        except Exception as e:  # noqa: BLE001 - any NVML failure means: no clock readings, said in the result
            self.handle = None
            self.source = f"none (NVML: {e})"

    def read(self) -> tuple[int, int] | None:
        if self.handle is None:
            return None
        try:
            return (self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM),
                    self.nvml.nvmlDeviceGetCurrentClocksEventReasons(self.handle))
        except Exception:  # noqa: BLE001 - a failed reading is a missing reading
            return None

    def uuid(self) -> str:
        try:
            u = self.nvml.nvmlDeviceGetUUID(self.handle) if self.handle is not None else ""
            return u.decode() if isinstance(u, bytes) else u
        except Exception:  # noqa: BLE001
            return ""


def _flag_throttled(readings: list[tuple[int, int] | None]) -> list[int]:
    clocks = [r[0] for r in readings if r]
    top = max(clocks) if clocks else 0
    return [1 if r and ((r[1] & _THROTTLE_REASONS) or r[0] < _THROTTLE_CLOCK_RATIO * top) else 0 for r in readings]


def _median_ci_rel_half_width(sorted_ns: list[float]) -> float:
    n = len(sorted_ns)
    half = 1.959964 * math.sqrt(n) / 2
    lo = sorted_ns[max(0, math.floor(n / 2 - half))]
    hi = sorted_ns[min(n - 1, math.ceil(n / 2 + half))]
    med = sorted_ns[n // 2]
    return (hi - lo) / (2 * med) if med else 0.0


def _stop(samples: list[float], t0: float, min_samples: int, max_samples: int, max_seconds: float, target: float) -> str:
    n = len(samples)
    if n >= min_samples and n % 8 == 0 and _median_ci_rel_half_width(sorted(samples)) <= target:
        return "converged"
    if n >= max_samples:
        return "sample limit"
    if time.perf_counter() - t0 >= max_seconds and n >= min(min_samples, 5):
        return "time limit"
    return ""


def measure(name: str, fn: Callable[[], object], axes: dict[str, str] | None = None, bytes_per_launch: float = 0,
            flops_per_launch: float = 0, modes: tuple[str, ...] = ("cold", "batch"), min_samples: int = 20,
            max_samples: int = 100000, max_seconds: float = 2.0, target_rel_ci: float = 0.005,
            batch_target_ms: float = 2.0) -> dict:
    """Times `fn` (enqueues CUDA work on the current stream, must not synchronize) and returns one result entry."""
    stream = torch.cuda.current_stream()
    l2 = torch.cuda.get_device_properties(stream.device).L2_cache_size
    # Zeroed int32 words read by a max-reduction: the flush only reads, so it leaves no dirty lines behind.
    flush = torch.zeros(2 * max(l2, 1 << 20) // 4, dtype=torch.int32, device=stream.device)
    clocks = _Clocks(stream.device)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t_warm = time.perf_counter()
    i = 0
    while i < 10 or time.perf_counter() - t_warm < 0.05:
        fn()
        i += 1
    torch.cuda.synchronize()
    measurements = []
    for mode in modes:
        samples: list[float] = []
        readings: list[tuple[int, int] | None] = []
        per = 1
        if mode == "batch":
            start.record()
            for _ in range(8):
                fn()
            stop.record()
            stop.synchronize()
            one_ms = max(1e-4, start.elapsed_time(stop) / 8)
            per = int(min(10000, max(1, batch_target_ms / one_ms)))
        t0 = time.perf_counter()
        gpu_s = 0.0
        reason = ""
        while not reason:
            if mode == "cold":
                flush.max()
                torch.cuda._sleep(100_000)  # ~50 µs of spinning: the timed call is queued before the GPU reaches it
                start.record()
                fn()
                stop.record()
            else:
                start.record()
                for _ in range(per):
                    fn()
                stop.record()
            readings.append(clocks.read())  # the call is queued or running: the GPU is busy
            stop.synchronize()
            ms = start.elapsed_time(stop)
            gpu_s += ms * 1e-3
            samples.append(ms * 1e6 / per)
            reason = _stop(samples, t0, min_samples, max_samples, max_seconds, target_rel_ci)
        wall = time.perf_counter() - t0
        throttled = _flag_throttled(readings)
        measurements.append({
            "mode": mode, "launches_per_sample": per, "stop_reason": reason, "wall_s": wall,
            "overhead_ns_per_sample": (wall - gpu_s) * 1e9 / len(samples),
            "throttled_dropped": 0 < sum(throttled) <= len(samples) // 2,
            "samples_ns": samples, "throttled": throttled,
            "sm_clock_samples_mhz": [r[0] if r else 0 for r in readings], "clock_source": clocks.source,
        })
    return {"name": name, "axes": dict(axes or {}), "bytes_per_launch": float(bytes_per_launch), "items_per_launch": 0.0,
            "flops_per_launch": float(flops_per_launch), "peak_bytes_per_s": 0.0, "peak_name": "", "skipped": "",
            "measurements": measurements, "gpu_uuid": clocks.uuid()}


def write_run(results: list[dict], path: str, suite: str = "python") -> None:
    """Writes the results as a gpusqueeze.bench/1 file (derived figures are left to `gpusqueeze compare`)."""
    doc = {
        "schema": SCHEMA, "suite": suite, "created_at": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tool_version": "python",
        "gpu": {"name": torch.cuda.get_device_name(), "uuid": next((r.get("gpu_uuid", "") for r in results), "")},
        "fingerprint": "unavailable", "env_fields": {}, "set": "default", "results": results,
    }
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, path)
