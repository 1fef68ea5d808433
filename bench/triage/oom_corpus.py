"""The OOM corpus, judged: every labelled CUDA out-of-memory error under tests/data/oom/ through
`gpusqueeze memory FILE --json`, against what the thread it came from found held the memory.

  right    the first finding (the cause the tool puts first) is the label's main class, and the exit code is 1
  partial  the label's main class is among the findings, not first
  wrong    anything else; `refused` when the tool could not read the file (exit 2)

Usage: python3 bench/triage/oom_corpus.py [--bin build/gpusqueeze] [--out DIR] [--min-right SHARE] [--only PREFIX,...]
Writes DIR/table.md and DIR/table.json; exits 1 when a file was refused or fewer than --min-right were right (CTest
oom_corpus). --only scores the files whose names start with one of the prefixes (a batch)."""
import argparse
import collections
import glob
import json
import os
import sys

from corpus import run_json, write_tables  # the triage corpus's runner, beside this script

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def judge(label, rc, doc):
    if rc not in (0, 1) or doc is None:
        return "refused", []
    found = [f["id"] for f in doc.get("findings", []) if f.get("severity") in ("warn", "fail")]
    main = (label.get("classes") or ["?"])[0]
    if found and found[0] == main and rc == 1:
        return "right", found
    if main in found:
        return "partial", found
    return "wrong", found


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "gpusqueeze"))
    ap.add_argument("--corpus", default=os.path.join(ROOT, "tests", "data", "oom"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--min-right", type=float, default=0.0)
    ap.add_argument("--only", default="", help="comma-separated file-name prefixes")
    a = ap.parse_args()
    prefixes = [p for p in a.only.split(",") if p]
    rows = []
    for lab in sorted(glob.glob(os.path.join(a.corpus, "*.label.json"))):
        name = os.path.basename(lab)[: -len(".label.json")]
        if prefixes and not any(name.startswith(p) for p in prefixes):
            continue
        label = json.load(open(lab))
        log = lab[: -len(".label.json")] + ".log"
        rc, doc, err = run_json([a.bin, "memory", log, "--json"])
        verdict, found = judge(label, rc, doc)
        msgs = (doc or {}).get("messages", [])
        rows.append({"file": name, "source": label.get("source", ""), "label": label.get("classes", []),
                     "exit": rc, "found": found, "verdict": verdict, "messages": len(msgs),
                     "error": err if rc == 2 else ""})
    totals = collections.Counter(r["verdict"] for r in rows)
    n = len(rows) or 1
    by_class = collections.defaultdict(collections.Counter)
    for r in rows:
        by_class[(r["label"] or ["?"])[0]][r["verdict"]] += 1
    lines = ["# OOM corpus: what held the memory, and what `gpusqueeze memory` says", "",
             f"{len(rows)} errors; right {totals['right']} ({totals['right'] / n:.0%}), partial {totals['partial']}, "
             f"wrong {totals['wrong']}, refused {totals['refused']}.", "",
             "Re-made by `python3 bench/triage/oom_corpus.py --out <this folder>` (labels: tests/data/oom/README.md).",
             "", "| labelled class | errors | right | partial | wrong | refused |", "|---|---|---|---|---|---|"]
    for c, k in sorted(by_class.items()):
        lines.append(f"| {c} | {sum(k.values())} | {k['right']} | {k['partial']} | {k['wrong']} | {k['refused']} |")
    lines += ["", "| file | label | exit | findings (first = the cause put first) | verdict |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| [{r['file']}]({r['source']}) | {', '.join(r['label'])} | {r['exit']} | "
                     f"{', '.join(r['found']) or '-'}{' — ' + r['error'] if r['error'] else ''} | {r['verdict']} |")
    text = "\n".join(lines) + "\n"
    if a.out:
        write_tables(a.out, text, totals, rows)
    print("\n".join(lines[:3]))
    for r in rows:
        if r["verdict"] != "right":
            print(f"  {r['verdict']:8} {r['file']}: label {r['label']}, exit {r['exit']}, found {r['found']}",
                  file=sys.stderr)
    refused = totals["refused"]
    return 1 if refused or totals["right"] / n < a.min_right else 0


if __name__ == "__main__":
    sys.exit(main())
