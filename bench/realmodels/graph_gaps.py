"""The GPU's own gap between consecutive kernels of a replayed CUDA graph, read from torch.profiler recordings of the
graph variant ("after") of the real-model corpus's graphs pairs: for each recording, the median and mean of the idle
time between one kernel's end and the next one's start (gaps under 20 µs: the graph's own, not a step boundary).
What ReplayRates::graph_kernel_gap_ns comes from.

  python3 bench/realmodels/graph_gaps.py TRACE.pt.json.gz [...]"""
import gzip
import json
import statistics
import sys


def gaps(path):
    events = json.load(gzip.open(path) if path.endswith(".gz") else open(path))["traceEvents"]
    kernels = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"), key=lambda e: e["ts"])
    return [b["ts"] - (a["ts"] + a["dur"]) for a, b in zip(kernels, kernels[1:])
            if 0 <= b["ts"] - (a["ts"] + a["dur"]) < 20]


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print("| recording | gaps | median µs | mean µs |\n|---|---|---|---|")
    for p in sys.argv[1:]:
        g = gaps(p)
        print(f"| {p.split('/')[-1]} | {len(g)} | {statistics.median(g):.2f} | {statistics.mean(g):.2f} |")
