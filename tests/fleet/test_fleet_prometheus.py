#!/usr/bin/env python3
"""`gpusqueeze fleet --prometheus` end to end, against a real Prometheus scraping real exporters.

Twelve `gpusqueeze exporter --snapshot` processes serve copies of the recorded H200 snapshot
(tests/fixtures/h200-snapshot.json), each with its own hostname (node-01 … node-12) and GPU uuid, all under load
(utilisation 90 %, SM clock 1980 MHz, 60 °C, no clock-event reason) so that the "under load" signal queries return
series too. Four of them are altered:

  node-01  PCIe link at gen4 x8 (pcie_gen_max 4, pcie_gen_current 4, pcie_width_current 8)
  node-02  power limit 500 W instead of 700 W (power_enforced_limit_w, power_limit_w)
  node-03  XID events rising by one per collection, the newest XID 94 (replay_counters: fleet counts XIDs within
           --since, as `increase()`)
  node-04  an older driver (host.driver_version 550.54.15)

A Prometheus (temporary TSDB) scrapes all twelve every second, a second one only the eight unaltered exporters (node-05
… node-12). Once every target of both is up with a few samples:

  - `fleet --prometheus URL --since 2m --json` exits 1 and names exactly those four GPUs (by uuid), each with the
    field that differs (pcie_gen_max and pcie_width; power_limit_w; xid_events as a failure; driver), one outlier
    line each, nothing watched, one group of 12 H200s;
  - the second Prometheus (no altered exporter) gives exit 0 and no outlier, nothing watched;
  - so does the first one with `--selector 'hostname!~"node-0[1-4]"'` (the eight unaltered exporters);
  - an unreachable endpoint, `--since 5x` and an https URL each exit 2 with a message saying what is wrong.

Every process started here runs in a session of its own and is killed (its whole process group) on the way out,
whatever happened. Usage: test_fleet_prometheus.py GPUSQUEEZE_BINARY [--keep]
Exit 0 passed, 1 failed, 77 skipped (prometheus missing: Debian package prometheus).
"""

import copy
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests/fixtures/h200-snapshot.json"
SKIP = 77
NODES = 12
SCRAPE_S = 1
MIN_SAMPLES = 14  # per target before the fleet is asked: signals under load need 10 points (fleet.hpp kMinLoadSamples)
STARTUP_DEADLINE_S = 25
RUN_TIMEOUT_S = 30
OLD_DRIVER = "550.54.15"


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


class CheckFailed(Exception):
    pass


def fail(message):
    raise CheckFailed(message)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def served_port(procs, name, p, log, within_s=20):
    """The port an exporter started with `--listen 127.0.0.1:0` bound: it logs `serving http://HOST:PORT/metrics`.
    (Asking for port 0 leaves no window in which another process takes a port picked here.)"""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        m = re.search(r"serving http://127\.0\.0\.1:(\d+)/metrics", Path(log).read_text(errors="replace"))
        if m:
            return int(m.group(1))
        if p.poll() is not None:
            fail(f"{name} exited early (code {p.returncode}); its log:\n{tail(log)}")
        time.sleep(0.05)
    fail(f"{name} printed no `serving` line in {within_s} s; its log:\n{tail(log)}")


def start_prometheus(procs, name, argv_for_port, attempts=3):
    """Starts Prometheus on a port picked here. Prometheus cannot report a port it chose, so a port another process
    took between the pick and the bind (CTest runs tests side by side) is retried with a fresh one."""
    for _ in range(attempts):
        port = free_port()
        p = procs.start(name, argv_for_port(port))
        log = procs.workdir / f"{name}.log"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = Path(log).read_text(errors="replace")
            if "Server is ready to receive web requests" in text:
                return port
            if p.poll() is not None:
                break
            time.sleep(0.1)
        if p.poll() is None:
            return port  # running; wait_for_samples judges it
        procs.procs.pop()
        if "address already in use" not in Path(log).read_text(errors="replace"):
            fail(f"{name} exited early (code {p.returncode}); its log:\n{tail(log)}")
    fail(f"{name}: every port tried was taken")


