"""The analyzer's figures against Holistic Trace Analysis's on the same traces: GPU busy fraction (HTA's temporal
breakdown: compute + non-compute time over the window) and who holds the critical path (HTA's critical_path_analysis
over the ProfilerStep# annotations: the share of its path's time bound by the CPU — cpu_bound and kernel launch
overhead — against the GPU; ours: host work + CPU ops against waiting on kernels and copies). One row per trace; a
column says why a figure is missing (HTA raised, no ProfilerStep annotation, our replay's fidelity guard).
Usage (HTA in its own virtualenv: pip install holistictraceanalysis "pandas<3"):
  HTA_DISABLE_NS_ROUNDING=1 /tmp/hta/bin/python bench/analyzer/hta_fidelity.py build/gpusqueeze TRACE... > table.md"""
import contextlib
import json
import os
import signal
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

warnings.filterwarnings("ignore")
import logging  # noqa: E402

logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis  # noqa: E402


class TooLong(Exception):  # a trace HTA takes too long over
    pass


def hta_figures(path, limit_s=300):
    d = tempfile.mkdtemp()

    def alarm(*_):
        raise TooLong(f"over {limit_s} s")

    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(limit_s)
    try:
        with contextlib.redirect_stdout(sys.stderr):  # HTA prints its summaries
            return _hta_figures(path, d)
    except Exception as e:  # noqa: BLE001
        return {"why": f"HTA {type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''}"}
    finally:
        signal.alarm(0)
        shutil.rmtree(d, ignore_errors=True)


def _hta_figures(path, d):
    ext = ".json.gz" if path.endswith(".gz") else ".json"
    os.symlink(os.path.abspath(path), os.path.join(d, "rank-0" + ext))
    t0 = time.perf_counter()
    ta = TraceAnalysis(trace_dir=d)
    out = {"load_s": time.perf_counter() - t0}
    tb = ta.get_temporal_breakdown(visualize=False)
    row = tb.iloc[0]
    out["busy"] = (row["compute_time_pctg"] + row["non_compute_time_pctg"]) / 100
    try:
        cp, ok = ta.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=None)
        if not ok:
            out["cp_why"] = "critical_path_analysis returned failure"
        else:
            s = cp.summary()
            s = s[s.index != ""]  # dependency edges carry no time of their own
            total = s.sum()
            cpu = s.get("cpu_bound", 0) + s.get("gpu_kernel_launch_overhead", 0)
            out["cp_cpu"] = cpu / total if total else None
    except Exception as e:  # noqa: BLE001 — report why, per trace
        out["cp_why"] = f"{type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''}"
    return out


def ours(binary, path):
    r = subprocess.run([binary, "analyze", "--json", path], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        return {"why": r.stderr.strip().splitlines()[-1][:80] if r.stderr.strip() else f"exit {r.returncode}"}
    j = json.loads(r.stdout)
    b, cp = j["breakdown"], j.get("critical_path") or {}
    out = {"busy": b["gpu_busy_ns"] / b["wall_ns"] if b.get("wall_ns") else None,
           "verdict": (j.get("verdict") or {}).get("class")}
    if cp.get("ok"):
        out["cp_cpu"] = cp["host_share"] + cp["cpu_ops_share"]
        out["fidelity"] = cp.get("fidelity")
    else:
        out["cp_why"] = (cp.get("why") or cp.get("model", "not replayed"))[:110]
    return out


def pct(x):
    return "–" if x is None else f"{100 * x:.1f}%"


def main():
    binary, traces = sys.argv[1], sys.argv[2:]
    print("| trace | GPU busy: ours | HTA | CPU share of the critical path: ours | HTA | our verdict | note |")
    print("|---|---|---|---|---|---|---|")
    for t in traces:
        o, h = ours(binary, t), hta_figures(t)
        notes = [x for x in (o.get("why"), h.get("why"), o.get("cp_why") and f"ours: {o['cp_why']}",
                             h.get("cp_why") and f"HTA: {h['cp_why']}") if x]
        if o.get("fidelity") is not None and abs(o["fidelity"] - 1) > 0.1:
            notes.append(f"replay fidelity {o['fidelity']:.2f} (the verdict falls back to idle-time rules)")
        print(f"| {os.path.basename(t)} | {pct(o.get('busy'))} | {pct(h.get('busy'))} | {pct(o.get('cp_cpu'))} | "
              f"{pct(h.get('cp_cpu'))} | {o.get('verdict', '–')} | {'; '.join(notes)} |", flush=True)


if __name__ == "__main__":
    main()
