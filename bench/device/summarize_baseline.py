"""Summarizes two `gpusqueeze bench core` runs taken back to back: median drift per benchmark and the harness's own cost."""
import json
import sys

a, b = (json.load(open(p)) for p in sys.argv[1:3])


def rows(run):
    for r in run["results"]:
        label = r["name"] + "[" + ",".join(f"{k}={v}" for k, v in sorted(r["axes"].items())) + "]"
        for m in r["measurements"]:
            yield (label, m["mode"]), m


second = dict(rows(b))
print("| benchmark | mode | run 1 P50 ns | run 2 P50 ns | difference | harness overhead per sample |")
print("|---|---|---|---|---|---|")
worst = 0.0
for key, m in rows(a):
    n = second[key]
    diff = n["ns"]["p50"] / m["ns"]["p50"] - 1
    worst = max(worst, abs(diff))
    print(f"| {key[0]} | {key[1]}×{m['launches_per_sample']} | {m['ns']['p50']:.1f} | {n['ns']['p50']:.1f} | {100 * diff:+.2f}% "
          f"| {m['overhead_ns_per_sample'] / 1e3:.1f} µs |")
print(f"\nlargest |difference| between the two runs' medians: {100 * worst:.2f}%")
