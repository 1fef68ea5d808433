#!/usr/bin/env python3
"""deploy/grafana/gpusqueeze-dashboard.json checked as Grafana and Prometheus would read it.

  - it is JSON with the fields Grafana needs to load a dashboard (title, uid, schemaVersion, panels, templating, time);
  - every panel has a unique id and a gridPos inside the 24-column grid, overlapping no other panel;
  - every query panel reads Prometheus through the datasource variable ${DS_PROMETHEUS}, and every target has a refId
    (unique in its panel) and an expr;
  - the template variables $hostname and $model exist, and every variable an expression uses is defined;
  - every expr is valid PromQL: each, with the variables replaced by sample values, is a recording rule of a temporary
    rule file that `promtool check rules` must accept;
  - every metric an expr or variable query names is one the exporter exposes, with the labels and label values it
    exposes: the exposition of `gpusqueeze exporter --once` run by this test on the recorded H200 snapshot, on a
    synthetic copy of it with an NVLink and a process, and with a tune profile, plus the exposition recorded live on an
    H200 (tests/fixtures/h200-exporter-gemm.txt: GPM, XID, energy and throughput series need a running GPU).
    Prometheus's own `up` and the target labels job, instance and node (the ServiceMonitor's) are allowed too.

Usage: test_grafana.py GPUSQUEEZE_BINARY [DASHBOARD]
Exit 0 passed, 1 failed, 77 skipped (promtool missing: the line says which package provides it).
"""

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deploy_common import ROOT, fail, run_checks, skip  # noqa: E402
from promql_refs import PromQLRefError, references  # noqa: E402

FIXTURES = ROOT / "tests/fixtures"
TUNE_PROFILE = ROOT / "deploy/tune/gpu-server-base.toml"
RECORDED_LIVE = FIXTURES / "h200-exporter-gemm.txt"
DS_REF = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
TARGET_LABELS = {"job", "instance", "node"}  # added by Prometheus (node: the ServiceMonitor's relabeling)
PROMETHEUS_SERIES = {"up": {"job", "instance", "node"}}
BUILTIN_VARIABLES = {"__rate_interval": "5m", "__interval": "1m", "__interval_ms": "60000", "__range": "6h",
                     "__range_s": "21600", "__range_ms": "21600000"}
PANEL_TYPES = {"row", "timeseries", "stat", "table", "gauge", "bargauge", "state-timeline", "status-history",
               "heatmap", "histogram", "piechart", "barchart", "text", "logs", "nodeGraph", "xychart"}
VARIABLE_USE = re.compile(r"\$\{(\w+)(?::[^}]*)?\}|\[\[(\w+)(?::[^\]]*)?\]\]|\$(\w+)")

args = sys.argv[1:]
if not args or len(args) > 2:
    sys.exit(__doc__)
BINARY = Path(args[0])
DASHBOARD = Path(args[1]) if len(args) > 1 else ROOT / "deploy/grafana/gpusqueeze-dashboard.json"


def load_dashboard():
    try:
        with open(DASHBOARD) as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        fail(f"{DASHBOARD.name} is not JSON: {e}")


def all_panels(d):
    out = []
    for p in d.get("panels", []):
        out.append(p)
        out += p.get("panels", []) if p.get("type") == "row" else []  # a collapsed row holds its panels
    return out


def query_panels(d):
    return [p for p in all_panels(d) if p.get("type") not in ("row", "text")]


def exprs(d):
    """(where, expr, legendFormat) of every target."""
    return [(f"panel {p.get('id')} {p.get('title')!r} target {t.get('refId')}", t.get("expr", ""),
             t.get("legendFormat", "")) for p in query_panels(d) for t in p.get("targets", [])]


def variable_queries(d):
    out = []
    for v in d.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v.get("query")
            out.append((v.get("name"), q.get("query", "") if isinstance(q, dict) else q or ""))
    return out


# --- the exposition ------------------------------------------------------------------------------------------------

SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+\S+")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:\\.|[^"\\])*)"')


