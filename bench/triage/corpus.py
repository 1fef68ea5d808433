"""The triage corpus, judged: every labelled log under tests/data/triage/ through the reader its label names
(`gpusqueeze nccl analyze --json` or `gpusqueeze topo --from … --json`), and the verdict by meaning:

  right    the exit code matches the label (1 for a fatal log, 0 otherwise), the label's main class is among the
           classes of what the tool found, and a log with nothing wrong gets no warning or failure
  partial  the exit code matches and one of the label's other classes was found, or the main class was found with
           the wrong exit code
  wrong    anything else; `refused` when the tool could not read the file (exit 2) or read nothing of it

Usage: python3 bench/triage/corpus.py [--bin build/gpusqueeze] [--out bench/results/DATE-cpu-triage-corpus]
Writes table.md (file → label → what was found → verdict, and the totals per folder and per class) and table.json;
exits 1 when a legitimate file was refused, more fatal logs exited 0 than --max-fatal-exit0 (counting the logs that
record their failure: a label's "fatal_in_log": false says the failure, a hang after the last line, is known only from
the thread; such a log is still scored against its fatal label), or fewer than
--min-right were right (CTest triage_corpus)."""
import argparse
import collections
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Finding ids → the corpus' classes (tests/data/triage/README.md). nccl-<class> ids map to themselves.
ALIASES = {
    "nccl-watchdog-timeout": "watchdog-timeout",
    "nccl-shm-error": "nccl-system-error",
    "nccl-nvls-error": "nvls",
    "nccl-tests-wrong": "nccl-tests-wrong-results",
    "nccl-tests-stopped": "nccl-tests-hang",
    "nccl-tests-bandwidth": "nccl-tests-ok",
    "nccl-no-gdrdma": "socket-fallback",
    "nccl-comm-aborted": "other",
    "nccl-process-failed": "other",
    "nccl-mpi-error": "other",
    "nccl-stopped-by-signal": "other",
    "nccl-not-built-in": "other",
    "nccl-job-cancelled": "other",
    "nccl-nccl-call-failed": "other",
    "nccl-duplicate-ranks": "store-timeout",
    "nccl-ddp-ranks-missing": "store-timeout",
    "nccl-coordination-service": "store-timeout",
    "nccl-horovod-stall": "lagging-rank",
    "nccl-horovod-shutdown": "lagging-rank",
    "nccl-rdma-transport-failed": "ib-unavailable",
    "nccl-nvshmem-error": "other",
    "nccl-ddp-unused-parameters": "other",
    "nccl-job-output": "other",
    "nccl-nan-detected": "other",
    "nccl-world-size-mismatch": "other",
    "nccl-custom-allreduce-off": "other",
    "nccl-cuda-system-not-ready": "cuda-error",
    "nccl-fabric-manager-error": "other",
    "nccl-fabric-manager-not-needed": "other",
    "nccl-gpu-stack-not-ready": "other",
    "nccl-nvlink-down": "topo-no-nvlink",
    "nccl-dcgm-diag-failed": "other",
    "nccl-row-remap": "other",
    "nccl-shm-broadcast-wait": "other",
    "nccl-net-config-advisory": "other",
    "nccl-launcher-defaults": "other",
    "nccl-imex-log": "other",
    "nccl-ignored-exception": "other",
    "nccl-gpu-xid": "cuda-error",
    "nccl-no-gpu-visible": "cuda-error",
    "nccl-scheduler-refused": "other",
    "nccl-scheduler-queued": "other",
    "nccl-warn": "other",
    "topo-cross-socket": "topo-pcie-cross-socket",
    "topo-gpu-without-near-nic": "topo-nic-far",
    "topo-nvlink-uneven": "topo-no-nvlink",
    "topo-nvlink-missing": "topo-no-nvlink",
    "topo-p2p-unsupported": "p2p-disabled",
    "nccl-fr-in-flight": "watchdog-timeout",
    "nccl-fr-ranks": "other",
}
HEALTHY = {"nccl-tests-ok", "nccl-init-ok", "topo-healthy"}


def classes_of(doc):
    """The classes the tool's findings name, with their severities (a list: every file's and the ranks compared)."""
    if isinstance(doc, list):
        found = {}
        for d in doc:
            for c, sev in classes_of(d).items():
                found.setdefault(c, sev)
        return found
    found = {}
    for f in doc.get("findings", []):
        fid = f["id"]
        c = ALIASES.get(fid, fid if fid.startswith("nccl-tests-") else fid[5:] if fid.startswith("nccl-") else fid)
        if f["id"] == "nccl-init" and not any(x["severity"] in ("warn", "fail") for x in doc["findings"]):
            c = "nccl-init-ok"
        found.setdefault(c, f["severity"])
    if doc.get("nvls"):
        found.setdefault("nvls", "info")
    if doc.get("schema", "").startswith("gpusqueeze.topo") and not any(
            f["severity"] in ("warn", "fail") for f in doc.get("findings", [])):
        found.setdefault("topo-healthy", "pass")
    return found


