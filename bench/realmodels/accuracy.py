"""The analyzer judged on the real-model corpus (bench/realmodels/pairs.py, measured untraced on one GPU): for each
pair, `gpusqueeze analyze --json [--what-if FIX]` of the "before" trace (torch.profiler and `gpusqueeze trace`),
against what the fix really did untraced.

  class    the verdict class (or the top-ranked finding) names the class of the measured fix
  top      the top-ranked warn/fail finding names the measured fix
  pred     the predicted untraced step after the fix vs the measured after (only where a what-if models the fix)
  recorded the analyzer's "as recorded" step vs the measured untraced before step (the recorder's cost shows here)

Usage: python3 bench/realmodels/accuracy.py RESULTS_DIR TRACES_DIR [--bin build/gpusqueeze] [--out table.md]
  RESULTS_DIR holds realmodels.json; TRACES_DIR holds torch/NAME-before.pt.json.gz and gsq/NAME-before.gsqt.
Which finding ids and verdict classes name which fix class is the table FIX_NAMES below: one table, no per-pair case."""
import argparse
import json
import os
import subprocess

# What names each class of fix: verdict classes and finding ids.
FIX_NAMES = {
    "dataloader": {"verdict": {"host-bound", "dataloader-bound"}, "findings": {"dataloader", "host-idle"}},
    "copy": {"verdict": {"transfer-bound"}, "findings": {"pageable-copy", "sync-copy", "unoverlapped-copy"}},
    "sync": {"verdict": {"sync-bound"}, "findings": {"sync-point", "sync-copy"}},
    "launch": {"verdict": {"launch-bound"}, "findings": {"launch-overhead", "launch-bound", "small-kernels"}},
    "layout": {"verdict": set(), "findings": {"layout-copies", "layout-conversions"}},
    "precision": {"verdict": set(), "findings": {"fp32-gemm"}},
    "optimizer": {"verdict": set(), "findings": {"unfused-optimizer"}},
    "attention": {"verdict": set(), "findings": {"unfused-attention"}},
}


def analyze(binary, trace, fix):
    cmd = [binary, "analyze", trace, "--json"] + (["--what-if", fix] if fix else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode not in (0, 1) or not p.stdout.strip():
        return None, p.stderr.strip()[:200]
    return json.loads(p.stdout), ""


def ranked(doc):
    fs = [f for f in doc.get("findings", []) if f["severity"] in ("warn", "fail")]
    return sorted(fs, key=lambda f: -(f.get("saving_ratio") or 0))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("traces")
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "gpusqueeze"))
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    pairs = json.load(open(os.path.join(a.results, "realmodels.json")))["pairs"]
    rows, tally = [], {"class": [0, 0], "top": [0, 0], "pred10": [0, 0], "recorded5": [0, 0]}
    for name, p in pairs.items():
        if "error" in p:
            continue
        before, after = p["before"]["median_ms"], p["after"]["median_ms"]
        for rec, path in (("torch", f"torch/{name}-before.pt.json.gz"), ("gsq", f"gsq/{name}-before.gsqt")):
            trace = os.path.join(a.traces, path)
            if not os.path.exists(trace):
                continue
            fix = p["fix"] if p["fix"] not in ("host", "") else "sync"  # a what-if always gives "as recorded"
            doc, err = analyze(a.bin, trace, fix)
            if doc is None:
                rows.append(f"| {name} | {rec} | {p['cls']} | error: {err} | | | | |")
                continue
            verdict = doc["verdict"]["class"]
            top = ranked(doc)
            top_id = top[0]["id"] if top else "-"
            names = FIX_NAMES[p["cls"]]
            cls_ok = verdict in names["verdict"] or top_id in names["findings"]
            top_ok = top_id in names["findings"]
            wi = doc.get("what_if") or {}
            recorded = (wi.get("recorded_step_p50_ns") or 0) / 1e6
            pred = None
            for r in wi.get("rows", []):
                if p["fix"] not in ("host", "") and r.get("fixes") == fix:
                    pred = r["step_p50_ns"] / 1e6
            tally["class"][0] += cls_ok
            tally["class"][1] += 1
            tally["top"][0] += top_ok
            tally["top"][1] += 1
            if recorded:
                tally["recorded5"][0] += abs(recorded / before - 1) <= 0.05
                tally["recorded5"][1] += 1
            if pred is not None:
                tally["pred10"][0] += abs(pred / after - 1) <= 0.10
                tally["pred10"][1] += 1
            rows.append(
                f"| {name} | {rec} | {p['cls']} ({p['fix'] or '-'}) | {verdict}{'' if cls_ok else ' ✗'} | "
                f"{top_id}{'' if top_ok else ' ✗'} | {before:.2f} → {after:.2f} | "
                f"{recorded:.2f} ({recorded / before - 1:+.0%}) | "
                + (f"{pred:.2f} ({pred / after - 1:+.0%}) |" if pred is not None else "- |"))
    def share(k):
        n, d = tally[k]
        return f"{n}/{d} ({n / d:.0%})" if d else "-"
    lines = ["# Analyzer accuracy on the real-model corpus", "",
             f"verdict class names the measured fix: {share('class')}; top finding names it: {share('top')}; "
             f"predicted after-fix step within 10% of measured: {share('pred10')}; \"as recorded\" step within 5% of "
             f"the untraced step: {share('recorded5')}.", "",
             "| pair | recorder | class (fix) | verdict | top finding | measured untraced ms (before → after) | "
             "as recorded ms (vs untraced before) | predicted after ms (vs measured) |",
             "|---|---|---|---|---|---|---|---|"] + rows
    text = "\n".join(lines) + "\n"
    if a.out:
        open(a.out, "w").write(text)
    print(text)


if __name__ == "__main__":
    main()
