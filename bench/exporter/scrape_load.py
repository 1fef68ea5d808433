#!/usr/bin/env python3
"""Scrape cost and load behaviour of a running `gpusqueeze exporter` (issue: exporter and rules, "Must show").

  scrape_load.py --url http://127.0.0.1:9835 --pid PID --out result.json [--nvidia-smi]

1. Scrape latency: N sequential GETs of /metrics, each on a fresh connection (as a Prometheus that does not keep
   connections alive), P50/P99; the exporter's CPU time per second (utime+stime from /proc/PID/stat) while idle and
   while scraped.
2. With --nvidia-smi: the same number of `nvidia-smi --query-gpu=...` runs, the per-scrape cost of exporters that
   shell out to it (nvidia_gpu_exporter does), P50/P99 and CPU seconds per run.
3. Load: C concurrent connections each asking for /metrics, plus S slow clients that send a header byte per second;
   meanwhile /health is timed from another client. Reports failures, latencies, whether the exporter survived, and
   its RSS before, during and after.
Standard library only.
"""
import argparse
import asyncio
import http.client
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import urllib.parse


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return None


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def scrape_once(host, port, path="/metrics", timeout=10):
    t0 = time.perf_counter()
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return time.perf_counter() - t0, r.status, len(body)


def scrape_phase(host, port, pid, n):
    lat, bad, size = [], 0, 0
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    for _ in range(n):
        dt, status, size = scrape_once(host, port)
        lat.append(dt)
        bad += status != 200
    wall = time.perf_counter() - t0
    cpu = cpu_seconds(pid) - cpu0
    return {"scrapes": n, "non_200": bad, "body_bytes": size, "p50_ms": pct(lat, 0.5) * 1e3,
            "p99_ms": pct(lat, 0.99) * 1e3, "max_ms": max(lat) * 1e3, "wall_s": wall,
            "exporter_cpu_s": cpu, "exporter_cpu_per_scrape_ms": cpu / n * 1e3}


def idle_phase(pid, seconds):
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    time.sleep(seconds)
    wall = time.perf_counter() - t0
    cpu = cpu_seconds(pid) - cpu0
    return {"seconds": wall, "exporter_cpu_s": cpu, "core_fraction": cpu / wall}


def nvidia_smi_phase(n):
    cmd = ["nvidia-smi", "--query-gpu=index,uuid,name,utilization.gpu,utilization.memory,memory.used,memory.total,"
           "temperature.gpu,power.draw,clocks.sm,clocks.mem,pcie.link.gen.current,pcie.link.width.current",
           "--format=csv,noheader,nounits"]
    lat = []
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        lat.append(time.perf_counter() - t0)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    return {"runs": n, "command": " ".join(cmd), "p50_ms": pct(lat, 0.5) * 1e3, "p99_ms": pct(lat, 0.99) * 1e3,
            "cpu_s_per_run": cpu / n}


async def one_request(host, port, path, timeout):
    t0 = time.perf_counter()
    try:
        r, w = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        w.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        await w.drain()
        data = await asyncio.wait_for(r.read(), timeout)
        w.close()
        ok = data.startswith(b"HTTP/1.1 200")
        return ok, time.perf_counter() - t0, None
    except Exception as e:  # noqa: BLE001 - a load test counts every failure kind
        return False, time.perf_counter() - t0, type(e).__name__


async def slow_client(host, port, seconds):
    """Sends a request one byte a second (slowloris); returns what the server did."""
    try:
        r, w = await asyncio.open_connection(host, port)
    except Exception as e:  # noqa: BLE001
        return "connect failed: " + type(e).__name__
    req = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000
    t0 = time.perf_counter()
    try:
        for b in req:
            if time.perf_counter() - t0 > seconds:
                break
            w.write(bytes([b]))
            await w.drain()
            await asyncio.sleep(1.0)
            if r.at_eof():
                return "closed by server after %.0f s" % (time.perf_counter() - t0)
        return "still open after %.0f s" % (time.perf_counter() - t0)
    except Exception as e:  # noqa: BLE001
        return "closed by server after %.0f s (%s)" % (time.perf_counter() - t0, type(e).__name__)
    finally:
        w.close()


async def health_probe(host, port, stop, out):
    while not stop.is_set():
        ok, dt, err = await one_request(host, port, "/health", 30)
        out.append((ok, dt))
        await asyncio.sleep(0.2)


