"""The analyzer on public traces it was never built on: `gpusqueeze analyze --json` over every trace file in a folder
(each with a `<name>.source.txt` beside it saying where it comes from), one row each: exit code, seconds, the verdict,
the window judged, the first warn/fail findings with their savings, or the refusal's message. Robustness, not
accuracy: these traces come with no measured fix (bench/realmodels/ holds the pairs that do).

Usage: python3 bench/analyzer/public_traces.py FOLDER [--bin build/gpusqueeze] [--out table.md]
Exit 1 when a trace crashed the analyzer or ended with anything but 0 (judged) or 2 (refused with a message)."""
import argparse
import json
import os
import subprocess
import sys
import time


def source_of(path):
    """`repo path@commit` from the source file beside the trace (its name without .gz, .json, .pt.trace)."""
    stems = [path]
    for ext in (".gz", ".json", ".pt.trace"):
        if stems[-1].endswith(ext):
            stems.append(stems[-1][: -len(ext)])
    for stem in stems:
        if os.path.exists(stem + ".source.txt"):
            facts = {}
            for line in open(stem + ".source.txt", errors="replace"):
                key, _, value = line.partition(":")
                facts.setdefault(key.strip().lower(), value.strip())
            repo = facts.get("repo", "").replace("https://github.com/", "")
            return f"{repo} `{facts.get('path', '')}` @{facts.get('commit', '')[:8]}"
    return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "gpusqueeze"))
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    files = sorted(f for f in os.listdir(a.folder)
                   if (f.endswith(".json") or f.endswith(".json.gz")) and not f.startswith("."))
    rows, bad = [], 0
    for f in files:
        path = os.path.join(a.folder, f)
        t0 = time.perf_counter()
        p = subprocess.run([a.bin, "analyze", path, "--json"], capture_output=True, text=True, timeout=300)
        secs = time.perf_counter() - t0
        verdict = window = findings = ""
        if p.returncode == 0:
            try:
                d = json.loads(p.stdout)
                d = d[0] if isinstance(d, list) else d
                verdict = d.get("verdict", {}).get("class", "")
                window = d.get("window", "")[:60]
                warn = [x for x in d.get("findings", []) if x["severity"] in ("warn", "fail")][:3]
                findings = ", ".join(f"{x['id']} {100 * (x.get('saving_ratio') or 0):.1f}%" for x in warn)
            except (json.JSONDecodeError, KeyError, IndexError) as e:
                verdict, bad = f"unreadable JSON ({e})", bad + 1
        elif p.returncode == 2:
            findings = "refused: " + p.stderr.strip().replace("|", "/")[:200]
        else:
            bad += 1
            findings = f"EXIT {p.returncode}: " + p.stderr.strip().replace("|", "/")[:200]
        rows.append(f"| {f} | {p.returncode} | {secs:.1f} | {verdict} | {window} | {findings} | {source_of(path)} |")
    lines = ["| trace | exit | s | verdict | window judged | first warn/fail findings (saving) or refusal | source |",
             "|---|---|---|---|---|---|---|"] + rows
    text = "\n".join(lines) + f"\n\n{len(files)} traces, {bad} crashed or unexpected exit.\n"
    if a.out:
        open(a.out, "w").write(text)
    print(text)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
