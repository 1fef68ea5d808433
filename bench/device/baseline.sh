#!/usr/bin/env bash
# Device run for step 1: GPU tests, `bench core` twice, compare (SAME expected), a deliberately slower copy kernel
# (SLOWER expected, exit 1), stress and warmup sets, and the D2D copy timed by torch.cuda.Event and triton do_bench.
# Usage on the device, from the repo root with build/ carried: bench/device/baseline.sh   (writes under $OUT)
set -uo pipefail
OUT=${OUT:-/tmp/gsq-out}
mkdir -p "$OUT" /work
[ -e /work/main ] || ln -sfn "$PWD" /work/main   # ctest files carry the build machine's absolute paths
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=build/gpusqueeze
log=$OUT/baseline.log
run() { echo "\$ $*" | tee -a "$log"; "$@" >>"$log" 2>&1; rc=$?; echo "[exit $rc]" | tee -a "$log"; }
{ echo "date: $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv; } >>"$log"
run ctest --test-dir /work/main/build -L gpu --output-on-failure
run $B bench core -o "$OUT/run1.json"
run $B bench core -o "$OUT/run2.json"
run $B compare "$OUT/run1.json" "$OUT/run2.json"
run $B bench core --no-pin -o /tmp/nopin.json
run $B compare "$OUT/run2.json" /tmp/nopin.json
run $B bench core -b copy.kernel -a grid_fraction=0.5 -o "$OUT/half.json"
run $B compare "$OUT/run1.json" "$OUT/half.json" --ignore-axis grid_fraction
run $B bench core -b copy.kernel -a grid_fraction=0.125 -a bytes=1Gi --mode cold -o "$OUT/eighth.json"
run $B compare "$OUT/run1.json" "$OUT/eighth.json" --ignore-axis grid_fraction
run $B bench core -b launch.empty --set stress --mode cold
run $B bench core -b 'copy.memcpy|gemm' --set warmup
run $B bench core -b copy.memcpy_d2d -a bytes=1Gi --mode cold -o "$OUT/gsq-d2d.json"
run python3 bench/device/d2d_agreement.py "$OUT/gsq-d2d.json" "$OUT/torch-d2d.json"
run python3 bench/device/summarize_baseline.py "$OUT/run1.json" "$OUT/run2.json"
grep -E '^\$|exit|SAME|SLOWER|FASTER|UNCERTAIN|regression|REGRESSION|largest|ratio to|gpusqueeze bench|torch.cuda|triton' "$log" | tail -n 80
