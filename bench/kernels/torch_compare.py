#!/usr/bin/env python3
"""Side by side on one GPU, in one process: gpusqueeze's kernels (through python/gpusqueeze_kernels.py), PyTorch eager
and torch.compile of the same functions, and a plain device-to-device copy of the same bytes (y.copy_(x), which is
cudaMemcpyAsync D2D) as the ceiling. Inputs are 128 Mi elements (256 MiB of bf16, four times the H200's L2), so
every call reads HBM. Timing: 5 warmup calls, then --reps samples of 10 calls between two CUDA events; medians.
Each sample starts behind a GPU spin of --queue-ahead-cycles (default 4M, about 2 ms on an H200) so all ten calls are
queued before the first event fires: the figures are GPU time, the same for every contender, not host launch cost
(--queue-ahead-cycles 0 measures the way earlier results did, with the first call's host cost inside each sample).
--rounds N times the four contenders of each shape N times, in a new order each round (a seeded shuffle, written to
the JSON as `orders`), so drift between them reaches each alike and no contender always runs after the same one: on
the H200 ours at LayerNorm 16384 ran 1-3% slower after a copy or eager than after torch.compile's kernel (until it
read its rows L2 evict-last, bench/results/2026-12-04-h200-shuffled/), and the rotating order used before (ours
always after the copy but in the round it opened) charged that to ours nearly every round. It gives ours / compile
as the median of the per-round ratios with a bootstrap 95% interval: a gap of a few tenths of a percent is then a
measured difference or a tie, not a guess.

With more than one round the JSON also has, per contender and round, the SM clock NVML reported just before and
just after its measurement (`sm_clock_mhz`, read-only; null where NVML cannot be loaded), to tell a clock that is
still ramping after the contender before from a kernel that is slower.

Prints a markdown table per kernel and writes --out JSON (gpusqueeze.torch_compare/1). Also checks each of our
outputs against eager torch (max abs difference) before timing it.
"""
import argparse
import ctypes
import json
import pathlib
import random
import statistics
import sys
import time

import torch
import torch.nn.functional as F

# Beside this file when installed (share/gpusqueeze holds the kernels module and timing.py too); python/ in a checkout.
_here = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(_here), str(_here.parents[1] / "python")]
import gpusqueeze_kernels as gk  # noqa: E402
from timing import median_us  # noqa: E402


QUEUE_AHEAD_CYCLES = 4_000_000
NVML_CLOCK_SM = 1