async def load_phase(host, port, pid, connections, slow, slow_seconds):
    rss = {"before": rss_bytes(pid)}
    stop = asyncio.Event()
    health = []
    probe = asyncio.create_task(health_probe(host, port, stop, health))
    slows = [asyncio.create_task(slow_client(host, port, slow_seconds)) for _ in range(slow)]
    await asyncio.sleep(1.0)
    t0 = time.perf_counter()
    results = await asyncio.gather(*[one_request(host, port, "/metrics", 60) for _ in range(connections)])
    burst_wall = time.perf_counter() - t0
    rss["during"] = rss_bytes(pid)
    slow_outcomes = await asyncio.gather(*slows)
    stop.set()
    await probe
    rss["after"] = rss_bytes(pid)
    lat = [dt for ok, dt, _ in results if ok]
    errors = {}
    for ok, _, err in results:
        if not ok:
            errors[err or "non-200"] = errors.get(err or "non-200", 0) + 1
    hl = [dt for ok, dt in health if ok]
    outcome_counts = {}
    for s in slow_outcomes:
        key = s.split(" after")[0]
        outcome_counts[key] = outcome_counts.get(key, 0) + 1
    return {"connections": connections, "ok": len(lat), "errors": errors, "burst_wall_s": burst_wall,
            "p50_ms": pct(lat, 0.5) * 1e3 if lat else None, "p99_ms": pct(lat, 0.99) * 1e3 if lat else None,
            "slow_clients": slow, "slow_seconds": slow_seconds, "slow_outcomes": outcome_counts,
            "health_probes": len(health), "health_ok": len(hl),
            "health_p50_ms": pct(hl, 0.5) * 1e3 if hl else None, "health_max_ms": max(hl) * 1e3 if hl else None,
            "rss_bytes": rss, "exporter_alive": alive(pid)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:9835")
    ap.add_argument("--pid", type=int, required=True, help="the exporter's pid (CPU time, RSS)")
    ap.add_argument("--scrapes", type=int, default=1000)
    ap.add_argument("--idle-seconds", type=float, default=20)
    ap.add_argument("--nvidia-smi", action="store_true", help="also time nvidia-smi --query-gpu per scrape")
    ap.add_argument("--nvidia-smi-runs", type=int, default=200)
    ap.add_argument("--connections", type=int, default=1000, help="0 skips the load phase")
    ap.add_argument("--slow", type=int, default=50)
    ap.add_argument("--slow-seconds", type=float, default=15)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    u = urllib.parse.urlparse(a.url)
    host, port = u.hostname, u.port or 80
    res = {"url": a.url, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    print("idle CPU ...", file=sys.stderr)
    res["idle"] = idle_phase(a.pid, a.idle_seconds)
    print(f"{a.scrapes} scrapes ...", file=sys.stderr)
    res["scrape"] = scrape_phase(host, port, a.pid, a.scrapes)
    if a.nvidia_smi:
        print(f"{a.nvidia_smi_runs} nvidia-smi runs ...", file=sys.stderr)
        res["nvidia_smi"] = nvidia_smi_phase(a.nvidia_smi_runs)
    if a.connections > 0:
        print(f"load: {a.connections} connections + {a.slow} slow clients ...", file=sys.stderr)
        res["load"] = asyncio.run(load_phase(host, port, a.pid, a.connections, a.slow, a.slow_seconds))
    with open(a.out, "w") as f:
        json.dump(res, f, indent=2)
    s, i = res["scrape"], res["idle"]
    print(f"scrape p50 {s['p50_ms']:.2f} ms p99 {s['p99_ms']:.2f} ms ({s['scrapes']} scrapes, {s['body_bytes']} B); "
          f"exporter CPU idle {i['core_fraction'] * 100:.3f}% of a core, {s['exporter_cpu_per_scrape_ms']:.3f} ms/scrape")
    if "nvidia_smi" in res:
        n = res["nvidia_smi"]
        print(f"nvidia-smi per scrape: p50 {n['p50_ms']:.1f} ms p99 {n['p99_ms']:.1f} ms, "
              f"{n['cpu_s_per_run'] * 1e3:.1f} ms CPU/run")
    if "load" in res:
        l = res["load"]
        print(f"load: {l['ok']}/{l['connections']} ok, errors {l['errors']}, p99 {l['p99_ms']} ms; slow clients "
              f"{l['slow_outcomes']}; /health {l['health_ok']}/{l['health_probes']} ok, max {l['health_max_ms']} ms; "
              f"RSS {l['rss_bytes']}; alive {l['exporter_alive']}")
    return 0 if alive(a.pid) else 1


if __name__ == "__main__":
    sys.exit(main())
