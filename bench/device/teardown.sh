#!/usr/bin/env bash
# The traced program must end as it does untraced whatever its threads do at exit: bench/teardown/daemon_copy.py (a
# daemon thread inside CUDA copies when the interpreter exits) run N times untraced and N times under `gpusqueeze
# trace`, interleaved; each run's exit status and whether the trace file is complete. Writes teardown.jsonl and
# teardown.log to $OUT. Needs the carried build (scripts/device_carry.sh).
# Usage: run(command="N=50 bash bench/device/teardown.sh", carry=[".carry/build.txz"])
set -uo pipefail
[ -f .carry/build.txz ] && [ ! -d .carry/build ] && tar xJf .carry/build.txz -C .carry
BUILD=.carry/build LOG=teardown.log source "$(dirname "$0")/lib.sh"  # $OUT, $B, $log and its header
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:$LD_LIBRARY_PATH
python3 -c 'import torch; print("torch", torch.__version__)' >>"$log" 2>&1
FINAL=$OUT
mkdir -p /tmp/td
end=$(( $(date +%s) + ${BUDGET_S:-500} ))
for i in $(seq 1 "${N:-50}"); do
  for mode in untraced traced; do
    [ "$(date +%s)" -lt "$end" ] || { echo "run $i $mode skipped (budget)" >>"$log"; continue; }
    if [ "$mode" = untraced ]; then
      timeout 60 python3 bench/teardown/daemon_copy.py 0.5 >/tmp/td/out 2>/tmp/td/err; rc=$?
      complete=null
    else
      rm -f /tmp/td/t.gsqt
      timeout 60 $B trace -o /tmp/td/t.gsqt -- python3 bench/teardown/daemon_copy.py 0.5 >/tmp/td/out 2>/tmp/td/err; rc=$?
      $B trace info /tmp/td/t.gsqt >/tmp/td/info 2>&1 && complete=true || complete=false
    fi
    printf '{"run": %d, "mode": "%s", "rc": %d, "trace_readable": %s, "stdout": "%s", "stderr_tail": "%s"}\n' \
      "$i" "$mode" "$rc" "$complete" "$(tr -d '\n"\\' </tmp/td/out | tail -c 80)" \
      "$(tail -n 2 /tmp/td/err | tr -d '\n"\\' | tail -c 200)" >>"$FINAL/teardown.jsonl"
  done
done
python3 - "$FINAL/teardown.jsonl" <<'PY' | tee -a "$log"
import json, sys, collections
c = collections.Counter()
for line in open(sys.argv[1]):
    r = json.loads(line)
    c[(r["mode"], r["rc"])] += 1
for (mode, rc), n in sorted(c.items()):
    print(f"{mode}: exit {rc} in {n} runs")
PY
