#!/usr/bin/env python3
"""`gpusqueeze fleet --prometheus` at fleet scale, on SYNTHETIC data (issue goal: 1,000 GPUs analysed through PromQL
in under 10 s, under 500 MB, planted outliers found and no false ones).

  fleet_scale.py --bin build/gpusqueeze [--nodes 125] [--gpus-per-node 8] [--interval 15] [--runs 3]
                 [--out result.json] [--workdir DIR] [--keep] [--seed 1] [--short-jobs N --short-job-samples B]

1. Writes an OpenMetrics file (with timestamps, ending in `# EOF`) of what `gpusqueeze exporter` would have exposed on
   NODES nodes of GPUS_PER_NODE H200s, scraped every INTERVAL seconds: every series the live exporter shows on an
   H200 without NVLink (tests/fixtures/h200-exporter-gemm.txt: info, utilisation, memory, clocks, the nine
   clock-event reasons, temperature, power, energy, PCIe, ECC, remaps, GPM ratios, XIDs) plus the exporter's own
   series per node, with the labels the exporter and a Prometheus scrape give (gpu, uuid, model, hostname, job,
   instance). Per-process series are left out (they come and go with the jobs' pids).
   The samples span from 60 minutes before the generation to PAD seconds after it, so that the `--since 1h` window
   of a run made up to PAD seconds later is a full hour of samples (instant queries are made at "now"; samples
   after "now" are simply not seen).
2. `promtool tsdb create-blocks-from openmetrics` turns it into TSDB blocks; a Prometheus serves them (no scraping).
3. Runs `gpusqueeze fleet --prometheus URL --since 1h --json` RUNS times under /usr/bin/time -v (wall time, peak RSS),
   checks that exactly the planted outliers are named (see PLANTED), and times each of its PromQL queries on their
   own (the queries are the binary's own: captured by a stand-in endpoint that records them).
4. For each signal, the robust z of every GPU computed here from the same PromQL answers with the floors of
   src/fleet/fields.hpp, to show how far the noise stays from the 3.5 threshold.

Noise model (per GPU, per sample; a node's eight GPUs share its job's busy/idle timeline):
  - jobs: 5 % of nodes idle for the hour; 30 % of the rest have one idle gap of 2–8 minutes (a job change); every
    node dips to low utilisation for one sample about every 10 minutes (a checkpoint).
  - under load: utilisation 0.85–1.0; SM clock 1980 MHz at most, a per-GPU offset of N(0, 0.2 %) and per-sample noise
    of N(0, 0.5 %), quantised to 15 MHz; temperature a per-GPU base of U(55, 68) °C ± N(0, 1); power 520–690 W;
    sw_power_cap active with a per-GPU probability U(0, 4 %) per sample (clock 3–8 % lower then); a thermal
    slowdown with probability 0.1 % per sample.
  - idle: utilisation 0–0.3, clock 345–1410 MHz, 20 °C cooler, ~120 W, gpu_idle active, PCIe at gen 1.
  - counters flat: XIDs 0, uncorrectable ECC 0, a few GPUs with a constant number of corrected ECC errors or PCIe
    replays; energy rising with power.
Extra experiment (--short-jobs N): N more nodes idle for the hour but for one job of B scrapes, with the same noise;
the result then says, for each false or watched GPU, how many samples under load it had.
Standard library only. Exit 0 when the planted outliers and nothing else are named, 1 otherwise, 2 on a setup error.
"""
import argparse
import hashlib
import http.server
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

MODEL = "NVIDIA H200"
DRIVER, OLD_DRIVER = "580.159.04", "550.54.15"
PCI_BUS = ["00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0",
           "00000000:9A:00.0", "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0"]
