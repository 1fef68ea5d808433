#!/usr/bin/env bash
# Device run for `gpusqueeze memory`: a PyTorch program that fragments the caching allocator on purpose
# (bench/triage/fragment.py), once as is and once with expandable segments; `gpusqueeze memory` on both snapshots
# (text and JSON). Expected: the first reports memory-fragmented with a fragmented ratio well above the second's.
# Usage on the device with the build carried: BUILD=.carry/build bench/device/memory.sh (writes $OUT).
LOG=memory.log source "$(dirname "$0")/lib.sh"
run python3 bench/triage/fragment.py "$OUT/fragmented.pickle"
run env PYTORCH_ALLOC_CONF=expandable_segments:True PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
  python3 bench/triage/fragment.py "$OUT/expandable.pickle"
for s in fragmented expandable; do
  run $B memory "$OUT/$s.pickle"
  $B memory --json "$OUT/$s.pickle" >"$OUT/$s.memory.json" 2>>"$log"
done
python3 - "$OUT" <<'PY' | tee -a "$log"
import json, sys
for s in ("fragmented", "expandable"):
    d = json.load(open(f"{sys.argv[1]}/{s}.memory.json"))["devices"][0]
    print(f"{s:12s} reserved {d['reserved_bytes'] / 2**20:9.1f} MiB  fragmented ratio {d['fragmented_ratio']:.3f}  "
          f"cached ratio {d['cached_ratio']:.3f}  expandable segments {d['expandable_segments']}")
PY
