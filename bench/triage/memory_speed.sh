#!/usr/bin/env bash
# Speed of `gpusqueeze memory` on the largest public snapshot (1,010 segments, 19,342 trace entries), side by side with
# what a user would do instead without PyTorch installed: Python's pickle.load and the same sums (load only, so the
# comparison favours Python). Usage: bench/triage/memory_speed.sh [SNAPSHOT] (from the project root, after a build).
set -euo pipefail
snap=${1:-../shared/data/pytorch-snapshots/kk_fullstep_1010_segments.pickle}
echo "date: $(date -u +%FT%TZ); machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); build: $(git rev-parse --short HEAD)"
echo "snapshot: $snap ($(stat -c %s "$snap") bytes)"
py='import pickle,sys; d=pickle.load(open(sys.argv[1],"rb")); r=sum(s["total_size"] for s in d["segments"]); a=sum(b["size"] for s in d["segments"] for b in s["blocks"] if b["state"]=="active_allocated"); print(r, a)'
for round in 1 2 3 4 5; do
  /usr/bin/time -f "gpusqueeze memory --json: %e s, %M KB" build/gpusqueeze memory --json "$snap" >/dev/null
  /usr/bin/time -f "python3 pickle.load + sums: %e s, %M KB" python3 -c "$py" "$snap" >/dev/null
done 2>&1