def exporter_once(*extra):
    r = subprocess.run([str(BINARY), "exporter", "--once", *extra], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail(f"gpusqueeze exporter --once {' '.join(extra)} exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def synthetic_snapshot(tmp):
    """SYNTHETIC: the recorded H200 snapshot (which has no NVLink and ran no process) with one NVLink and one process
    added, so that the exporter renders the NVLink error and process memory families from a file."""
    with open(FIXTURES / "h200-snapshot.json") as f:
        snap = json.load(f)
    gpu = snap["gpus"][0]
    gpu["nvlinks"] = [{"link": 0, "active": True, "replay_errors": 0, "recovery_errors": 0, "crc_flit_errors": 0,
                       "crc_data_errors": 0}]
    gpu["processes"] = [{"pid": 4242, "used_memory_bytes": 1 << 30, "name": "python3"}]
    snap["notes"] = snap.get("notes", []) + ["SYNTHETIC: NVLink and process added by tests/deploy/test_grafana.py"]
    path = Path(tmp) / "synthetic-h200-nvlink-process.json"
    path.write_text(json.dumps(snap))
    return path


_EXPOSED = None


def exposed():
    """{metric: {label: {values}}} over every exposition this test reads."""
    global _EXPOSED
    if _EXPOSED is not None:
        return _EXPOSED
    if not BINARY.is_file():
        fail(f"{BINARY} does not exist (pass the gpusqueeze binary)")
    texts = []
    with tempfile.TemporaryDirectory(prefix="gsq-grafana-") as tmp:
        texts.append(exporter_once("--snapshot", str(FIXTURES / "h200-snapshot.json"), "--tune-profile", "none"))
        texts.append(exporter_once("--snapshot", str(synthetic_snapshot(tmp)), "--tune-profile", "none"))
        texts.append(exporter_once("--snapshot", str(FIXTURES / "h200-snapshot.json"), "--tune-profile",
                                   str(TUNE_PROFILE)))
    texts.append(RECORDED_LIVE.read_text())
    out = {}
    for text in texts:
        for line in text.splitlines():
            m = SAMPLE.match(line)
            if not m or line.startswith("#"):
                continue
            labels = out.setdefault(m.group(1), {})
            for k, v in LABEL.findall(m.group(2) or ""):
                labels.setdefault(k, set()).add(v)
    for name, labels in PROMETHEUS_SERIES.items():
        out.setdefault(name, {l: set() for l in labels})
    _EXPOSED = out
    return out


# --- checks ----------------------------------------------------------------------------------------------------------

def dashboard_has_the_fields_grafana_needs():
    d = load_dashboard()
    want = {"title": str, "uid": str, "schemaVersion": int, "panels": list, "templating": dict, "time": dict}
    for key, typ in want.items():
        if not isinstance(d.get(key), typ):
            fail(f"top-level {key!r} missing or not a {typ.__name__}")
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,40}", d["uid"]):
        fail(f"uid {d['uid']!r}: 1-40 letters, digits, - or _")
    if d["schemaVersion"] < 36:
        fail(f"schemaVersion {d['schemaVersion']}: datasource references as objects need 36 or later")
    if d.get("id") is not None:
        fail("id must be null in a dashboard meant for import or provisioning")
    if not isinstance(d["templating"].get("list"), list):
        fail("templating.list missing")
    if not (d["time"].get("from") and d["time"].get("to")):
        fail("time.from and time.to missing")
    return f"schemaVersion {d['schemaVersion']}, uid {d['uid']}, {len(all_panels(d))} panels"


def panels_have_unique_ids_and_fit_the_grid():
    d = load_dashboard()
    seen, boxes = set(), []
    for p in all_panels(d):
        pid = p.get("id")
        if not isinstance(pid, int) or isinstance(pid, bool):
            fail(f"panel {p.get('title')!r}: id {pid!r} is not an integer")
        if pid in seen:
            fail(f"panel id {pid} is used twice")
        seen.add(pid)
        if p.get("type") not in PANEL_TYPES:
            fail(f"panel {pid}: type {p.get('type')!r} is not a Grafana core panel")
        if not p.get("title"):
            fail(f"panel {pid} has no title")
        g = p.get("gridPos")
        if not isinstance(g, dict) or not all(isinstance(g.get(k), int) for k in "hwxy"):
            fail(f"panel {pid}: gridPos {g!r} needs integer h, w, x, y")
        if not (g["h"] >= 1 and 1 <= g["w"] <= 24 and g["x"] >= 0 and g["x"] + g["w"] <= 24 and g["y"] >= 0):
            fail(f"panel {pid}: gridPos {g} is outside the 24-column grid")
        for other, og in boxes:
            if (g["x"] < og["x"] + og["w"] and og["x"] < g["x"] + g["w"] and g["y"] < og["y"] + og["h"]
                    and og["y"] < g["y"] + g["h"]):
                fail(f"panel {pid} {g} overlaps panel {other} {og}")
        boxes.append((pid, g))
    return f"{len(seen)} ids"


def panels_query_prometheus_through_the_variable():
    d = load_dashboard()
    count = 0
    for p in query_panels(d):
        pid = p.get("id")
        if p.get("datasource") != DS_REF:
            fail(f"panel {pid}: datasource {p.get('datasource')!r}, expected {DS_REF}")
        targets = p.get("targets")
        if not targets:
            fail(f"panel {pid} has no targets")
        refs = [t.get("refId") for t in targets]
        if not all(refs) or len(set(refs)) != len(refs):
            fail(f"panel {pid}: refIds {refs} must be present and unique")
        for t in targets:
            if t.get("datasource", DS_REF) != DS_REF:
                fail(f"panel {pid} target {t.get('refId')}: datasource {t.get('datasource')!r}")
            if not isinstance(t.get("expr"), str) or not t["expr"].strip():
                fail(f"panel {pid} target {t.get('refId')} has no expr")
            count += 1
    return f"{count} targets"


def template_variables_are_defined():
    d = load_dashboard()
    variables = {v.get("name"): v for v in d["templating"]["list"]}
    ds = variables.get("DS_PROMETHEUS")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        fail("no datasource variable DS_PROMETHEUS of type prometheus")
    for name in ("hostname", "model"):
        if variables.get(name, {}).get("type") != "query":
            fail(f"no query variable ${name}")
    texts = [(w, e) for w, e, _ in exprs(d)] + [(f"variable {n}", q) for n, q in variable_queries(d)]
    for where, text in texts:
        for m in VARIABLE_USE.finditer(text):
            name = next(g for g in m.groups() if g)
            if name not in variables and name not in BUILTIN_VARIABLES:
                fail(f"{where}: ${name} is not a template variable")
    return ", ".join(sorted(n for n in variables))


def substituted(expr):
    """The expression with Grafana's variables replaced: intervals by durations, the rest by a sample value."""
    def value(m):
        name = next(g for g in m.groups() if g)
        return BUILTIN_VARIABLES.get(name, "sample")
    return VARIABLE_USE.sub(value, expr)


def exprs_are_valid_promql():
    d = load_dashboard()
    promtool = shutil.which("promtool")
    rules, where_of = [], {}
    for i, (where, expr, _) in enumerate(exprs(d)):
        record = f"gsq_dashboard:expr_{i}"
        where_of[record] = (where, expr)
        rules.append({"record": record, "expr": substituted(expr)})
    for i, (name, query) in enumerate(variable_queries(d)):
        m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\)\s*", query)
        if m:  # the selector of label_values(selector, label) is PromQL
            record = f"gsq_dashboard:variable_{i}"
            where_of[record] = (f"variable {name}", query)
            rules.append({"record": record, "expr": substituted(m.group(1))})
    with tempfile.TemporaryDirectory(prefix="gsq-grafana-promql-") as tmp:
        path = Path(tmp) / "dashboard-exprs.yml"
        path.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}, indent=1))
        r = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
        if r.returncode != 0:
            out = r.stdout + r.stderr
            # promtool names each rule it rejects by its record name
            named = [f"{where_of[rec][0]}: {where_of[rec][1]!r}" for rec in where_of if re.search(rf'"{rec}"', out)]
            fail("promtool check rules rejects:\n" + out.strip() + ("\n    " + "\n    ".join(named) if named else ""))
    return f"{len(rules)} expressions through promtool check rules"


