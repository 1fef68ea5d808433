#!/usr/bin/env bash
# A device pass for the packaging and analyzer issues: the C++ operator registration built against the device's
# PyTorch and its host cost per call against the Python registration, the ctypes path and the torch functions (ops.sh);
# the layout and copy-stream before/after pairs with the analyzer's predictions; the live report with its own
# measurements. At most eight files come back: ops.log, pairs.json, the two traces, pass3.log, report.tgz.
# Usage: run(command="bash bench/device/pass3.sh", carry=[".carry/build.txz"])
set -uo pipefail
NAME=pass3 source "$(dirname "$0")/carried.sh"
OUT=$FINAL bash bench/device/ops.sh >/dev/null 2>&1; grep -E 'backend|us/call|bit-equal|DIFFERENT|max abs|\[exit' "$FINAL/ops.log"
run timeout 240 python3 bench/device/record_pairs.py "$FINAL" layout copystream
run $B analyze --what-if layout "$FINAL/pair-layout-before.json.gz"
run $B analyze --what-if pinned,sync "$FINAL/pair-copystream-before.json.gz"
live_report 90
cp "$log" "$FINAL/"
grep -E '^(layout|copystream):|\| (as recorded|layout|pinned|sync|pinned,sync) |report wall|\[exit' "$log"