def judge(label, rc, doc):
    if rc not in (0, 1) or doc is None or (isinstance(doc, dict) and doc.get("lines_read", 1) == 0):
        return "refused", {}
    found = classes_of(doc)
    fatal = bool(label.get("fatal"))
    exit_ok = (rc == 1) == fatal
    want = label.get("classes") or ["other"]
    main = want[0]
    alarm = any(s in ("warn", "fail") for s in found.values())
    if main in HEALTHY:
        hit = not alarm and (main != "nccl-tests-ok" or "nccl-tests-ok" in found or "nccl-tests-low-bandwidth" not in found)
    elif main == "other":
        hit = fatal == (rc == 1) and (alarm or not fatal)
    else:
        hit = main in found
    if exit_ok and hit:
        return "right", found
    if (exit_ok and any(c in found for c in want[1:])) or hit:
        return "partial", found
    return "wrong", found


def run_json(cmd):
    """A gpusqueeze command with --json: its exit code, its document (None where it printed none or not JSON) and the
    start of its stderr. oom_corpus.py runs `memory` through it too."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    try:
        doc = json.loads(p.stdout) if p.stdout.strip() else None
    except json.JSONDecodeError:
        doc = None
    return p.returncode, doc, p.stderr.strip()[:200]


def run(binary, label, path):
    if label.get("reader") == "topo":
        return run_json([binary, "topo", "--from", path, "--json"])
    return run_json([binary, "nccl", "analyze", path, "--json"])


def write_tables(out, text, totals, rows):
    """table.md and table.json under out (made if missing)."""
    os.makedirs(out, exist_ok=True)
    open(os.path.join(out, "table.md"), "w").write(text)
    json.dump({"totals": totals, "rows": rows}, open(os.path.join(out, "table.json"), "w"), indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "gpusqueeze"))
    ap.add_argument("--corpus", default=os.path.join(ROOT, "tests", "data", "triage"))
    ap.add_argument("--out", default=None, help="folder for table.md and table.json (default: print only)")
    ap.add_argument("--min-right", type=float, default=0.0, help="exit 1 when fewer are right (share, 0..1)")
    ap.add_argument("--max-fatal-exit0", type=int, default=0, help="exit 1 when more fatal logs exit 0")
    args = ap.parse_args()
    rows = []
    for lab_path in sorted(glob.glob(os.path.join(args.corpus, "*", "*.label.json"))):
        label = json.load(open(lab_path))
        log_path = lab_path[: -len(".label.json")] + ".log"
        if not os.path.exists(log_path):
            log_path = lab_path[: -len(".label.json")] + ".txt"
        if not os.path.exists(log_path) and os.path.isdir(lab_path[: -len(".label.json")]):
            log_path = lab_path[: -len(".label.json")]  # a folder of per-rank files (Flight Recorder dumps)
        rc, doc, err = run(args.bin, label, log_path)
        verdict, found = judge(label, rc, doc)
        rows.append({"file": os.path.relpath(log_path, args.corpus), "label": label.get("classes", []),
                     "fatal": bool(label.get("fatal")), "fatal_in_log": label.get("fatal_in_log", True), "exit": rc, "found": sorted(found), "verdict": verdict,
                     "error": err if rc == 2 else "", "source": label.get("source", "")})
    totals = collections.Counter(r["verdict"] for r in rows)
    n = len(rows) or 1
    fatal_exit0 = [r for r in rows if r["fatal"] and r["exit"] == 0 and r["fatal_in_log"]]
    unseen_exit0 = [r for r in rows if r["fatal"] and r["exit"] == 0 and not r["fatal_in_log"]]
    refused = [r for r in rows if r["verdict"] == "refused"]
    lines = ["# Triage corpus: what each real log shows, and what `gpusqueeze` says of it", "",
             f"{len(rows)} logs; right {totals['right']} ({totals['right'] / n:.1%}), partial {totals['partial']}, "
             f"wrong {totals['wrong']}, refused {totals['refused']}; fatal logs that exited 0: {len(fatal_exit0)}"
             + (f" (and {len(unseen_exit0)} whose failure only the thread states)" if unseen_exit0 else "") + ".",
             "", "Re-made by `python3 bench/triage/corpus.py --out <this folder>` (labels: tests/data/triage/README.md).",
             "", "| folder | logs | right | partial | wrong | refused |", "|---|---|---|---|---|---|"]
    by_folder = collections.defaultdict(collections.Counter)
    for r in rows:
        by_folder[r["file"].split("/")[0]][r["verdict"]] += 1
    for folder, c in sorted(by_folder.items()):
        lines.append(f"| {folder} | {sum(c.values())} | {c['right']} | {c['partial']} | {c['wrong']} | {c['refused']} |")
    lines += ["", "| file | label (fatal) | exit | classes found | verdict |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| [{r['file']}]({r['source']}) | {', '.join(r['label'])}"
                     f"{(' (fatal)' if r['fatal_in_log'] else ' (fatal, not in the log)') if r['fatal'] else ''} | "
                     f"{r['exit']} | {', '.join(r['found']) or '-'}{' — ' + r['error'] if r['error'] else ''} | "
                     f"{r['verdict']} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        write_tables(args.out, text, totals, rows)
    print(text if not args.out else "\n".join(lines[:3]))
    for r in rows:
        if r["verdict"] != "right":
            print(f"  {r['verdict']:8} {r['file']}: label {r['label']}{' fatal' if r['fatal'] else ''}, exit {r['exit']}, "
                  f"found {r['found']}", file=sys.stderr)
    bad = len(fatal_exit0) > args.max_fatal_exit0 or refused or totals["right"] / n < args.min_right
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