def exprs_use_only_exported_metrics_and_labels():
    d = load_dashboard()
    exp = exposed()
    problems, metrics_used = [], set()
    texts = [(w, e, legend) for w, e, legend in exprs(d)]
    for name, query in variable_queries(d):
        m = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\)\s*", query)
        if m:
            texts.append((f"variable {name}", m.group(1), "{{" + m.group(2) + "}}"))
    for where, expr, legend in texts:
        try:
            selectors, grouping = references(expr)
        except PromQLRefError as e:
            problems.append(f"{where}: {e}")
            continue
        available = set(TARGET_LABELS)
        for metric, matchers in selectors:
            if metric is None:
                continue
            if metric not in exp:
                problems.append(f"{where}: the exporter exposes no metric {metric}")
                continue
            metrics_used.add(metric)
            labels = exp[metric]
            available |= set(labels)
            for label, op, value in matchers:
                if label not in labels and label not in TARGET_LABELS:
                    problems.append(f"{where}: {metric} has no label {label!r} (it has {sorted(labels)})")
                elif label in labels and "$" not in value and labels[label]:
                    # literal values and plain alternations must be values the exporter writes
                    alternatives = value.split("|") if op in ("=~", "!~") else [value]
                    if all(re.fullmatch(r"[\w.-]+", a) for a in alternatives):
                        missing = [a for a in alternatives if a not in labels[label]]
                        if missing:
                            problems.append(f"{where}: {metric}{{{label}}} never has the value(s) {missing} "
                                            f"(it has {sorted(labels[label])})")
        for label in grouping:
            if label not in available:
                problems.append(f"{where}: grouping label {label!r} is on none of the metrics it groups")
        for label in re.findall(r"\{\{\s*(\w+)\s*\}\}", legend):
            if label not in available:
                problems.append(f"{where}: label {label!r} (legend or label_values) is on none of the metrics "
                                f"it shows")
    if problems:
        fail("\n    " + "\n    ".join(problems))
    return f"{len(metrics_used)} metrics, all exposed by the exporter"


CHECKS = [dashboard_has_the_fields_grafana_needs, panels_have_unique_ids_and_fit_the_grid,
          panels_query_prometheus_through_the_variable, template_variables_are_defined, exprs_are_valid_promql,
          exprs_use_only_exported_metrics_and_labels]

if __name__ == "__main__":
    if not shutil.which("promtool"):
        skip("promtool is not installed (Debian package prometheus; scripts/setup.sh installs it)")
    sys.exit(run_checks("grafana", CHECKS))
