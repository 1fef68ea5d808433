"""The analyzer judged on the real-model corpus (bench/realmodels/pairs.py, measured untraced on one GPU): for each
pair, `gpusqueeze analyze --json [--what-if FIX]` of the "before" trace (torch.profiler and `gpusqueeze trace`),
against what the fix really did untraced.

  class    the verdict class (or the top-ranked finding) names the class of the measured fix
  top      the top-ranked warn/fail finding names the measured fix
  pred     the predicted untraced step after the fix vs the measured after, from the what-if of the fix
  pred (finding)  where no what-if models the fix (precision, optimizer, attention): the saving of the finding that
           names it (a share of the judged window) taken off the step the analyzer gives as untraced; tallied apart
  recorded the analyzer's "as recorded" step (the recorder's cost taken out) vs the measured untraced before step

Two modes, both in the table:
  plain     `analyze` as a user runs it: the recorder's cost is the corpus default (its share of the host time; a
            cost per record for sparse Kineto recordings) — here with its constant computed leaving the pair out (the
            median of the other pairs' implied factors), passed as the cost per record it comes to for the recording
  untraced  `analyze --untraced-step MS` with the measured untraced before step (what `report -- CMD` measures)
--calibrate prints each recording's implied host factor, cost per record and records a ms, and the medians the
analyzer's defaults come from (whatif.hpp kKinetoHostScale, kGsqtHostScale, kKinetoRecordCostNs).

Usage: python3 bench/realmodels/accuracy.py RESULTS_DIR TRACES_DIR [--bin build/gpusqueeze] [--out table.md]
                                            [--calibrate]
  RESULTS_DIR holds realmodels.json; TRACES_DIR holds torch/NAME-before.pt.json.gz and gsq/NAME-before.gsqt.
Which finding ids and verdict classes name which fix class is the table FIX_NAMES below: one table, no per-pair case."""
import argparse
import json
import os
import statistics
import subprocess

# What names each class of fix: verdict classes and finding ids.
FIX_NAMES = {
    "dataloader": {"verdict": {"host-bound", "dataloader-bound"}, "findings": {"dataloader", "host-idle"}},
    "copy": {"verdict": {"transfer-bound"}, "findings": {"pageable-copy", "sync-copy", "unoverlapped-copy"}},
    "sync": {"verdict": {"sync-bound"}, "findings": {"sync-point", "sync-copy"}},
    "launch": {"verdict": {"launch-bound"}, "findings": {"launch-overhead", "launch-bound", "small-kernels"}},
    # Fixes of the GPU's own work: no verdict names the fix itself (only its finding does), but the verdict names
    # their layer ("layer", scored apart as "the verdict class alone") when it says the GPU sets the step.
    "layout": {"verdict": set(), "layer": {"gpu-bound"}, "findings": {"layout-copies", "layout-conversions"}},
    "precision": {"verdict": set(), "layer": {"gpu-bound"}, "findings": {"fp32-gemm"}},
    "optimizer": {"verdict": set(), "layer": {"launch-bound"}, "findings": {"unfused-optimizer"}},  # tiny kernels
    "attention": {"verdict": set(), "layer": {"gpu-bound"}, "findings": {"unfused-attention"}},
}


# The --what-if that models each pair's fix, where its name in realmodels.json is not one.
# The DataLoader pairs' fix is 8 workers with pin_memory=True and the batch copied with non_blocking=True
# (pairs.dataloader_pair): both parts replayed.
WHATIF_OF = {"host": "workers:8,pinned"}
# Fixes recorded before a what-if modelled them (the pair's `fix` empty), by the words that name the fix in its
# description (the part after "→"): the precision, optimizer and attention what-ifs came after the first corpora were
# measured.
WHATIF_BY_WORDS = (("bf16 autocast", "bf16"), ("TF32", "tf32"), ("fused", "optimizer"),
                   ("scaled_dot_product_attention", "attention"))


def whatif_of(p):
    if p["fix"]:
        return WHATIF_OF.get(p["fix"], p["fix"])
    fix_words = p.get("what", "").split("→")[-1]
    return next((w for words, w in WHATIF_BY_WORDS if words in fix_words), "")


