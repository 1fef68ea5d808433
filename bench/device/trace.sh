#!/usr/bin/env bash
# Device run for the tracer (step 2): its GPU tests, the fixture traces CPU tests read, and the overhead benchmark
# against torch.profiler, all in one call. Usage on the device with the build carried: bench/device/trace.sh
set -uo pipefail
LOG=trace.log source "$(dirname "$0")/lib.sh"
ROUNDS=${ROUNDS:-7}
run ctest --test-dir /work/main/build -R "${TESTS:-TraceGpu}" --output-on-failure
run $B trace -o "${TARGET_OUT:-$OUT}/h200-trace-target.gsqt" -- "$BUILD/tests/trace_target" 20 3 4 5
run $B trace info "${TARGET_OUT:-$OUT}/h200-trace-target.gsqt"
run $B trace -o "$OUT/h200-torch-host.gsqt" -- python3 bench/trace/workloads.py host plain
run $B analyze "$OUT/h200-torch-host.gsqt"
run $B trace export --chrome "$OUT/h200-torch-host.gsqt" -o /tmp/host.json
run python3 bench/trace/overhead.py "$B" /tmp/gsq-overhead --rounds "$ROUNDS"
cp /tmp/gsq-overhead/overhead.json "$OUT/" 2>/dev/null
grep -E '^\$|exit|tests passed|FAILED|kernels \(|^\| |overhead /' "$log" | tail -n 40