REASONS = ["gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
           "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "display_clock_setting"]
MEM_TOTAL, MEM_RESERVED = 150754820096, 644939776

# The planted outliers: (node, GPUs or None for all, what, expected fields, expected severity). Nodes are 1-based.
PLANTED = [
    (10, [3], "power cap 500 W, clock 5 % lower, at the power cap ~45 % of the time",
     {"power_limit_w", "clock_under_load_mhz", "power_cap_fraction"}, "warn"),
    (20, [5], "PCIe link at gen4 x8", {"pcie_gen_max", "pcie_width"}, "warn"),
    (30, [1], "two XID 119 events (GSP timeout) during the hour", {"xid_events"}, "fail"),
    (40, None, f"driver {OLD_DRIVER} on the whole node", {"driver"}, "warn"),
    (50, [7], "hot: 84 °C base and a thermal slowdown ~30 % of the time under load",
     {"temperature_under_load_c", "thermal_fraction"}, "warn"),
]

# Floors of the signals (src/fleet/fields.hpp), for the margin table only: (abs_floor, rel_floor, bad side).
SIGNAL_FLOORS = {"clock_under_load_mhz": (0, 0.01, "low"), "power_cap_fraction": (0.03, 0, "high"),
                 "thermal_fraction": (0.03, 0, "high"), "temperature_under_load_c": (2, 0, "high")}


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def g6(v):
    return f"{v:.6g}"


# --- the synthetic fleet ----------------------------------------------------------------------------------------------

class Gpu:
    __slots__ = ("node", "index", "uuid", "host", "labels", "driver", "power_limit", "gen_max", "width",
                 "busy", "util", "mem_util", "clock", "temp", "power", "cap", "thermal", "energy", "mem_used",
                 "xid", "last_xid", "ecc_corr", "replays", "slowdown_c")


def make_fleet(a, times, rng):
    n_samples = len(times)
    planted = {(node, g): p for p in PLANTED for node in [p[0]] for g in (p[1] or range(a.gpus_per_node))}
    gpus = []
    idle_nodes = set(rng.sample([n for n in range(1, a.nodes + 1) if n not in {p[0] for p in PLANTED}],
                                max(1, a.nodes // 20)))
    rest = [n for n in range(1, a.nodes + 1) if n not in idle_nodes and n not in {p[0] for p in PLANTED}]
    short_nodes = set(rng.sample(rest, a.short_jobs)) if a.short_jobs else set()
    for node in range(1, a.nodes + 1):
        host = f"node-{node:03d}"
        # The node's job timeline: busy (True) or idle per sample.
        if node in idle_nodes:
            busy = [False] * n_samples
        elif node in short_nodes:  # idle but for one short job of --short-job-samples samples inside the hour
            busy = [False] * n_samples
            start = rng.randrange(int(600 / a.interval), int(3300 / a.interval) - a.short_job_samples)
            for k in range(start, start + a.short_job_samples):
                busy[k] = True
        else:
            busy = [True] * n_samples
            if rng.random() < 0.3:  # one job change: an idle gap of 2–8 minutes
                gap = int(rng.uniform(120, 480) / a.interval)
                start = rng.randrange(0, max(1, n_samples - gap))
                for k in range(start, start + gap):
                    busy[k] = False
            phase = rng.randrange(0, max(1, int(600 / a.interval)))
            for k in range(phase, n_samples, max(1, int(600 / a.interval))):  # a checkpoint every ~10 minutes
                busy[k] = False
        for g in range(a.gpus_per_node):
            p = planted.get((node, g))
            what = p[2] if p else ""
            x = Gpu()
            x.node, x.index, x.host = node, g, host
            x.uuid = "GPU-%08x-%04x-%04x-%04x-%012x" % (rng.getrandbits(32), rng.getrandbits(16),
                                                         rng.getrandbits(16), rng.getrandbits(16), rng.getrandbits(48))
            x.labels = (f'gpu="{g}",uuid="{x.uuid}",model="{MODEL}",hostname="{host}",'
                        f'instance="{host}:9835",job="gpusqueeze"')
            x.driver = OLD_DRIVER if what.startswith("driver") else DRIVER
            x.power_limit = 500 if what.startswith("power cap") else 700
            x.gen_max, x.width = (4, 8) if what.startswith("PCIe") else (5, 16)
            x.busy = busy
            clock_offset = rng.gauss(0, 0.002)
            cap_p = 0.45 if what.startswith("power cap") else rng.uniform(0, 0.04)
            thermal_p = 0.30 if what.startswith("hot") else 0.001
            temp_base = 84.0 if what.startswith("hot") else rng.uniform(55, 68)
            clock_scale = 0.95 if what.startswith("power cap") else 1.0
            x.slowdown_c = 89
            x.util, x.mem_util, x.clock, x.temp, x.power, x.cap, x.thermal, x.energy, x.mem_used = \
                [], [], [], [], [], [], [], [], []
            energy = rng.uniform(1e8, 5e8)  # joules since the driver loaded
            mem_job = rng.uniform(110e9, 140e9)
            for k in range(n_samples):
                if busy[k]:
                    util = rng.uniform(0.85, 1.0)
                    cap = rng.random() < cap_p
                    thermal = rng.random() < thermal_p
                    c = 1980 * clock_scale * (1 + clock_offset + rng.gauss(0, 0.005))
                    if cap:
                        c *= 1 - rng.uniform(0.03, 0.08)
                    if thermal:
                        c *= 1 - rng.uniform(0.02, 0.06)
                    c = min(1980.0, round(c / 15) * 15)
                    t = round(temp_base + rng.gauss(0, 1))
                    pw = min(x.power_limit - rng.uniform(0, 5), rng.uniform(520, 690)) if not cap else \
                        x.power_limit - rng.uniform(0, 3)
                    mem = mem_job
                else:
                    util = rng.uniform(0, 0.3)
                    cap = thermal = False
                    c = round(rng.uniform(345, 1410) / 15) * 15
                    t = round(temp_base - 20 + rng.gauss(0, 1))
                    pw = rng.uniform(110, 130)
                    mem = mem_job if rng.random() < 0.5 else rng.uniform(0.5e9, 2e9)
                energy += pw * a.interval
                x.util.append(round(util, 2))
                x.mem_util.append(round(util * rng.uniform(0.3, 0.6), 2))
                x.clock.append(c)
                x.temp.append(t)
                x.power.append(pw)
                x.cap.append(cap)
                x.thermal.append(thermal)
                x.energy.append(energy)
                x.mem_used.append(int(mem))
            # Counters: XIDs only on the planted GPU (two events during the hour), flat elsewhere.
            x.xid = [0] * n_samples
            x.last_xid = None
            if what.startswith("two XID"):
                k1, k2 = int(n_samples * 0.55), int(n_samples * 0.8)
                x.xid = [0 if k < k1 else 1 if k < k2 else 2 for k in range(n_samples)]
                x.last_xid = (k1, 119)
            x.ecc_corr = rng.choice([0] * 9 + [rng.randrange(1, 40)])
            x.replays = rng.choice([0] * 9 + [rng.randrange(1, 5)])
            gpus.append(x)
    return gpus, idle_nodes, short_nodes


def write_openmetrics(path, a, times, gpus):
    """Family by family (OpenMetrics keeps a family's samples together), series by series in time order."""
    ts = [str(t) for t in times]
    n = len(times)
    out = open(path, "w", buffering=1 << 22)
    lines = 0

    def family(name, typ, help_text):
        out.write(f"# TYPE {name} {typ}\n# HELP {name} {help_text}\n")

    def series(name, labels, values):
        nonlocal lines
        prefix = f"{name}{{{labels}}} "
        out.write("".join(f"{prefix}{v} {t}\n" for v, t in zip(values, ts)))
        lines += n

    def const(v):
        return [v] * n

    family("gsq_gpu_info", "gauge", "GPU identity (always 1); driver and PCI bus id as labels")
    for x in gpus:
        series("gsq_gpu_info", f'{x.labels},driver="{x.driver}",pci_bus_id="{PCI_BUS[x.index % 8]}"', const("1"))
    def per_gpu_families(table):  # each (name, type, help, values of a GPU): one family, a series per GPU
        for name, typ, help_text, values in table:
            family(name, typ, help_text)
            for x in gpus:
                series(name, x.labels, values(x))

    per_gpu = [
        ("gsq_gpu_utilization_ratio", "gauge", "utilisation", lambda x: [g6(v) for v in x.util]),
        ("gsq_gpu_memory_utilization_ratio", "gauge", "memory utilisation", lambda x: [g6(v) for v in x.mem_util]),
        ("gsq_gpu_memory_total_bytes", "gauge", "Device memory", lambda x: const(str(MEM_TOTAL))),
        ("gsq_gpu_memory_used_bytes", "gauge", "Device memory allocated", lambda x: [str(v) for v in x.mem_used]),
        ("gsq_gpu_memory_reserved_bytes", "gauge", "reserved", lambda x: const(str(MEM_RESERVED))),
        ("gsq_gpu_memory_free_bytes", "gauge", "free",
         lambda x: [str(MEM_TOTAL - v - MEM_RESERVED) for v in x.mem_used]),
        ("gsq_gpu_sm_clock_hertz", "gauge", "SM clock", lambda x: [str(int(v * 1e6)) for v in x.clock]),
        ("gsq_gpu_sm_clock_max_hertz", "gauge", "Highest SM clock", lambda x: const("1980000000")),
        ("gsq_gpu_memory_clock_hertz", "gauge", "Memory clock", lambda x: const("3201000000")),
    ]
    per_gpu_families(per_gpu)
    family("gsq_gpu_clock_event_active", "gauge", "1 while NVML reports this clock-event (throttle) reason, else 0")
    for x in gpus:
        for r in REASONS:
            if r == "gpu_idle":
                v = ["0" if b else "1" for b in x.busy]
            elif r == "sw_power_cap":
                v = ["1" if c else "0" for c in x.cap]
            elif r == "sw_thermal_slowdown":
                v = ["1" if c else "0" for c in x.thermal]
            else:
                v = const("0")
            series("gsq_gpu_clock_event_active", f'{x.labels},reason="{r}"', v)
    per_gpu = [
        ("gsq_gpu_temperature_celsius", "gauge", "GPU core temperature", lambda x: [str(v) for v in x.temp]),
        ("gsq_gpu_temperature_slowdown_margin_celsius", "gauge", "margin",
         lambda x: [str(x.slowdown_c - v) for v in x.temp]),
        ("gsq_gpu_power_watts", "gauge", "Power draw", lambda x: [f"{v:.3f}" for v in x.power]),
        ("gsq_gpu_power_limit_watts", "gauge", "Enforced power limit", lambda x: const(str(x.power_limit))),
        ("gsq_gpu_pcie_link_generation", "gauge", "Current PCIe link generation",
         lambda x: [str(x.gen_max) if b else "1" for b in x.busy]),
        ("gsq_gpu_pcie_link_generation_max", "gauge", "Highest PCIe generation", lambda x: const(str(x.gen_max))),
        ("gsq_gpu_pcie_link_width", "gauge", "Current PCIe link width", lambda x: const(str(x.width))),
        ("gsq_gpu_pcie_link_width_max", "gauge", "Widest PCIe link", lambda x: const("16")),
        ("gsq_gpu_bar1_used_bytes", "gauge", "BAR1 memory mapped", lambda x: const("1703936")),
        ("gsq_gpu_mig_enabled", "gauge", "1 while MIG mode is on", lambda x: const("0")),
        ("gsq_gpu_row_remap_pending", "gauge", "1 when a row remap waits", lambda x: const("0")),
    ]
    per_gpu_families(per_gpu)
    family("gsq_gpu_pcie_replays", "counter", "PCIe replays")
    for x in gpus:
        series("gsq_gpu_pcie_replays_total", x.labels, const(str(x.replays)))
    family("gsq_gpu_ecc_errors", "counter", "ECC errors")
    for x in gpus:
        for typ, scope, v in (("corrected", "volatile", 0), ("uncorrected", "volatile", 0),
                              ("corrected", "aggregate", x.ecc_corr), ("uncorrected", "aggregate", 0)):
            series("gsq_gpu_ecc_errors_total", f'{x.labels},type="{typ}",scope="{scope}"', const(str(v)))
    family("gsq_gpu_remapped_rows", "gauge", "Memory rows remapped")
    for x in gpus:
        for cause in ("correctable", "uncorrectable"):
            series("gsq_gpu_remapped_rows", f'{x.labels},cause="{cause}"', const("0"))
    family("gsq_gpu_energy_joules", "counter", "Energy used since the driver loaded")
    for x in gpus:
        series("gsq_gpu_energy_joules_total", x.labels, [f"{v:.3f}" for v in x.energy])
    for name, f in (("gsq_gpu_pcie_tx_bytes_per_second", 2e8), ("gsq_gpu_pcie_rx_bytes_per_second", 5e8),
                    ("gsq_gpu_nvlink_tx_bytes_per_second", 0), ("gsq_gpu_nvlink_rx_bytes_per_second", 0)):
        family(name, "gauge", "throughput")
        for x in gpus:
            series(name, x.labels, [str(int(u * f)) for u in x.util])
    for name, f in (("gsq_gpu_sm_active_ratio", 0.8), ("gsq_gpu_sm_occupancy_ratio", 0.35),
                    ("gsq_gpu_dram_bandwidth_utilization_ratio", 0.45)):
        family(name, "gauge", "GPM")
        for x in gpus:
            series(name, x.labels, [g6(round(u * f, 4)) for u in x.util])
    family("gsq_gpu_pipe_active_ratio", "gauge", "GPM pipes")
    for x in gpus:
        for pipe, f in (("tensor", 0.55), ("fp16", 0.02), ("fp32", 0.08), ("fp64", 0.0)):
            series("gsq_gpu_pipe_active_ratio", f'{x.labels},pipe="{pipe}"', [g6(round(u * f, 4)) for u in x.util])
    family("gsq_gpu_xid_events", "counter", "Critical XID events the driver reported since the exporter started")
    for x in gpus:
        series("gsq_gpu_xid_events_total", x.labels, [str(v) for v in x.xid])
    family("gsq_gpu_last_xid", "gauge", "Code of the newest XID event")
    for x in gpus:
        if x.last_xid:
            k1, code = x.last_xid
            prefix = f"gsq_gpu_last_xid{{{x.labels}}} "
            out.write("".join(f"{prefix}{code} {t}\n" for t in ts[k1:]))
            lines += n - k1
    # The exporter's own series, one set per node.
    hosts = sorted({x.host for x in gpus})
    gpn = a.gpus_per_node
    for name, typ, v in (("gsq_exporter_build_info", "gauge", lambda k: "1"),
                         ("gsq_exporter_gpus", "gauge", lambda k: str(gpn)),
                         ("gsq_exporter_collection_duration_seconds", "gauge", lambda k: "0.0123"),
                         ("gsq_exporter_last_collection_timestamp_seconds", "gauge", lambda k: str(times[k] - 1)),
                         ("gsq_exporter_collections", "counter", lambda k: str(100000 + k * a.interval)),
                         ("gsq_exporter_collection_errors", "counter", lambda k: "0"),
                         ("gsq_exporter_scrapes", "counter", lambda k: str(20000 + k)),
                         ("gsq_exporter_connections_cut", "counter", lambda k: "0")):
        family(name, typ, "exporter self")
        sample = name + ("_total" if typ == "counter" else "")
        extra = ',version="0.9.0"' if name == "gsq_exporter_build_info" else ""
        for h in hosts:
            series(sample, f'hostname="{h}",instance="{h}:9835",job="gpusqueeze"{extra}', [v(k) for k in range(n)])
    out.write("# EOF\n")
    out.close()
    return lines


# --- running ------------------------------------------------------------------------------------------------------

def rss_hwm_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None


def time_v(argv, log_path):
    """Runs argv under /usr/bin/time -v; returns (returncode, stdout, stderr, wall_s, max_rss_mb)."""
    tfile = str(log_path) + ".time"
    t0 = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-v", "-o", tfile, *argv], capture_output=True, text=True)
    wall = time.monotonic() - t0
    text = Path(tfile).read_text()
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    e = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", text)
    elapsed = (int(e.group(1) or 0) * 3600 + int(e.group(2)) * 60 + float(e.group(3))) if e else wall
    return p.returncode, p.stdout, p.stderr, elapsed, (int(m.group(1)) / 1024 if m else None)


def capture_queries(binary, since):
    """The binary's own PromQL queries: asked of a stand-in endpoint that records them and answers with nothing."""
    seen = []

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).get("query", [""])[0]
            seen.append(q)
            body = b'{"status":"success","data":{"resultType":"vector","result":[]}}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        subprocess.run([str(binary), "fleet", "--prometheus", f"http://127.0.0.1:{srv.server_address[1]}",
                        "--since", since, "--json"], capture_output=True, timeout=60)
    finally:
        srv.shutdown()
    return seen


def prom_get(port, query, timeout=120):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.load(r)


def robust_margins(port, queries):
    """For each signal: median, robust scale (with the field's floor), the largest z among GPUs on the bad side."""
    # Each signal's query, recognised by the series it reads (the binary's order and query count may change).
    marks = {"clock_under_load_mhz": "gsq_gpu_sm_clock_hertz", "power_cap_fraction": 'reason="sw_power_cap"',
             "thermal_fraction": "sw_thermal_slowdown", "temperature_under_load_c": "gsq_gpu_temperature_celsius"}
    out = {}
    for f, mark in marks.items():
        q = next((q for q in queries if mark in q), None)
        if q is None:
            continue
        res = prom_get(port, q)["data"]["result"]
        vals = {s["metric"].get("uuid"): float(s["value"][1]) for s in res}
        v = sorted(vals.values())
        if len(v) < 3:
            continue
        med = statistics.median(v)
        mad = statistics.median([abs(x - med) for x in v])
        absf, relf, bad = SIGNAL_FLOORS[f]
        scale = max(1.4826 * mad, absf, relf * abs(med))
        zs = {u: (x - med) / scale * (1 if bad == "high" else -1) for u, x in vals.items()}
        top = sorted(zs.items(), key=lambda kv: -kv[1])[:4]
        out[f] = {"gpus": len(v), "median": med, "mad_scale": 1.4826 * mad, "scale": scale,
                  "top_bad_side_z": [(u, round(z, 2), vals[u]) for u, z in top]}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--nodes", type=int, default=125)
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--interval", type=int, default=15, help="scrape interval of the synthetic data, seconds")
    ap.add_argument("--pad", type=int, default=900, help="seconds of samples after the generation time")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--short-jobs", type=int, default=0,
                    help="extra experiment: this many nodes idle for the hour but for one short job")
    ap.add_argument("--short-job-samples", type=int, default=2, help="samples (scrapes) the short jobs last")
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--page", help="also write the fleet's page (`fleet -o PAGE`) after the timed runs")
    ap.add_argument("--out", help="result JSON; the last run's gpusqueeze.fleet/1 output goes beside it (fleet.json)")
    a = ap.parse_args()
    binary = Path(a.bin).resolve()
    for tool in ("prometheus", "promtool"):
        if not shutil.which(tool):
            print(f"{tool} is not installed (Debian package prometheus)")
            return 2
    if not Path("/usr/bin/time").exists():
        print("/usr/bin/time is not installed (Debian package time)")
        return 2
    if max(p[0] for p in PLANTED) > a.nodes:
        print(f"--nodes {a.nodes}: the planted outliers need at least {max(p[0] for p in PLANTED)} nodes")
        return 2
    work = Path(a.workdir) if a.workdir else Path(tempfile.mkdtemp(prefix="gsq-fleet-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    result = {"binary": str(binary), "binary_mtime": time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                                    time.gmtime(binary.stat().st_mtime)),
              "binary_sha256": hashlib.sha256(binary.read_bytes()).hexdigest(),
              "nodes": a.nodes, "gpus_per_node": a.gpus_per_node, "gpus": a.nodes * a.gpus_per_node,
              "interval_s": a.interval, "seed": a.seed, "cpu_count": os.cpu_count(),
              "cpu_model": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
                                "?"),
              "prometheus": subprocess.run(["prometheus", "--version"], capture_output=True,
                                           text=True).stdout.splitlines()[0]}
    prom = None
    try:
        rng = random.Random(a.seed)
        t_gen = int(time.time()) // a.interval * a.interval
        times = list(range(t_gen - 3600, t_gen + a.pad + 1, a.interval))
        log(f"generating {a.nodes} nodes × {a.gpus_per_node} GPUs, {len(times)} samples each "
            f"({times[0]} … {times[-1]}, every {a.interval} s)")
        t0 = time.monotonic()
        gpus, idle_nodes, short_nodes = make_fleet(a, times, rng)
        om = work / "fleet.om"
        n_lines = write_openmetrics(om, a, times, gpus)
        result["generate_s"] = round(time.monotonic() - t0, 1)
        result["samples"] = n_lines
        result["series"] = None
        result["openmetrics_bytes"] = om.stat().st_size
        result["idle_nodes"] = sorted(f"node-{n:03d}" for n in idle_nodes)
        result["short_job_nodes"] = sorted(f"node-{n:03d}" for n in short_nodes)
        result["short_job_samples"] = a.short_job_samples if short_nodes else 0
        log(f"{n_lines:,} samples, {om.stat().st_size / 1e9:.2f} GB of OpenMetrics in {result['generate_s']} s")
        tsdb = work / "tsdb"
        t0 = time.monotonic()
        rc, _, err, wall, rss = time_v(["promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", str(om),
                                        str(tsdb)], work / "promtool")
        if rc != 0:
            print(f"promtool failed ({rc}):\n{err[-3000:]}")
            return 2
        result["promtool_s"], result["promtool_rss_mb"] = round(wall, 1), round(rss or 0, 1)
        result["tsdb_bytes"] = sum(f.stat().st_size for f in tsdb.rglob("*") if f.is_file())
        result["blocks"] = sorted(p.name for p in tsdb.iterdir() if p.is_dir())
        log(f"promtool: {wall:.1f} s, {rss:.0f} MB peak; TSDB {result['tsdb_bytes'] / 1e6:.0f} MB in "
            f"{len(result['blocks'])} blocks")
        if not a.keep:
            om.unlink()
        port = free_port()
        (work / "prometheus.yml").write_text("global:\n  scrape_interval: 1m\nscrape_configs: []\n")
        plog = open(work / "prometheus.log", "wb")
        prom = subprocess.Popen(["prometheus", f"--config.file={work / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={tsdb}", "--storage.tsdb.retention.time=3650d",
                                 f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=plog, stderr=subprocess.STDOUT, start_new_session=True)
        t0 = time.monotonic()
        while True:
            if prom.poll() is not None:
                print("prometheus exited:\n" + (work / "prometheus.log").read_text()[-3000:])
                return 2
            try:
                r = prom_get(port, "count(gsq_gpu_info)", timeout=5)
                if r["data"]["result"] and int(float(r["data"]["result"][0]["value"][1])) == len(gpus):
                    break
            except OSError:
                pass
            if time.monotonic() - t0 > 120:
                print("prometheus never answered with every GPU:\n" + (work / "prometheus.log").read_text()[-3000:])
                return 2
            time.sleep(0.5)
        result["prometheus_ready_s"] = round(time.monotonic() - t0, 1)
        r = prom_get(port, 'count({__name__=~"gsq_.+"})')
        result["series"] = int(float(r["data"]["result"][0]["value"][1]))
        lag = time.time() - t_gen
        result["query_lag_after_generation_s"] = round(lag, 1)
        log(f"prometheus ready in {result['prometheus_ready_s']} s; {result['series']:,} series; querying "
            f"{lag:.0f} s after the generation time (samples run {a.pad} s past it)")
        if lag > a.pad:
            print(f"the run comes {lag:.0f} s after generation, past the {a.pad} s of padding: the 1 h window would "
                  f"not be full; use a larger --pad")
            return 2

        # The fleet runs.
        url = f"http://127.0.0.1:{port}"
        argv = [str(binary), "fleet", "--prometheus", url, "--since", "1h", "--json"]
        runs = []
        last = None
        for i in range(a.runs):
            rc, out, err, wall, rss = time_v(argv, work / f"fleet-{i}")
            runs.append({"exit": rc, "wall_s": round(wall, 3), "max_rss_mb": round(rss or 0, 1)})
            log(f"fleet run {i + 1}: exit {rc}, {wall:.2f} s, {rss:.1f} MB peak RSS")
            if rc not in (0, 1):
                print(f"fleet failed ({rc}): {err[-3000:]}")
                return 2
            last = json.loads(out)
            if a.out:
                (Path(a.out).parent / "fleet.json").write_text(out)
        if a.page:  # the fleet's page (index.html, report.md, report.json), untimed
            subprocess.run([*argv[:-1], "-o", a.page], capture_output=True, timeout=60)
            log(f"page: {a.page}/index.html")
        result["fleet_command"] = " ".join(["gpusqueeze", *argv[1:3], "http://127.0.0.1:PORT", *argv[4:]])
        result["runs"] = runs
        result["prometheus_rss_hwm_mb"] = rss_hwm_mb(prom.pid)

        # Per-query times, the binary's own queries.
        queries = capture_queries(binary, "1h")
        per_query = []
        for q in queries:
            t0 = time.monotonic()
            body = prom_get(port, q)
            per_query.append({"query": q, "seconds": round(time.monotonic() - t0, 3),
                              "series": len(body["data"]["result"])})
        result["queries"] = per_query
        result["queries_total_s"] = round(sum(q["seconds"] for q in per_query), 3)
        result["signal_margins"] = robust_margins(port, queries)

        # The judgement.
        uuid_of = {(x.node, x.index): x.uuid for x in gpus}
        expected = {}
        for node, idx, what, fields, severity in PLANTED:
            us = frozenset(uuid_of[(node, g)] for g in (idx or range(a.gpus_per_node)))
            expected[us] = (f"node-{node:03d}", what, fields, severity)
        got = {}
        for o in last["outliers"]:
            us = frozenset(g["uuid"] for g in o["gpus"])
            got[us] = o
        found, wrong, missing, false_ones = [], [], [], []
        for us, (host, what, fields, severity) in expected.items():
            o = got.get(us)
            if o is None:
                missing.append({"node": host, "what": what, "gpus": len(us)})
                continue
            f = {d["field"] for d in o["differences"]}
            entry = {"node": host, "what": what, "subject": o["subject"], "severity": o["severity"],
                     "fields": sorted(f), "differences": [
                         {k: d.get(k) for k in ("field", "value", "group_value", "robust_z")} for d in o["differences"]]}
            (found if f == fields and o["severity"] == severity else wrong).append(
                entry | ({} if f == fields and o["severity"] == severity else
                         {"expected_fields": sorted(fields), "expected_severity": severity}))
        for us, o in got.items():
            if us not in expected:
                false_ones.append({"subject": o["subject"], "severity": o["severity"], "differences": [
                    {k: d.get(k) for k in ("field", "value", "group_value", "robust_z")} for d in o["differences"]]})
        r = prom_get(port, f"count_over_time((gsq_gpu_utilization_ratio > 0.5)[1h:{a.interval}s])")
        under_load = {x["metric"].get("uuid"): int(float(x["value"][1])) for x in r["data"]["result"]}

        def samples_of(o):
            return {g["uuid"]: under_load.get(g["uuid"], 0) for g in o["gpus"]}

        for entry, o in [(e, got[us]) for us in got if us not in expected for e in false_ones
                         if e["subject"] == got[us]["subject"]]:
            entry["under_load_samples"] = samples_of(o)
        result["outcome"] = {
            "exit": runs[-1]["exit"], "gpus_seen": last["gpus"], "outlier_lines": len(last["outliers"]),
            "outlier_gpus": last["outlier_gpus"], "found": found, "wrong": wrong, "missing": missing,
            "false": false_ones,
            "watch": [{"subject": w["subject"], "under_load_samples": samples_of(w), "differences": [
                {k: d.get(k) for k in ("field", "value", "group_value", "robust_z")} for d in w["differences"]]}
                for w in last["watch"]],
            "notes": last["notes"], "groups": [{k: g[k] for k in ("model", "gpus", "config", "median", "notes")}
                                               for g in last["groups"]]}
        ok = not wrong and not missing and not false_ones and runs[-1]["exit"] == 1
        result["pass"] = ok
        best = min(r["wall_s"] for r in runs)
        log(f"fleet: {len(found)}/{len(expected)} planted outliers found, {len(wrong)} with other fields, "
            f"{len(missing)} missing, {len(false_ones)} false, {len(last['watch'])} watched; wall "
            f"{[r['wall_s'] for r in runs]} s (best {best:.2f}), peak RSS {max(r['max_rss_mb'] for r in runs):.1f} MB")
        for w in wrong + false_ones + missing:
            log(f"  NOT AS PLANTED: {json.dumps(w)}")
        return 0 if ok else 1
    finally:
        if prom and prom.poll() is None:
            os.killpg(prom.pid, signal.SIGTERM)
            try:
                prom.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(prom.pid, signal.SIGKILL)
                prom.wait()
        if a.out:
            Path(a.out).write_text(json.dumps(result, indent=1) + "\n")
        if a.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
