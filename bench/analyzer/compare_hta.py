"""Analyzer speed, side by side on one file: `gpusqueeze analyze --json` vs Holistic Trace Analysis computing the same
breakdowns (temporal: busy/idle; idle-time causes; kernel breakdown). Wall time and peak RSS of each, in separate
processes, on this machine. Usage: compare_hta.py TRACE.json GPUSQUEEZE_BINARY"""
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

trace, binary = sys.argv[1], sys.argv[2]
size = os.path.getsize(trace)
n_events = sum(1 for _ in open(trace)) - 2  # one event per line, as make_big_trace.py writes it

HTA_SCRIPT = r"""
import os, shutil, sys, tempfile, time
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
d = tempfile.mkdtemp()
os.symlink(os.path.abspath(sys.argv[1]), os.path.join(d, "rank-0.json"))
ta = TraceAnalysis(trace_dir=d)
t_load = time.perf_counter()
ta.get_temporal_breakdown(visualize=False)
ta.get_gpu_kernel_breakdown(visualize=False)
idle = "ok"
try:
    ta.get_idle_time_breakdown(visualize=False)
except AssertionError as e:  # HTA 0.5 asserts idle <= kernel time per stream; PyTorch 2.11 traces can break it
    idle = "AssertionError in get_idle_time_breakdown"
t_done = time.perf_counter()
print(f"{t_load - t0:.3f} {t_done - t0:.3f} {idle}", file=sys.stderr)
"""


def run(cmd):
    t = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t
    rss_kb = int(p.stderr.strip().splitlines()[-1])
    return wall, rss_kb * 1024, p


g_wall, g_rss, g = run([binary, "analyze", "--json", trace])
assert g.returncode == 0, g.stderr
verdict = json.loads(g.stdout)["verdict"]["class"]
with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
    f.write(HTA_SCRIPT)
h_wall, h_rss, h = run([sys.executable, f.name, trace])
assert h.returncode == 0, h.stderr[-2000:]
# The script's own line: "LOAD_S TOTAL_S IDLE_STATUS" (the last stderr line is /usr/bin/time's RSS).
hta_note = next(l.split(" ", 2) for l in reversed(h.stderr.splitlines()) if len(l.split(" ", 2)) == 3 and l[:1].isdigit())
print(f"trace: {trace}, {size / 1e6:.1f} MB, {n_events} events")
print("| tool | wall s | events/s | peak RSS MB | RSS / file size |")
print("|---|---|---|---|---|")
print(f"| gpusqueeze analyze (verdict {verdict}) | {g_wall:.2f} | {n_events / g_wall:,.0f} | {g_rss / 1e6:.0f} | {g_rss / size:.2f} |")
print(f"| HTA 0.5 (load + temporal + kernel + idle breakdowns) | {h_wall:.2f} | {n_events / h_wall:,.0f} | {h_rss / 1e6:.0f} | {h_rss / size:.2f} |")
print(f"\nHTA: load {hta_note[0]} s of {hta_note[1]} s; idle-time breakdown: {hta_note[2]}")
print(f"\nspeed ratio (HTA wall / gpusqueeze wall): {h_wall / g_wall:.1f}x")