def hostname(n):
    return f"node-{n:02d}"


def uuid_of(n):
    return f"GPU-f1ee7000-0000-4000-8000-{n:012d}"


# --- the fleet ------------------------------------------------------------------------------------------------------

# What each altered node changes, and what `fleet` must say about it: {field: severity-or-None}.
ALTERED = {
    1: {"what": "PCIe gen4 x8", "fields": {"pcie_gen_max", "pcie_width"}, "severity": "warn"},
    2: {"what": "power limit 500 W", "fields": {"power_limit_w"}, "severity": "warn"},
    3: {"what": "rising XIDs (last 94)", "fields": {"xid_events"}, "severity": "fail"},
    4: {"what": f"driver {OLD_DRIVER}", "fields": {"driver"}, "severity": "warn"},
}


def snapshot_for(base, n):
    s = copy.deepcopy(base)
    s["host"]["hostname"] = hostname(n)
    g = s["gpus"][0]
    g["uuid"] = uuid_of(n)
    g["serial"] = f"16540240{n:05d}"
    # Under load, as a training node would be: the signal queries (utilisation > 0.5) then have series to average.
    g["utilization_gpu_pct"] = 90
    g["utilization_memory_pct"] = 40
    g["sm_clock_mhz"] = 1980
    g["temperature_c"] = 60
    g["power_draw_w"] = 600.0
    g["clock_event_reasons_mask"] = 0
    if n == 1:
        g["pcie_gen_max"] = 4
        g["pcie_gen_current"] = 4
        g["pcie_width_current"] = 8
    elif n == 2:
        g["power_enforced_limit_w"] = 500.0
        g["power_limit_w"] = 500.0
        g["power_draw_w"] = 495.0
    elif n == 3:
        s["replay_counters"] = [{"xid_events": 0, "xid_events_per_collection": 1, "last_xid": 94}]
    elif n == 4:
        s["host"]["driver_version"] = OLD_DRIVER
    return s


# --- processes ------------------------------------------------------------------------------------------------------

