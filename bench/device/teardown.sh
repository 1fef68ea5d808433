#!/usr/bin/env bash
# The traced program must end as it does untraced whatever its threads do at exit: bench/teardown/daemon_copy.py (a
# daemon thread inside CUDA copies when the interpreter exits) run N times untraced and N times under `gpusqueeze
# trace`, interleaved; each run's exit status and whether the trace file is complete. Writes teardown.jsonl and
# teardown.log to $OUT. Needs the carried build (scripts/device_carry.sh).
# Usage: run(command="N=50 bash bench/device/teardown.sh", carry=[".carry/build.txz"])
set -uo pipefail
FINAL=${OUT:-/tmp/gsq-out}
mkdir -p "$FINAL" /tmp/td
log=$FINAL/teardown.log
{ echo "date: $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,uuid,driver_version --format=csv;
  python3 -c 'import torch; print("torch", torch.__version__)'; } 2>&1 | tee "$log"
[ -f .carry/build.txz ] && [ ! -d .carry/build ] && tar xJf .carry/build.txz -C .carry
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
B=.carry/build/gpusqueeze
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
