#!/usr/bin/env bash
# Device run for `gpusqueeze jitter`: two minutes of bf16 GEMMs (bench/triage/gemm_loop.py) sampled at 10 Hz,
# the report as text and JSON, the recording exported for Perfetto; then a bench run's P99 outliers checked against its
# throttle flags. Expected on an H100/H200 at 700 W: power-capped most of the time, no thermal slowdown in a cool
# chassis. Usage on the device with the build carried: BUILD=.carry/build bench/device/jitter.sh (writes $OUT).
LOG=jitter.log source "$(dirname "$0")/lib.sh"
run $B jitter -o "$OUT/gemm.gsqt" -- python3 bench/triage/gemm_loop.py --seconds ${JITTER_SECONDS:-120}
$B jitter --json "$OUT/gemm.gsqt" >"$OUT/gemm.jitter.json" 2>>"$log"
run $B trace export --chrome "$OUT/gemm.gsqt" -o "$OUT/gemm.chrome.json"
run $B bench core -b gemm -a mnk=8192 --set stress -o "$OUT/gemm-stress.json"
run $B jitter --bench "$OUT/gemm-stress.json"
