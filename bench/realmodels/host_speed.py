"""The host's speed per CUDA call in the two recordings of each real-model pair (one program before and after its fix,
recorded minutes apart on one machine): the median cudaLaunchKernel call of each (`analyze --json`,
kernels.median_eager_launch_ns), their ratio, the ratio of the host factors the measured untraced steps imply for the
two recordings (accuracy.implied_costs: untraced host time over recorded), and `diff --fixes FIX before after`'s miss
of the after recording's step, with the before recording's host replayed as recorded and at the after recording's
speed where the launch ratio is past diff.hpp's kHostSpeedSpread (what `diff --fixes` does).
What kHostSpeedSpread comes from.

  python3 bench/realmodels/host_speed.py RESULTS_DIR TRACES_DIR [RESULTS_DIR TRACES_DIR ...] [--bin build/gpusqueeze]
RESULTS_DIR holds realmodels.json; TRACES_DIR holds torch/NAME-{before,after}.pt.json.gz and gsq/NAME-*.gsqt."""
import argparse
import json
import os
import subprocess

from accuracy import RECORDERS, analyze, implied_costs, whatif_of


def diff_fixes(binary, before, after, fix):
    p = subprocess.run([binary, "diff", "--json", "--fixes", fix, before, after], capture_output=True, text=True,
                       timeout=300)
    return json.loads(p.stdout) if p.returncode == 0 and p.stdout.strip() else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "gpusqueeze"))
    a = ap.parse_args()
    if len(a.dirs) % 2:
        ap.error("RESULTS_DIR and TRACES_DIR come in pairs")
    print("| pair | recorder | launch before µs | after µs | ratio | host factor after/before | fix | diff --fixes "
          "miss, host as recorded | host at the after's speed |\n|---|---|---|---|---|---|---|---|---|")
    for results, traces in zip(a.dirs[::2], a.dirs[1::2]):
        pairs = {k: v for k, v in json.load(open(os.path.join(results, "realmodels.json")))["pairs"].items()
                 if "error" not in v}
        costs = implied_costs(a.bin, traces, pairs)
        for name, p in pairs.items():
            fix = whatif_of(p)
            for rec, pattern in RECORDERS:
                paths = [os.path.join(traces, pattern.format(name, v)) for v in ("before", "after")]
                if not all(os.path.exists(x) for x in paths):
                    continue
                docs = [analyze(a.bin, x, "")[0] for x in paths]
                if not all(docs):
                    continue
                lb, la = (d["kernels"].get("median_eager_launch_ns", 0) / 1e3 for d in docs)
                fb, fa = (costs.get((name, v, rec), (None,))[0] for v in ("before", "after"))
                factor = f"{fa / fb:.2f}" if fa and fb else "-"
                ratio = f"{lb / la:.2f}" if la and lb else "-"
                miss_as_recorded = miss_speed = "-"
                if fix:
                    plain, _ = analyze(a.bin, paths[0], fix, "--recorder-cost", 0)
                    d = diff_fixes(a.bin, *paths, fix)
                    pred = d.get("prediction") if d else None
                    if pred and plain:
                        rows = [r for r in (plain.get("what_if") or {}).get("rows", [])
                                if set(r.get("fixes", "").split(",")) == set(fix.split(","))]
                        if rows:
                            miss_as_recorded = f"{rows[0]['step_p50_ns'] / pred['measured_step_p50_ns'] - 1:+.1%}"
                        if pred.get("before_host_scale", 1) != 1:
                            miss_speed = f"{pred['error']:+.1%} (× {pred['before_host_scale']:.2f})"
                print(f"| {name} | {rec} | {lb:.2f} | {la:.2f} | {ratio} | {factor} | {fix or '-'} | "
                      f"{miss_as_recorded} | {miss_speed} |", flush=True)


if __name__ == "__main__":
    main()
