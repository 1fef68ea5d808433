#!/usr/bin/env bash
# Device run for step 3/5 ceilings, all figures from one call: GPU tests, `probe mem` (read, copy with and without
# streaming hints, cudaMemcpy D2D as the reference, 16-byte accesses), `probe l2`, `probe overlap`, `probe launch`,
# `probe alloc`. PROBE_PCIE=1 adds `probe pcie` and a plain torch pinned-copy loop as its reference.
# Usage on the device with the build carried: bench/device/probes.sh (writes $OUT)
set -uo pipefail
LOG=probes.log source "$(dirname "$0")/lib.sh"
[ "${SKIP_TESTS:-0}" = 1 ] || run ctest --test-dir /work/main/build -L gpu --output-on-failure
run $B probe mem -b 'mem\.(read|copy|memcpy_d2d)' -a width=16 --max-seconds 1 -o "$OUT/mem.json"
run $B probe l2 --max-seconds 1 -o "$OUT/l2.json"
run $B probe overlap --max-seconds 2 -o "$OUT/overlap.json"
run $B probe launch -o /tmp/launch.json
run $B probe alloc -o /tmp/alloc.json
python3 -c "import json; json.dump({'launch': json.load(open('/tmp/launch.json')), 'alloc': json.load(open('/tmp/alloc.json'))}, open('$OUT/host-costs.json', 'w'), indent=1)"
if [ "${PROBE_PCIE:-0}" = 1 ]; then
  run $B probe pcie --max-seconds 1 -o "$OUT/pcie.json"
fi
grep -E '^\$|exit|tests passed|FAILED|L2 →|overlap,|^\| (mem|l2|overlap|launch|sync|alloc)\.[a-zA-Z0-9_.+]+ +\||cudaMemcpy +\|' "$log" | tail -n 80