def analyze(binary, trace, fix, *extra):
    cmd = [binary, "analyze", trace, "--json"] + (["--what-if", fix] if fix else []) + [str(x) for x in extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode not in (0, 1) or not p.stdout.strip():
        return None, p.stderr.strip()[:200]
    return json.loads(p.stdout), ""


def ranked(doc):
    """The warn/fail findings in the order the analyzer gives them (core/finding.hpp rank_findings: severity, saving,
    a specific cause just before the broader finding it is part of)."""
    return [f for f in doc.get("findings", []) if f["severity"] in ("warn", "fail")]


RECORDERS = (("torch", "torch/{}-{}.pt.json.gz"), ("gsq", "gsq/{}-{}.gsqt"))


def implied_costs(binary, traces, pairs):
    """Per recording: (host factor that --untraced-step implies, host ns, records); the factor None unless the host
    limits the step (the factor lies in (0, 1))."""
    out = {}
    for name, p in pairs.items():
        for v in ("before", "after"):
            for rec, pattern in RECORDERS:
                trace = os.path.join(traces, pattern.format(name, v))
                if not os.path.exists(trace):
                    continue
                # --recorder-cost 0: the factor the untraced step alone gives, not bounded by the default cost
                doc, _ = analyze(binary, trace, "", "--untraced-step", p[v]["median_ms"], "--recorder-cost", 0)
                c = (doc or {}).get("critical_path", {})
                s, h, n = c.get("host_scale"), c.get("host_ns", 0), c.get("records", 0)
                if h and n:
                    out[(name, v, rec)] = (s if s is not None and 0 < s < 1 else None, h, n)
    return out


# The analyzer's default correction (src/analyze/whatif.hpp): the recorder's share of the host time, except a Kineto
# recording sparser than SHARE_FROM records a ms of host time, which gets a cost per record.
SHARE_FROM = 75


def leave_out_cost(costs, name, v, rec):
    """The cost per record to pass as --recorder-cost for this recording so that plain `analyze` applies the
    analyzer's default model with its constant taken from the other pairs' recordings (leave the pair out)."""
    others = [(s, h, n) for (k, _, r), (s, h, n) in costs.items() if r == rec and k != name and s is not None]
    _, h, n = costs[(name, v, rec)]
    if rec == "torch" and n / (h / 1e6) < SHARE_FROM:
        return statistics.median((1 - s) * hh / nn for s, hh, nn in others)
    return (1 - statistics.median(s for s, _, _ in others)) * h / n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("traces")
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "gpusqueeze"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--calibrate", action="store_true")
    a = ap.parse_args()
    pairs = {k: v for k, v in json.load(open(os.path.join(a.results, "realmodels.json")))["pairs"].items()
             if "error" not in v}
    costs = implied_costs(a.bin, a.traces, pairs)
    if a.calibrate:
        for rec, _ in RECORDERS:
            mine = sorted((s, (1 - s) * h / nn, nn / (h / 1e6), f"{n} {v}")
                          for (n, v, r), (s, h, nn) in costs.items() if r == rec and s is not None)
            if not mine:
                continue
            print(f"{rec}: {len(mine)} recordings, median host factor {statistics.median(m[0] for m in mine):.3f}, "
                  f"median {statistics.median(m[1] for m in mine) / 1e3:.1f} µs/record; "
                  + ", ".join(f"{w} ×{s:.2f} ({c / 1e3:.1f} µs, {d:.0f}/ms)" for s, c, d, w in mine))
        return
    rows, tally = [], {f"{k}-{m}": [0, 0] for k in ("class", "verdict", "top", "pred10", "pred5", "fpred10", "fpred5")
             for m in ("plain", "untraced")}
    tally["recorded5-plain"] = [0, 0]
    tally["class-separated"] = [0, 0]  # plain, on pairs whose fix stands out of run-to-run spread
    for name, p in pairs.items():
        before, after = p["before"]["median_ms"], p["after"]["median_ms"]
        # The fix is told from noise when the before and after rounds do not overlap (every round of one side below
        # every round of the other); pairs where they do judge nothing about which fix matters.
        separated = p["after"]["max_ms"] < p["before"]["min_ms"] or p["before"]["max_ms"] < p["after"]["min_ms"]
        for rec, pattern in RECORDERS:
            trace = os.path.join(a.traces, pattern.format(name, "before"))
            if not os.path.exists(trace):
                continue
            # The what-if of the pair's fix: the DataLoader pairs' fix is 8 workers + pin_memory (pairs.py); without a
            # modelled fix, any what-if, for its "as recorded" row.
            modelled = whatif_of(p)
            fix = modelled or "sync"
            if (name, "before", rec) not in costs:
                continue
            loo = leave_out_cost(costs, name, "before", rec)
            cells = {}
            for mode, extra in (("plain", ["--recorder-cost", round(loo)]), ("untraced", ["--untraced-step", before])):
                doc, err = analyze(a.bin, trace, fix, *extra)
                if doc is None:
                    cells[mode] = None
                    continue
                verdict = doc["verdict"]["class"]
                top = ranked(doc)
                top_id = top[0]["id"] if top else "-"
                names = FIX_NAMES[p["cls"]]
                cls_ok = verdict in names["verdict"] or top_id in names["findings"]
                top_ok = top_id in names["findings"]
                wi = doc.get("what_if") or {}
                recorded = (wi.get("replayed_step_p50_ns") or 0) / 1e6
                pred, by_finding = None, False
                for r in wi.get("rows", []):
                    # The row of all the fix's parts together (the analyzer names them in its own order).
                    if modelled and set(r.get("fixes", "").split(",")) == set(fix.split(",")):
                        pred = r["step_p50_ns"] / 1e6
                # No what-if models the fix (precision, optimizer, attention): the saving of the finding that names
                # it, of the step the analyzer gives as untraced (the given one in untraced mode), tallied apart.
                if not modelled:
                    named = [f for f in top if f["id"] in names["findings"] and f.get("saving_ratio") is not None]
                    base = before if mode == "untraced" else recorded
                    if named and base:
                        pred, by_finding = base * (1 - named[0]["saving_ratio"]), True
                tally[f"class-{mode}"][0] += cls_ok
                tally[f"class-{mode}"][1] += 1
                if mode == "plain" and separated:
                    tally["class-separated"][0] += cls_ok
                    tally["class-separated"][1] += 1
                tally[f"verdict-{mode}"][0] += verdict in names.get("layer", names["verdict"])  # the verdict alone
                tally[f"verdict-{mode}"][1] += 1
                tally[f"top-{mode}"][0] += top_ok
                tally[f"top-{mode}"][1] += 1
                if recorded and mode == "plain":
                    tally["recorded5-plain"][0] += abs(recorded / before - 1) <= 0.05
                    tally["recorded5-plain"][1] += 1
                if pred is not None:
                    for k, lim in (("pred10", 0.10), ("pred5", 0.05)):
                        key = f"{'f' if by_finding else ''}{k}-{mode}"
                        tally[key][0] += abs(pred / after - 1) <= lim
                        tally[key][1] += 1
                cells[mode] = (verdict, cls_ok, top_id, top_ok, recorded, pred, by_finding)
            pl, un = cells.get("plain"), cells.get("untraced")
            if pl is None:
                rows.append(f"| {name} | {rec} | {p['cls']} | error | | | | | |")
                continue

            def pred_cell(c):
                if not c or c[5] is None:
                    return "-"
                return f"{c[5]:.2f} ({c[5] / after - 1:+.0%}){' (finding)' if c[6] else ''}"
            rows.append(
                f"| {name} | {rec} | {p['cls']} ({modelled or '-'}) | {pl[0]}{'' if pl[1] else ' ✗'} | "
                f"{pl[2]}{'' if pl[3] else ' ✗'} | {before:.2f} → {after:.2f} | "
                f"{pl[4]:.2f} ({pl[4] / before - 1:+.0%}) [{loo / 1e3:.1f} µs] | {pred_cell(pl)} | "
                f"{un[0] if un else '-'}{'' if un and un[1] else ' ✗'} | {pred_cell(un)} |")

    def share(k):
        n, d = tally[k]
        return f"{n}/{d} ({n / d:.0%})" if d else "-"
    lines = ["# Analyzer accuracy on the real-model corpus", "",
             "Plain `analyze` (the recorder's cost left out of the host time by the analyzer's default model, its "
             "constant computed without the pair):",
             f"verdict class or top finding names the measured fix: {share('class-plain')}; the verdict class alone: "
             f"{share('verdict-plain')}; top finding names it: {share('top-plain')};"
             f" predicted after-fix step within 10% of measured, by the fix's what-if: {share('pred10-plain')} "
             f"(within 5%: {share('pred5-plain')}), by the saving of the finding that names it where no what-if "
             f"models the fix: {share('fpred10-plain')} (within 5%: {share('fpred5-plain')}); \"as recorded\" "
             f"(untraced) step within 5% of the measured untraced step: {share('recorded5-plain')}.",
             f"On the pairs whose before and after rounds do not overlap (the fix stands out of run-to-run spread): "
             f"verdict class or top finding names it: {share('class-separated')}.", "",
             "With the measured untraced before step (`analyze --untraced-step`, what `report -- CMD` measures):",
             f"verdict class or top finding: {share('class-untraced')}; the verdict class alone: "
             f"{share('verdict-untraced')}; top finding: {share('top-untraced')}; predicted after-fix "
             f"step within 10%, by the what-if: {share('pred10-untraced')} (within 5%: {share('pred5-untraced')}), by "
             f"the finding's saving: {share('fpred10-untraced')} (within 5%: {share('fpred5-untraced')}).", "",
             "| pair | recorder | class (fix) | verdict | top finding | measured untraced ms (before → after) | "
             "as recorded, cost out ms (vs untraced before) [cost/record applied] | predicted after ms (vs measured) | "
             "verdict, --untraced-step | predicted after, --untraced-step |",
             "|---|---|---|---|---|---|---|---|---|---|"] + rows
    emit(lines, a.out)


def emit(lines, out):
    """The table's lines printed, and written to `out` too when it is given."""
    text = "\n".join(lines) + "\n"
    if out:
        open(out, "w").write(text)
    print(text)


if __name__ == "__main__":
    main()
