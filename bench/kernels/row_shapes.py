#!/usr/bin/env python3
"""The row kernels on a grid of model shapes (rows × widths), side by side in one process with what a user would pick
instead: PyTorch eager, torch.compile, Liger-Kernel's Triton kernels (when `liger_kernel` imports) and a device copy of
the same bytes (y.copy_(x), cudaMemcpyAsync D2D) as the ceiling.

Rows 1-32 are decode batches, 128-32768 prefill and training; widths are hidden sizes (768 … 14336) and vocabulary
widths (32000 … 151936, and GPT-2's 50257, which is not a multiple of 16 bytes). Shapes over --max-elements are left
out (and listed as such). torch.compile is compiled once per operation and width and called at every row count, the
way a model meets new batch sizes (its default: the second row count recompiles with dynamic rows; one row stays
specialised). Liger has no fused softmax + dropout: that row compares with eager and torch.compile only. The
residual add + RMSNorm (add_rms_norm: residual += x, then RMSNorm of it) is held against eager's `x + r` and
F.rms_norm, torch.compile of the same, and Liger's fused add (LigerFusedAddRMSNormFunction); its copy moves twice x's
bytes, what it must move.

Timing as bench/kernels/torch_compare.py: each sample queues 10 calls behind a GPU spin, so the figure is GPU time;
--rounds rounds in a shuffled order; per shape the median of per-round ratios. `ours / best` is the best peer's time
over ours (above 1: ours is faster). Every output of ours is checked against eager first (max abs difference in the
JSON; softmax + dropout on the kept values, its masks are its own).

Writes --out (gpusqueeze.row_shapes/1) and prints one table per operation: rows down, widths across, ours / best.
"""
import argparse
import json
import pathlib
import random
import statistics
import sys
import time

import torch
import torch.nn.functional as F

_here = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(_here), str(_here.parents[1] / "python")]
import gpusqueeze_kernels as gk  # noqa: E402
from timing import median_us  # noqa: E402
from torch_compare import QUEUE_AHEAD_CYCLES, SmClock  # noqa: E402

ROWS = "1,8,32,128,1024,8192,32768"
WIDTHS = "768,2048,3000,4096,5120,8192,11008,14336,32000,50257,128256,151936"
OPS = ("layer_norm", "rms_norm", "add_rms_norm", "softmax", "softmax_dropout")


def liger_fns():
    """Liger-Kernel's forward functions by operation, or {} when it is not installed."""
    try:
        from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
        from liger_kernel.ops.layer_norm import LigerLayerNormFunction
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction
        from liger_kernel.ops.softmax import LigerSoftmaxFunction
    except ImportError as e:
        print(f"row_shapes: Liger-Kernel not available ({e}); comparing with eager and torch.compile only",
              file=sys.stderr)
        return {}
    return {"layer_norm": lambda x, w, b: LigerLayerNormFunction.apply(x, w, b, 1e-5),
            "rms_norm": lambda x, w, b: LigerRMSNormFunction.apply(x, w, 1e-5),
            "add_rms_norm": lambda x, w, r: LigerFusedAddRMSNormFunction.apply(x, r, w, 1e-5),
            "softmax": lambda x, w, b: LigerSoftmaxFunction.apply(x)}


def eager_fn(op, cols):
    if op == "layer_norm":
        return lambda x, w, b: F.layer_norm(x, (cols,), w, b, 1e-5)
    if op == "rms_norm":
        return lambda x, w, b: F.rms_norm(x, (cols,), w, 1e-5)
    if op == "add_rms_norm":  # b is the residual: the new residual and the norm of it, as a decoder layer computes them
        def add_norm(x, w, r):
            s = x + r
            return F.rms_norm(s, (cols,), w, 1e-5), s
        return add_norm
    if op == "softmax":
        return lambda x, w, b: torch.softmax(x, -1)
    return lambda x, w, b: F.dropout(torch.softmax(x, -1), 0.1, True)


