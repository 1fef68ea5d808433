#!/usr/bin/env python3
"""Tracer overhead, side by side in one call: each workload untraced, under `gpusqueeze trace` and under
torch.profiler, interleaved (the order rotates every round), median wall time of the measured region per mode.

    overhead.py GPUSQUEEZE OUTDIR [--rounds 7]

Also counts the kernels and copies launched inside the measured region as each tracer saw them (ours: the calls
made inside the NVTX range "gsq-region" and the GPU work they launched; torch.profiler: its kernel and gpu_memcpy
events), and runs `--cpu-api activity` and `--cpu-api none` on the launch-bound workload to price CUPTI's RUNTIME
records and the CPU side against the default callbacks. Writes OUTDIR/overhead.json and prints a markdown table.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.join(HERE, "workloads.py")


def run(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    line = [l for l in p.stdout.splitlines() if l.startswith("{")][-1]
    return json.loads(line)["region_s"], wall


def gsq_counts(gsq, trace, chrome):
    subprocess.run([gsq, "trace", "export", "--chrome", trace, "-o", chrome], check=True, capture_output=True)
    ev = json.load(open(chrome))["traceEvents"]
    region = [e for e in ev if e.get("cat") == "user_annotation" and e.get("name") == "gsq-region"]
    if not region:
        return None
    r0, r1 = region[0]["ts"], region[0]["ts"] + region[0]["dur"]
    calls = {e["args"]["correlation"] for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver") and r0 <= e["ts"] <= r1}
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy") and e["args"]["correlation"] in calls]
    return {"kernels": sum(e["cat"] == "kernel" for e in gpu), "copies": sum(e["cat"] == "gpu_memcpy" for e in gpu)}


def torch_counts(chrome):
    ev = json.load(open(chrome))["traceEvents"]
    return {"kernels": sum(e.get("cat") == "kernel" for e in ev), "copies": sum(e.get("cat") == "gpu_memcpy" for e in ev)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("gpusqueeze")
    p.add_argument("outdir")
    p.add_argument("--rounds", type=int, default=7)
    a = p.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    py = sys.executable
    modes = {
        "untraced": lambda w, tag: [py, WORK, w, "plain"],
        "gpusqueeze": lambda w, tag: [a.gpusqueeze, "trace", "-o", f"{a.outdir}/{w}-{tag}.gsqt", "--", py, WORK, w, "plain"],
        "torch.profiler": lambda w, tag: [py, WORK, w, "torchprof", "--export", f"{a.outdir}/{w}-{tag}.torch.json"],
    }
    plan = [(w, m) for w in ("gpu", "launch", "host") for m in modes]
    # What the CPU side costs: CUPTI's RUNTIME records of every call, and no CPU side at all (GPU records only).
    for cpu in ("activity", "none"):
        mode = f"gpusqueeze --cpu-api {cpu}"
        plan.append(("launch", mode))
        modes[mode] = lambda w, tag, cpu=cpu: [a.gpusqueeze, "trace", "--cpu-api", cpu, "-o",
                                               f"{a.outdir}/{w}-{tag}.gsqt", "--", py, WORK, w, "plain"]
    region = {k: [] for k in plan}
    wall = {k: [] for k in plan}
    for r in range(a.rounds):
        order = plan[r % len(plan):] + plan[:r % len(plan)]
        for w, m in order:
            tag = m.split()[0].replace(".", "") + ("-" + m.split()[-1] if "--cpu-api" in m else "") + f"-r{r}"
            reg, wl = run(modes[m](w, tag))
            region[(w, m)].append(reg)
            wall[(w, m)].append(wl)
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr, flush=True)
    results = []
    for w in ("gpu", "launch", "host"):
        base = statistics.median(region[(w, "untraced")])
        base_wall = statistics.median(wall[(w, "untraced")])
        for m in [m for (ww, m) in plan if ww == w]:
            med = statistics.median(region[(w, m)])
            row = {"workload": w, "mode": m, "region_median_s": med, "region_s": region[(w, m)],
                   "overhead": med / base - 1, "process_wall_median_s": statistics.median(wall[(w, m)]),
                   "process_overhead": statistics.median(wall[(w, m)]) / base_wall - 1}
            if m == "gpusqueeze":
                row["counts"] = gsq_counts(a.gpusqueeze, f"{a.outdir}/{w}-gpusqueeze-r0.gsqt", f"{a.outdir}/{w}-gsq.json")
            if m == "torch.profiler":
                row["counts"] = torch_counts(f"{a.outdir}/{w}-torchprofiler-r0.torch.json")
            results.append(row)
    for w in ("gpu", "launch", "host"):
        ours = next(r for r in results if r["workload"] == w and r["mode"] == "gpusqueeze")
        theirs = next(r for r in results if r["workload"] == w and r["mode"] == "torch.profiler")
        ours["overhead_vs_torch_profiler"] = ours["overhead"] / theirs["overhead"] if theirs["overhead"] > 0 else None
    json.dump({"schema": "gpusqueeze.trace-overhead/1", "rounds": a.rounds, "results": results},
              open(f"{a.outdir}/overhead.json", "w"), indent=2)
    print("| workload | mode | region median (s) | overhead | process wall median (s) | kernels | copies |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in results:
        c = r.get("counts") or {}
        print(f"| {r['workload']} | {r['mode']} | {r['region_median_s']:.4f} | {100 * r['overhead']:+.2f}% | "
              f"{r['process_wall_median_s']:.2f} | {c.get('kernels', '')} | {c.get('copies', '')} |")
    for r in results:
        if r["mode"] == "gpusqueeze" and r.get("overhead_vs_torch_profiler") is not None:
            print(f"{r['workload']}: gpusqueeze overhead / torch.profiler overhead = {r['overhead_vs_torch_profiler']:.3f}")


if __name__ == "__main__":
    main()
