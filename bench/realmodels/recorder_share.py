"""How the recorder's cost should come out of a recording's host time, judged on real-model sets: for every recording
whose untraced step was measured, the host factor `analyze --untraced-step` implies (the replay's host time × factor
gives the untraced step), then two models of it, each with its constant taken from the other pairs' recordings (the
pair left out, the sets pooled):
  per record  factor = 1 − cost × records / host time, cost = the median implied cost per record
  share       factor = the median implied factor (the recorder's share of the host time); Kineto recordings sparser
              than accuracy.SHARE_FROM records a ms of host time keep the cost per record (the analyzer's default,
              src/analyze/whatif.hpp)
and how often each puts the "as recorded" step within 5% of the measured untraced one, per set; and the implied cost
per record and factor by quartile of record density.

  python3 bench/realmodels/recorder_share.py RESULTS_DIR:TRACES_DIR [...] [--bin build/gpusqueeze] [--out table.md]
RESULTS_DIR holds realmodels.json; TRACES_DIR holds torch/NAME-VARIANT.pt.json.gz (or traces/…) and gsq/….gsqt."""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The implied factors, the analyzer's default model with its constant left out and the table writer are accuracy.py's,
# so both scripts judge the recorder's cost the same way.
from accuracy import RECORDERS, analyze, emit, implied_costs, leave_out_cost  # noqa: E402


def recordings(binary, results, traces):
    """Every recording of the set with its implied host factor (accuracy.implied_costs), its trace and untraced step."""
    pairs = {k: v for k, v in json.load(open(os.path.join(results, "realmodels.json")))["pairs"].items()
             if "before" in v}
    pattern = dict(RECORDERS)
    for (name, v, rec), (s, h, n) in implied_costs(binary, traces, pairs).items():
        yield {"set": os.path.basename(results.rstrip("/")), "name": name, "v": v, "rec": rec,
               "trace": os.path.join(traces, pattern[rec].format(name, v)), "untraced": pairs[name][v]["median_ms"],
               "h": h, "n": n, "s": s}


def untraced_ms(binary, trace, cost):
    """The analyzer's untraced step (ms) with the recorder's cost per record given, None where it gives none."""
    doc, _ = analyze(binary, trace, "", "--recorder-cost", round(cost))
    ns = (doc or {}).get("critical_path", {}).get("untraced_step_p50_ns")
    return ns / 1e6 if ns is not None else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sets", nargs="+", help="RESULTS_DIR:TRACES_DIR")
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "gpusqueeze"))
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    rows = [r for s in a.sets for r in recordings(a.bin, *s.split(":", 1))]
    lines = ["# The recorder's cost: a share of the host time or a cost per record", "",
             f"{len(rows)} recordings of {len(a.sets)} sets; the pair left out of every constant, the sets pooled. "
             f"Re-made by `python3 bench/realmodels/recorder_share.py {' '.join(a.sets)}`.", ""]
    tally = {}
    # The factors pooled over the sets, keyed as accuracy.leave_out_cost reads them (pair names differ between sets).
    pooled = {(r["name"], r["v"], r["rec"]): (r["s"], r["h"], r["n"]) for r in rows}
    assert len(pooled) == len(rows), "a pair name in two sets"
    for rec in ("torch", "gsq"):
        mine = [r for r in rows if r["rec"] == rec]
        usable = [r for r in mine if r["s"] is not None]
        if not usable:
            continue
        for r in usable:
            r["per_rec"] = (1 - r["s"]) * r["h"] / r["n"]
        for r in mine:
            others = [o for o in usable if o["name"] != r["name"]]
            per_rec = statistics.median(o["per_rec"] for o in others)
            share = leave_out_cost(pooled, r["name"], r["v"], rec)  # the analyzer's default model
            t = tally.setdefault((r["set"], rec), [0, 0, 0])
            got = [untraced_ms(a.bin, r["trace"], c) for c in (per_rec, share)]
            if None in got:
                continue
            t[0] += 1
            for k, g in enumerate(got):
                t[1 + k] += abs(g / r["untraced"] - 1) < 0.05
        lines += [f"## {rec}: {len(usable)} recordings whose untraced step the host limits", "",
                  f"median implied host factor **{statistics.median(r['s'] for r in usable):.3f}**, median cost per "
                  f"record {statistics.median(r['per_rec'] for r in usable) / 1e3:.2f} µs", "",
                  "| records a ms of host time | recordings | cost per record implied (median) | host factor (median) |",
                  "|---|---|---|---|"]
        usable.sort(key=lambda r: r["n"] / (r["h"] / 1e6))
        q = max(1, len(usable) // 4)
        for i in range(0, len(usable), q):
            part = usable[i:i + q] if i + 2 * q <= len(usable) else usable[i:]
            d = [r["n"] / (r["h"] / 1e6) for r in part]
            lines.append(f"| {d[0]:.0f}–{d[-1]:.0f} | {len(part)} | "
                         f"{statistics.median(r['per_rec'] for r in part) / 1e3:.2f} µs | "
                         f"{statistics.median(r['s'] for r in part):.3f} |")
            if i + 2 * q > len(usable):
                break
        lines.append("")
    lines += ["## \"As recorded\" within 5% of the untraced step, pair left out", "",
              "| set | recorder | recordings | cost per record | share (the analyzer's default) |", "|---|---|---|---|---|"]
    for (s, rec), (n, a1, a2) in sorted(tally.items()):
        lines.append(f"| {s} | {rec} | {n} | {a1} | {a2} |")
    tot = [sum(v[k] for v in tally.values()) for k in range(3)]
    lines.append(f"| all | | {tot[0]} | {tot[1]} | {tot[2]} |")
    emit(lines, a.out)


if __name__ == "__main__":
    main()