def ours_fn(op):
    if op == "layer_norm":
        return lambda x, w, b: gk.layer_norm(x, w, b, 1e-5)
    if op == "rms_norm":
        return lambda x, w, b: gk.rms_norm(x, w, 1e-5)
    if op == "add_rms_norm":  # b is the residual, updated in place
        return lambda x, w, b: gk.add_rms_norm(x, b, w, 1e-5)
    if op == "softmax":
        return lambda x, w, b: gk.softmax(x)
    return lambda x, w, b: gk.softmax_dropout(x, 0.1, seed=7)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default=ROWS)
    ap.add_argument("--widths", default=WIDTHS)
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--max-elements", type=int, default=1 << 28, help="leave out shapes larger than this")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--budget-s", type=float, default=480, help="stop starting new shapes after this long")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    dt = getattr(torch, args.dtype)
    dev = torch.device("cuda")
    torch.manual_seed(0)
    props = torch.cuda.get_device_properties(dev)
    clock = SmClock(props)
    liger = liger_fns()
    t0 = time.time()
    result = {"schema": "gpusqueeze.row_shapes/1", "gpu": props.name, "uuid": str(getattr(props, "uuid", "")),
              "torch": torch.__version__, "dtype": args.dtype, "library": gk.library_path(),
              "liger": bool(liger), "queue_ahead_cycles": QUEUE_AHEAD_CYCLES, "shapes": [], "left_out": []}
    rows_list = [int(r) for r in args.rows.split(",")]
    # Width by width, every operation at each (a run cut short by --budget-s loses the widths listed last).
    for cols in [int(c) for c in args.widths.split(",")]:
        for op in args.ops.split(","):
            compiled = None
            if not args.no_compile:
                compiled = torch.compile(eager_fn(op, cols))
            w = torch.randn(cols, device=dev, dtype=dt) * 0.5 + 1
            b = torch.randn(cols, device=dev, dtype=dt)
            for rows in rows_list:
                if rows * cols > args.max_elements or time.time() - t0 > args.budget_s:
                    result["left_out"].append({"op": op, "rows": rows, "cols": cols,
                                               "why": "over --max-elements" if rows * cols > args.max_elements
                                               else "past --budget-s"})
                    continue
                x = torch.randn(rows, cols, device=dev, dtype=dt)
                # The copy moves the bytes the operation must: twice x's for the residual add (two in, two out).
                copy_src = x if op != "add_rms_norm" else torch.empty(2, rows, cols, device=dev, dtype=dt)
                y_copy = torch.empty_like(copy_src)
                ours, eager = ours_fn(op), eager_fn(op, cols)
                if op == "add_rms_norm":  # the residual stream takes b's place; ours adds x into it on every call
                    b = torch.randn(rows, cols, device=dev, dtype=dt)
                streams = 4 if op == "add_rms_norm" else 2  # x and residual read, y and residual written
                entry = {"op": op, "rows": rows, "cols": cols, "bytes": streams * x.numel() * x.element_size()}
                with torch.no_grad():
                    got = ours(x, w, b).float() if op != "add_rms_norm" else None
                    if op == "add_rms_norm":
                        want, want_r = eager(x, w, b)
                        r = b.clone()
                        got = ours(x, w, r).float()
                        entry["residual_max_abs_diff"] = (r.float() - want_r.float()).abs().max().item()
                        entry["max_abs_diff_vs_eager"] = (got - want.float()).abs().max().item()
                    elif op == "softmax_dropout":
                        kept = got != 0
                        want = torch.softmax(x.float(), -1) / 0.9
                        entry["kept_fraction"] = kept.float().mean().item()
                        entry["max_abs_diff_vs_eager"] = (got[kept] - want[kept]).abs().max().item()
                    else:
                        entry["max_abs_diff_vs_eager"] = (got - eager(x, w, b).float()).abs().max().item()
                contenders = {"copy": lambda: y_copy.copy_(copy_src), "ours": lambda: ours(x, w, b),
                              "eager": lambda: eager(x, w, b)}
                if compiled is not None:
                    contenders["compile"] = lambda: compiled(x, w, b)
                if op in liger:
                    contenders["liger"] = lambda: liger[op](x, w, b)
                names = list(contenders)
                per_round = {k: [] for k in names}
                with torch.no_grad():
                    for r in range(args.rounds):
                        order = list(names)
                        random.Random(r).shuffle(order)
                        for k in order:
                            if k not in names:
                                continue
                            try:
                                before = clock.mhz()
                                per_round[k].append(median_us(contenders[k], args.reps,
                                                              queue_ahead_cycles=QUEUE_AHEAD_CYCLES))
                                entry.setdefault("sm_clock_mhz", {}).setdefault(k, []).append([before, clock.mhz()])
                            except Exception as e:  # noqa: BLE001 - a peer that fails is a result, ours is not
                                if k in ("copy", "ours", "eager"):
                                    raise
                                entry[k + "_error"] = str(e)[:200]
                                names.remove(k)
                                per_round.pop(k)
                for k, t in per_round.items():
                    entry[k + "_us"] = statistics.median(t)
                    entry[k + "_rounds_us"] = t
                peers = [k for k in ("compile", "liger") if k in per_round]
                if peers:
                    ratios = [min(per_round[p][i] for p in peers) / per_round["ours"][i] for i in range(args.rounds)]
                    entry["ours_vs_best"] = statistics.median(ratios)
                    entry["best_peer"] = min(peers, key=lambda p: entry[p + "_us"])
                entry["ours_vs_copy"] = entry["copy_us"] / entry["ours_us"]
                result["shapes"].append(entry)
                print(f"{op:16} {rows:>6}×{cols:<6} ours {entry['ours_us']:8.1f} µs  copy {entry['copy_us']:8.1f}  "
                      + "  ".join(f"{p} {entry[p + '_us']:8.1f}" for p in ("eager", "compile", "liger")
                                  if p + "_us" in entry)
                      + (f"  ours/best {entry['ours_vs_best']:.3f}" if "ours_vs_best" in entry else ""),
                      file=sys.stderr, flush=True)
                del x, y_copy, copy_src
            torch.cuda.empty_cache()
    result["wall_s"] = time.time() - t0
    print(f"# Row kernels on model shapes, {props.name}, {args.dtype}, torch {torch.__version__}"
          f"{', Liger-Kernel' if liger else ''}: best peer's time / ours (above 1.000: ours faster), "
          f"medians of {args.rounds} shuffled rounds\n")
    widths = [int(c) for c in args.widths.split(",")]
    for op in args.ops.split(","):
        print(f"\n## {op}\n\n| rows | " + " | ".join(map(str, widths)) + " |\n|---|" + "---|" * len(widths))
        for rows in rows_list:
            cells = []
            for cols in widths:
                e = next((s for s in result["shapes"] if s["op"] == op and s["rows"] == rows and s["cols"] == cols),
                         None)
                cells.append("–" if e is None or "ours_vs_best" not in e else
                             (f"**{e['ours_vs_best']:.2f}**" if e["ours_vs_best"] < 1 else f"{e['ours_vs_best']:.2f}"))
            print(f"| {rows} | " + " | ".join(cells) + " |")
    behind = [s for s in result["shapes"] if s.get("ours_vs_best", 1) < 1]
    big = [s for s in result["shapes"] if s["bytes"] >= 8 << 20]
    print(f"\nbehind the best peer: {len(behind)} of {len(result['shapes'])} shapes; "
          f"under 0.90× the copy at ≥ 8 MiB: {sum(s['ours_vs_copy'] < 0.9 for s in big)} of {len(big)}")
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
