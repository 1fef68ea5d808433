"""What the real-model scripts that compare before and after torch.profiler recordings share (batch_norm_ratio.py,
precision_ratio.py): a recording's events and its step count, and the pairs a traces folder holds."""
import glob
import gzip
import json
import os


def events_and_steps(path):
    """The trace events of a torch.profiler recording (.pt.json.gz) and how many ProfilerStep# ranges it has (the CPU
    ones: they appear again as GPU annotations; at least 1)."""
    events = json.load(gzip.open(path))["traceEvents"]
    steps = sum(1 for e in events if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith(
        "ProfilerStep#")) or sum(1 for e in events if e.get("cat") == "cpu_op" and str(e.get("name", "")).startswith(
            "ProfilerStep#")) or 1
    return events, steps


def pairs_in(root, names, patterns):
    """`names` if given, else every pair under root/torch whose before recording matches one of the glob `patterns`."""
    return names or sorted({os.path.basename(p).split("-")[0] for pat in patterns
                            for p in glob.glob(os.path.join(root, "torch", f"{pat}-before.pt.json.gz"))})
