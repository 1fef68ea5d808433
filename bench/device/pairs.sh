#!/usr/bin/env bash
# The what-if check's device pass: record_pairs.py (three before/after pairs: traces of "before", untraced step times of
# both), then the analyzer's prediction for each pair on the spot; and the clock-jitter triage over 20 s of GEMMs.
# At most eight files come back: the three traces, pairs.json, pairs.log, jitter.json and report.tgz (the live report
# with its own memory and PCIe measurements).
# Usage: run(command="bash bench/device/pairs.sh", carry=[".carry/build.txz"])
set -uo pipefail
NAME=pairs source "$(dirname "$0")/carried.sh"
run timeout 300 python3 bench/device/record_pairs.py "$FINAL"
for p in launch:graphs pinned:pinned sync:sync; do
  run $B analyze --what-if "${p#*:}" "$FINAL/pair-${p%%:*}-before.json.gz"
done
run timeout 90 $B jitter -o "$OUT/gemm.gsqt" -- python3 bench/triage/gemm_loop.py --seconds 20
$B jitter --json "$OUT/gemm.gsqt" >"$FINAL/jitter.json" 2>>"$log"
run $B jitter "$OUT/gemm.gsqt"
live_report 60
cp "$log" "$FINAL/"
grep -E '^(launch|pinned|sync):|\| (graphs|pinned|sync) |report wall|\[exit' "$log"
