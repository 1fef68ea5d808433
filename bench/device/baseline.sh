#!/usr/bin/env bash
# Device run for step 1: GPU tests, `bench core` twice, compare (SAME expected), a deliberately slower copy kernel
# (SLOWER expected, exit 1), stress and warmup sets, and the D2D copy timed by torch.cuda.Event and triton do_bench.
# Usage on the device, from the repo root with build/ carried: bench/device/baseline.sh   (writes under $OUT)
set -uo pipefail
LOG=baseline.log source "$(dirname "$0")/lib.sh"
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
