#!/usr/bin/env bash
# One device call for the one-GPU device-run issue, what fits in ten minutes: every gpu-labelled test (run 8),
# `gpusqueeze report` end to end on the live GPU with its wall time (run 2), the allocator triage (memory.sh) and the
# clock-jitter triage (jitter.sh, 45 s of GEMMs) of run 3. Logs and small outputs are packed into $OUT/session.tgz
# (at most eight files come back). Never changes a GPU setting.
# Usage on the device with the trimmed build carried as .carry/build.txz (gpusqueeze, lib/, share/, the gpu test
# binaries and tests/*.cmake, stripped): bench/device/session.sh
set -uo pipefail
# The trimmed build travels xz-compressed (the tree and the carry share 64 MiB): unpack it first.
[ -f .carry/build.txz ] && [ ! -d .carry/build ] && tar xJf .carry/build.txz -C .carry
export BUILD=${BUILD:-.carry/build} OUT=${OUT:-/tmp/gsq-out}
LOG=session.log source "$(dirname "$0")/lib.sh"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
run timeout 300 ctest --test-dir /work/main/build -L gpu --output-on-failure
start=$(date +%s%N)
run timeout 120 $B report -o "$OUT/report-live" --trace tests/fixtures/torch-host-slow.json.gz
echo "report wall: $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$log"
run timeout 120 $B probe p2p --p2p-mib 64   # one GPU: the on-device copy, and what needs more
run timeout 200 $B probe nccl --max-bytes 268435456
OUT=$OUT bash "$(dirname "$0")/tune.sh" || echo "tune.sh exit $?" | tee -a "$log"  # capture and verify only
OUT=$OUT timeout 200 bash "$(dirname "$0")/ops.sh" || echo "ops.sh exit $?" | tee -a "$log"  # torch.ops cost, compile
if [ -z "${QUICK:-}" ]; then  # QUICK=1: the tests and the report only
  OUT=$OUT timeout 150 bash "$(dirname "$0")/memory.sh" || echo "memory.sh exit $?" | tee -a "$log"
  OUT=$OUT timeout 300 bash "$(dirname "$0")/coldstart.sh" || echo "coldstart.sh exit $?" | tee -a "$log"
  JITTER_SECONDS=45 OUT=$OUT timeout 200 bash "$(dirname "$0")/jitter.sh" || echo "jitter.sh exit $?" | tee -a "$log"
fi
cd "$OUT" && tar czf session.tgz --exclude='*.pickle' --exclude='*.gsqt' --exclude=session.tgz . 2>/dev/null
ls -la "$OUT" | tee -a "$log"
grep -E 'tests passed|tests failed|report wall|\[exit' "$log" | tail -n 20
