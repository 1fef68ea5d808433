#!/usr/bin/env bash
# A short device pass whose outputs travel as one archive (at most eight files come back from a call): the gpu-labelled
# tests, probe p2p and probe nccl on the lent GPU(s), the clock-jitter triage over 20 s of GEMMs. Never changes a GPU
# setting. Usage: run(command="bash bench/device/followup.sh", carry=[".carry/build.txz"])
set -uo pipefail
[ -f .carry/build.txz ] && [ ! -d .carry/build ] && tar xJf .carry/build.txz -C .carry
FINAL=${OUT:-/tmp/gsq-out}
export BUILD=.carry/build OUT=/tmp/gsq-followup
rm -rf "$OUT" && mkdir -p "$OUT"
LOG=followup.log source "$(dirname "$0")/lib.sh"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
run timeout 240 ctest --test-dir /work/main/build -L gpu --output-on-failure
run timeout 120 $B probe p2p --p2p-mib 256
$B probe p2p --format json --p2p-mib 256 >"$OUT/p2p.json" 2>>"$log"
run $B probe nccl --nccl-library
run timeout 200 $B probe nccl --max-bytes 1073741824
run timeout 120 $B jitter -o "$OUT/gemm.gsqt" -- python3 bench/triage/gemm_loop.py --seconds 20
run $B jitter "$OUT/gemm.gsqt"
mkdir -p "$FINAL"
tar czf "$FINAL/followup.tgz" -C "$OUT" --exclude='*.gsqt' .
cp "$log" "$FINAL/"
grep -E 'tests passed|tests failed|\[exit' "$log"
