#!/usr/bin/env bash
# The traced program ends as it does untraced whatever its threads do at exit: bench/teardown/daemon_copy.py (a daemon
# thread inside CUDA copies when the interpreter exits) run untraced, then N times under `gpusqueeze trace` (default
# 50): every traced run must end with the untraced run's exit status, print the same "main done", and leave a trace
# that reads. Needs an NVIDIA GPU and PyTorch with CUDA; skips (77) with the reason otherwise. CTest: trace_teardown.
# Usage: tests/trace/teardown_daemon.sh GPUSQUEEZE [N]
set -uo pipefail
B=$1
N=${2:-50}
here=$(cd "$(dirname "$0")/../.." && pwd)
app=$here/bench/teardown/daemon_copy.py
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
  { echo "SKIP: no PyTorch with a usable CUDA GPU here"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$app" 0.3 >"$work/out" 2>"$work/err"
want=$?
echo "untraced: exit $want, $(cat "$work/out")"
bad=0
for i in $(seq 1 "$N"); do
  rm -f "$work/t.gsqt"
  "$B" trace -o "$work/t.gsqt" -- python3 "$app" 0.3 >"$work/out" 2>"$work/err"
  rc=$?
  "$B" trace info "$work/t.gsqt" >"$work/info" 2>&1
  readable=$?
  if [ "$rc" != "$want" ] || [ "$readable" != 0 ] || ! grep -q "main done" "$work/out"; then
    bad=$((bad + 1))
    echo "run $i: exit $rc (untraced $want), trace info exit $readable; stderr: $(tail -n 3 "$work/err" | tr '\n' ' ')"
  fi
done
echo "traced: $((N - bad)) of $N runs ended as untraced"
[ "$bad" = 0 ]