class SmClock:
    """The SM clock of the GPU behind torch device `props`, read through NVML (nothing is changed); mhz() is None
    where NVML or the device cannot be found."""

    def __init__(self, props):
        self.lib, self.handle = None, None
        for name in ("libnvidia-ml.so.1", "/usr/local/nvidia/lib64/libnvidia-ml.so.1"):
            try:
                lib = ctypes.CDLL(name)
                break
            except OSError:
                lib = None
        uuid = str(getattr(props, "uuid", ""))
        uuid = uuid if uuid.startswith("GPU-") else "GPU-" + uuid
        handle = ctypes.c_void_p()
        try:
            found = lib and lib.nvmlInit_v2() == 0 and \
                lib.nvmlDeviceGetHandleByUUID(uuid.encode(), ctypes.byref(handle)) == 0
            if found:
                self.lib, self.handle = lib, handle
        except AttributeError:  # an NVML without these entry points: no clocks
            pass

    def mhz(self):
        if self.handle is None:
            return None
        value = ctypes.c_uint()
        try:
            ok = self.lib.nvmlDeviceGetClockInfo(self.handle, NVML_CLOCK_SM, ctypes.byref(value)) == 0
        except (AttributeError, OSError):  # a reading that fails is a missing reading, never a failed contender
            return None
        return value.value if ok else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--widths", default="256,1024,4096,16384,65536")
    ap.add_argument("--elements", type=int, default=128 * 2**20)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=1,
                    help="time the contenders of each shape this many rounds, in a shuffled order each round "
                         "(medians over rounds; ours / compile per round with a bootstrap 95%% interval)")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--compile-budget-s", type=float, default=300, help="stop compiling new shapes after this long")
    ap.add_argument("--queue-ahead-cycles", type=int, default=QUEUE_AHEAD_CYCLES,
                    help="GPU spin before each timed sample, in clock cycles (0: none)")
    ap.add_argument("--out", default="")
    args = ap.parse_args()

    def time_ms(fn):
        return median_us(fn, args.reps, queue_ahead_cycles=args.queue_ahead_cycles) / 1000

    def measure(entry, x, y_copy, ours, eager, to_compile=None):
        """Times four contenders for --rounds rounds: a copy of x's bytes into y_copy, ours(), eager(x) and, while
        the compile budget lasts, torch.compile of to_compile (default: eager) on x. With more than one round the
        order is shuffled each round (seeded by the round), so drift in clocks or temperature reaches each alike and
        what one contender leaves behind does not always land on the same next one. Fills NAME_ms (median over
        rounds) and NAME_gbps (entry["bytes"] over it); with more than one round also the per-round times, orders
        and SM clocks and ours / compile per round (compile time over ours: above 1 ours is faster) with the median
        and a bootstrap 95% interval of that median."""
        contenders = {"copy": lambda: y_copy.copy_(x), "ours": ours, "eager": lambda: eager(x)}
        if not args.no_compile and time.time() - t0 < args.compile_budget_s:
            torch._dynamo.reset()
            compiled = torch.compile(to_compile or eager, dynamic=False)
            contenders["compile"] = lambda: compiled(x)
        names = list(contenders)
        per_round = {k: [] for k in names}
        clocks = {k: [] for k in names}
        orders = []
        for r in range(args.rounds):
            order = list(names)  # a contender that fails leaves `names`, not the order this round walks
            if args.rounds > 1:
                random.Random(r).shuffle(order)
            orders.append(order)
            for k in order:
                try:
                    before = sm_clock.mhz()
                    per_round[k].append(time_ms(contenders[k]))
                    clocks[k].append([before, sm_clock.mhz()])
                except Exception as e:  # noqa: BLE001 - a failed compile is a result, not a crash
                    if k != "compile":  # copy, ours and eager failing is a broken run: stop with their error
                        raise
                    entry[k + "_error"] = str(e)[:200]
                    per_round.pop(k)
                    clocks.pop(k)
                    names.remove(k)
        for k, t in per_round.items():
            entry[k + "_ms"] = statistics.median(t)
            entry[k + "_gbps"] = entry["bytes"] / entry[k + "_ms"] / 1e6
        if args.rounds > 1:
            entry["rounds_ms"] = per_round
            entry["orders"] = orders
            entry["sm_clock_mhz"] = clocks
            if "compile" in per_round:
                ratios = [c / o for c, o in zip(per_round["compile"], per_round["ours"])]
                rng = random.Random(0)
                boot = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(2000))
                entry["ours_vs_compile"] = {"median": statistics.median(ratios), "ci95": [boot[50], boot[1949]],
                                            "per_round": ratios}

    dt = getattr(torch, args.dtype)
    dev = torch.device("cuda")
    torch.manual_seed(0)
    t0 = time.time()
    props = torch.cuda.get_device_properties(dev)
    sm_clock = SmClock(props)
    result = {"schema": "gpusqueeze.torch_compare/1", "gpu": props.name, "torch": torch.__version__,
              "dtype": args.dtype, "elements": args.elements, "library": gk.library_path(),
              "queue_ahead_cycles": args.queue_ahead_cycles, "rows": []}

    def fns(op, x, w, b):
        cols = x.shape[-1]
        if op == "layer_norm":
            return (lambda: gk.layer_norm(x, w, b, 1e-5)), (lambda t: F.layer_norm(t, (cols,), w, b, 1e-5))
        if op == "rms_norm":
            return (lambda: gk.rms_norm(x, w, 1e-5)), (lambda t: F.rms_norm(t, (cols,), w, 1e-5))
        if op == "softmax":
            return (lambda: gk.softmax(x)), (lambda t: torch.softmax(t, -1))
        if op == "softmax_dropout":
            return (lambda: gk.softmax_dropout(x, 0.1, seed=7)), (lambda t: F.dropout(torch.softmax(t, -1), 0.1, True))
        raise ValueError(op)

    rows_out = []
    for op in ["layer_norm", "rms_norm", "softmax", "softmax_dropout"]:
        for cols in [int(c) for c in args.widths.split(",")]:
            rows = args.elements // cols
            x = torch.randn(rows, cols, device=dev, dtype=dt)
            w = torch.randn(cols, device=dev, dtype=dt) * 0.5 + 1
            b = torch.randn(cols, device=dev, dtype=dt)
            ours, ref = fns(op, x, w, b)
            bytes_moved = 2 * x.numel() * x.element_size()
            y_copy = torch.empty_like(x)
            entry = {"op": op, "rows": rows, "cols": cols, "bytes": bytes_moved}
            if op != "softmax_dropout":
                diff = (ours().float() - ref(x).float()).abs().max().item()
                entry["max_abs_diff_vs_eager"] = diff
            else:  # masks differ (Philox vs torch's generator): compare where both kept, and the kept fraction
                yo, yr = ours().float(), torch.softmax(x.float(), -1) / 0.9
                kept = yo != 0
                entry["kept_fraction"] = kept.float().mean().item()
                entry["max_abs_diff_vs_eager"] = (yo[kept] - yr[kept]).abs().max().item()
            measure(entry, x, y_copy, ours, ref)
            rows_out.append(entry)
            print(f"{op:16} {cols:>6}: ours {entry['ours_gbps']:.0f} GB/s, eager {entry['eager_gbps']:.0f}, "
                  f"compile {entry.get('compile_gbps', float('nan')):.0f}, copy {entry['copy_gbps']:.0f}",
                  file=sys.stderr, flush=True)
            del x, y_copy
            torch.cuda.empty_cache()

    for shape in [(32, 256, 56, 56), (8, 64, 224, 224), (64, 512, 28, 28)]:
        x = torch.randn(*shape, device=dev, dtype=dt)
        y_copy = torch.empty_like(x)
        bytes_moved = 2 * x.numel() * x.element_size()
        assert torch.equal(gk.nchw_to_nhwc(x), x.contiguous(memory_format=torch.channels_last))
        assert torch.equal(gk.nhwc_to_nchw(gk.nchw_to_nhwc(x)), x)
        entry = {"op": "nchw_to_nhwc", "shape": list(shape), "bytes": bytes_moved}
        measure(entry, x, y_copy, lambda: gk.nchw_to_nhwc(x), lambda t: t.contiguous(memory_format=torch.channels_last),
                to_compile=lambda t: t.contiguous(memory_format=torch.channels_last) + 0)
        if "compile_ms" in entry or "compile_error" in entry:
            entry["compile_note"] = "compiled function adds + 0 (a bare layout change compiles to the eager call)"
        rows_out.append(entry)

    result["rows"] = rows_out
    result["wall_s"] = time.time() - t0
    rounds = f", {args.rounds} rounds in shuffled order, medians over rounds" if args.rounds > 1 else ""
    print(f"# gpusqueeze kernels vs PyTorch {torch.__version__} on {props.name} ({args.dtype}, medians of "
          f"{args.reps} CUDA-event timings{rounds}; GB/s = read + write bytes / time)\n")
    print("| kernel | shape | ours GB/s | × copy | eager GB/s | compile GB/s | ours / eager | ours / compile | "
          "copy GB/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for e in rows_out:
        shape = f"{e['rows']}×{e['cols']}" if "cols" in e else "×".join(map(str, e["shape"]))
        comp = e.get("compile_gbps")
        vs = "–"
        if comp:
            vs = f"{e['ours_gbps'] / comp:.3f}"
            if "ours_vs_compile" in e:  # the per-round ratio's median and its 95% interval
                r = e["ours_vs_compile"]
                vs = f"{r['median']:.3f} [{r['ci95'][0]:.3f}–{r['ci95'][1]:.3f}]"
        print(f"| {e['op']} | {shape} | {e['ours_gbps']:.0f} | {e['ours_gbps'] / e['copy_gbps']:.3f} | "
              f"{e['eager_gbps']:.0f} | {f'{comp:.0f}' if comp else '–'} | {e['ours_gbps'] / e['eager_gbps']:.2f} | "
              f"{vs} | {e['copy_gbps']:.0f} |")
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