class Processes:
    """Every process started here, each the leader of a session of its own; stop() kills each group."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.procs = []  # (name, Popen, log path)

    def start(self, name, argv):
        log = self.workdir / f"{name}.log"
        with open(log, "wb") as f:
            p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
        self.procs.append((name, p, log))
        return p

    def check_alive(self):
        for name, p, log in self.procs:
            if p.poll() is not None:
                fail(f"{name} exited early (code {p.returncode}); its log:\n{tail(log)}")

    def stop(self):
        for _, p, _ in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 5
        for _, p, _ in self.procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()


def tail(path, lines=30):
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError as e:
        return f"(unreadable: {e})"


def prom_query(port, promql):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=2) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{promql}: {body}")
    return body["data"]["result"]


def wait_for_samples(procs, port, nodes):
    """Until `nodes` targets are up and every GPU has MIN_SAMPLES samples of gsq_gpu_info; returns the seconds
    waited."""
    t0 = time.monotonic()
    last = "Prometheus not answering yet"
    while time.monotonic() - t0 < STARTUP_DEADLINE_S:
        procs.check_alive()
        try:
            up = prom_query(port, 'up{job="gsq"}')
            counts = prom_query(port, "count_over_time(gsq_gpu_info[1m])")
            n_up = sum(1 for s in up if s["value"][1] == "1")
            enough = sum(1 for s in counts if float(s["value"][1]) >= MIN_SAMPLES)
            last = f"{n_up}/{nodes} targets up, {enough}/{nodes} GPUs with {MIN_SAMPLES}+ samples (port {port})"
            if n_up == nodes and enough == nodes and len(counts) == nodes:
                return time.monotonic() - t0
        except (OSError, RuntimeError, ValueError, KeyError) as e:
            last = f"Prometheus: {e}"
        time.sleep(0.5)
    fail(f"not ready after {STARTUP_DEADLINE_S} s: {last}")


def run_fleet(binary, *args):
    t0 = time.monotonic()
    p = subprocess.run([str(binary), "fleet", *args], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    return p, time.monotonic() - t0


def fleet_json(p, args):
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError as e:
        fail(f"fleet {' '.join(args)}: stdout is not JSON ({e}); exit {p.returncode}\nstdout: {p.stdout[:2000]}\n"
             f"stderr: {p.stderr[-2000:]}")


# --- checks ---------------------------------------------------------------------------------------------------------

def check_altered_named(binary, url):
    args = ["--prometheus", url, "--since", "2m", "--json"]
    p, secs = run_fleet(binary, *args)
    j = fleet_json(p, args)
    where = f"fleet {' '.join(args)} (exit {p.returncode})\n" + json.dumps(
        {k: j.get(k) for k in ("gpus", "outliers", "watch", "notes")}, indent=1)[:6000]
    if j.get("schema") != "gpusqueeze.fleet/1":
        fail(f"schema {j.get('schema')!r}, expected gpusqueeze.fleet/1")
    if p.returncode != 1:
        fail(f"exit {p.returncode}, expected 1 (outliers); stderr: {p.stderr[-1000:]}\n{where}")
    if j.get("gpus") != NODES:
        fail(f"{j.get('gpus')} GPUs, expected {NODES}\n{where}")
    groups = j.get("groups", [])
    if len(groups) != 1 or groups[0].get("model") != "NVIDIA H200" or groups[0].get("gpus") != NODES:
        fail(f"expected one group of {NODES} NVIDIA H200: {[(g.get('model'), g.get('gpus')) for g in groups]}")
    majority = groups[0].get("config", {})
    for field, value in {"power_limit_w": "700", "pcie_gen_max": "5", "pcie_width": "16",
                         "driver": "580.159.04", "mig": "off", "sm_clock_max_mhz": "1980"}.items():
        if majority.get(field) != value:
            fail(f"group majority {field} = {majority.get(field)!r}, expected {value!r}\n{where}")
    medians = groups[0].get("median", {})
    for signal_id in ("clock_under_load_mhz", "power_cap_fraction", "thermal_fraction", "temperature_under_load_c"):
        if signal_id not in medians:
            fail(f"no median for the signal {signal_id}: its PromQL query found no series under load\n{where}")
    outliers = j.get("outliers", [])
    by_uuid = {}
    for o in outliers:
        uuids = [g.get("uuid") for g in o.get("gpus", [])]
        if len(uuids) != 1:
            fail(f"outlier {o.get('subject')!r} covers {len(uuids)} GPUs, expected one\n{where}")
        by_uuid[uuids[0]] = o
    expected = {uuid_of(n): n for n in ALTERED}
    if set(by_uuid) != set(expected) or len(outliers) != len(ALTERED):
        named = sorted(f"{o['gpus'][0]['node']}" for o in outliers)
        fail(f"outliers named {named} ({len(outliers)} lines), expected exactly "
             f"{[hostname(n) for n in ALTERED]}\n{where}")
    for uuid, n in expected.items():
        o, want = by_uuid[uuid], ALTERED[n]
        fields = {d.get("field") for d in o.get("differences", [])}
        if fields != want["fields"]:
            fail(f"{hostname(n)} ({want['what']}): differences {sorted(fields)}, expected {sorted(want['fields'])}")
        if o.get("severity") != want["severity"]:
            fail(f"{hostname(n)} ({want['what']}): severity {o.get('severity')!r}, expected {want['severity']!r}")
        if o["gpus"][0].get("node") != hostname(n):
            fail(f"{uuid}: node {o['gpus'][0].get('node')!r}, expected {hostname(n)!r}")
    diff = {(n, d["field"]): d for n in ALTERED for d in by_uuid[uuid_of(n)]["differences"]}
    for key, value, group_value in [((1, "pcie_gen_max"), "4", "5"), ((1, "pcie_width"), "8 lanes", "16 lanes"),
                                    ((2, "power_limit_w"), "500 W", "700 W"),
                                    ((4, "driver"), OLD_DRIVER, "580.159.04")]:
        d = diff[key]
        if d.get("value") != value or d.get("group_value") != group_value:
            fail(f"{hostname(key[0])} {key[1]}: value {d.get('value')!r} (peers {d.get('group_value')!r}), expected "
                 f"{value!r} (peers {group_value!r})")
    if not float(diff[(3, "xid_events")].get("value", "0")) > 0:  # increase() over the window: not a whole number
        fail(f"node-03's XIDs within the window: {diff[(3, 'xid_events')].get('value')!r}, expected more than 0")
    if "XID 94" not in diff[(3, "xid_events")].get("fix", ""):
        fail(f"node-03's XID fix does not explain the last XID (94): {diff[(3, 'xid_events')].get('fix')!r}")
    if j.get("watch"):
        fail(f"watched GPUs where every signal is identical: {[w.get('subject') for w in j['watch']]}")
    if outliers[0].get("severity") != "fail":
        fail("the failure (XID) is not listed first")
    return f"exit 1, outliers {sorted(o['gpus'][0]['node'] for o in outliers)}, {secs:.2f} s"


def check_unaltered_clean(binary, url, extra):
    args = ["--prometheus", url, "--since", "2m", *extra, "--json"]
    p, secs = run_fleet(binary, *args)
    if p.returncode == 2:
        fail(f"fleet {' '.join(args)}: exit 2 (refused); stderr: {p.stderr.strip()[-1500:]}")
    j = fleet_json(p, args)
    if p.returncode != 0 or j.get("outliers"):
        fail(f"fleet {' '.join(args)}: exit {p.returncode}, outliers "
             f"{[o.get('subject') for o in j.get('outliers', [])]}; expected 0 and none")
    if j.get("gpus") != NODES - len(ALTERED):
        fail(f"the selector left {j.get('gpus')} GPUs, expected {NODES - len(ALTERED)}")
    if j.get("watch"):
        fail(f"watched: {[w.get('subject') for w in j['watch']]}")
    return f"exit 0, {j.get('gpus')} GPUs, no outlier, {secs:.2f} s"


def expect_refusal(binary, args, *needles, max_s=None):
    p, secs = run_fleet(binary, *args)
    if p.returncode != 2:
        fail(f"fleet {' '.join(args)}: exit {p.returncode}, expected 2\nstdout: {p.stdout[:500]}\n"
             f"stderr: {p.stderr[-500:]}")
    for needle in needles:
        if needle not in p.stderr:
            fail(f"fleet {' '.join(args)}: stderr does not say {needle!r}: {p.stderr.strip()[-800:]!r}")
    if p.stdout.strip():
        fail(f"fleet {' '.join(args)}: printed on stdout while refusing: {p.stdout[:300]!r}")
    if max_s and secs > max_s:
        fail(f"fleet {' '.join(args)}: took {secs:.1f} s to give up (more than {max_s} s)")
    return f"exit 2: {p.stderr.strip().splitlines()[-1][:160]}"


def main():
    args = [a for a in sys.argv[1:] if a != "--keep"]
    keep = "--keep" in sys.argv[1:]
    if len(args) != 1:
        sys.exit(__doc__)
    binary = Path(args[0]).resolve()
    if not binary.is_file():
        print(f"FAIL: no gpusqueeze binary at {binary}")
        return 1
    prometheus = shutil.which("prometheus")
    if not prometheus:
        skip("prometheus is not installed (Debian package prometheus; scripts/setup.sh installs it)")
    base = json.loads(FIXTURE.read_text())

    # SIGTERM (a runner giving up) unwinds through the finally below, so the processes started here die with us.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("test_fleet_prometheus: terminated"))
    t_start = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="gsq-fleet-prom-"))
    procs = Processes(workdir)
    results = []

    def check(name, fn, *a, **kw):
        try:
            results.append((name, True, fn(*a, **kw)))
        except CheckFailed as e:
            results.append((name, False, str(e)))
        except Exception:  # a broken check is a failure too
            results.append((name, False, "unexpected error\n" + traceback.format_exc()))

    try:
        ports = []
        for n in range(1, NODES + 1):
            snap = workdir / f"{hostname(n)}.json"
            snap.write_text(json.dumps(snapshot_for(base, n), indent=1))
            name = f"exporter-{hostname(n)}"
            p = procs.start(name, [str(binary), "exporter", "--snapshot", str(snap), "--listen", "127.0.0.1:0",
                                   "--interval", "0.5"])
            ports.append(served_port(procs, name, p, workdir / f"{name}.log"))
        # Two Prometheus servers: one scrapes the whole fleet, the other only the unaltered exporters (node-05 …).
        proms = {}
        for name, members in (("prometheus", range(1, NODES + 1)),
                              ("prometheus-clean", range(len(ALTERED) + 1, NODES + 1))):
            targets = ", ".join(f"'127.0.0.1:{ports[n - 1]}'" for n in members)
            (workdir / f"{name}.yml").write_text(
                f"global:\n  scrape_interval: {SCRAPE_S}s\n  scrape_timeout: {SCRAPE_S}s\n"
                f"scrape_configs:\n  - job_name: gsq\n    static_configs:\n      - targets: [{targets}]\n")
            port = start_prometheus(procs, name, lambda port, name=name: [
                prometheus, f"--config.file={workdir / f'{name}.yml'}",
                f"--storage.tsdb.path={workdir / f'{name}-tsdb'}", f"--web.listen-address=127.0.0.1:{port}"])
            proms[name] = (port, len(members))
        url = f"http://127.0.0.1:{proms['prometheus'][0]}"
        clean_url = f"http://127.0.0.1:{proms['prometheus-clean'][0]}"
        try:
            waited = [wait_for_samples(procs, *proms[name]) for name in proms]
            results.append(("prometheus_scrapes_every_exporter", True,
                            f"{NODES} + {NODES - len(ALTERED)} targets up with {MIN_SAMPLES}+ samples after "
                            f"{sum(waited):.1f} s"))
        except CheckFailed as e:
            results.append(("prometheus_scrapes_every_exporter", False,
                            f"{e}\nprometheus logs:\n{tail(workdir / 'prometheus.log')}\n"
                            f"{tail(workdir / 'prometheus-clean.log')}"))
        else:
            check("altered_gpus_named_exactly", check_altered_named, binary, url)
            check("unaltered_fleet_clean", check_unaltered_clean, binary, clean_url, [])
            check("selector_excluding_altered_clean", check_unaltered_clean, binary, url,
                  ["--selector", 'hostname!~"node-0[1-4]"'])
            check("bad_since_refused", expect_refusal, binary,
                  ["--prometheus", url, "--since", "5x", "--json"], "--since 5x")
        dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
        check("unreachable_endpoint_refused", expect_refusal, binary,
              ["--prometheus", dead, "--since", "2m", "--timeout", "2"], dead, "no answer", max_s=10)
        check("https_refused", expect_refusal, binary,
              ["--prometheus", "https://127.0.0.1:9090", "--since", "2m"], "plain HTTP")
    finally:
        procs.stop()
        if keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    failed = 0
    for name, ok, note in results:
        print(f"{'ok  ' if ok else 'FAIL'}  {name}" + (f": {note}" if note else ""))
        failed += not ok
    print(f"test_fleet_prometheus: {len(results) - failed} passed, {failed} failed "
          f"({time.monotonic() - t_start:.1f} s)")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
