#!/usr/bin/env bash
# W4A16 at M = 1 and 2 against its copy floor (issue: W4A16 at its floor for M = 1…16), one call: the kernels' and
# quantization's GPU tests; quant_tune's sweep at M = 1, 2 with bf16 and with fp16 activations (every warp and
# tensor-core configuration beside the shipped dispatch, weights rotated past the L2); bench/kernels/quant_compare.py
# at M = 1…16 in both dtypes (tinygemm and the copy floor beside it); Nsight Compute's view of the bf16 M = 1 kernel.
# Usage: scripts/device_carry.sh, then run(command="bash bench/device/quant_m1.sh", carry=[".carry/build.txz"]).
set -uo pipefail
NAME=quant_m1 source "$(dirname "$0")/carried.sh"
export GSQ_KERNELS_LIBRARY=$PWD/$BUILD/lib/libgsqkernels.so PYTHONUNBUFFERED=1
SHAPES=${QUANT_SHAPES:-8192x8192,28672x8192,8192x28672}
run timeout 150 ctest --test-dir /work/main/build -R '^(KernelsGpu|QuantGpu)\.' --output-on-failure
for dt in --bf16 ""; do
  run timeout 120 $BUILD/bench/tune/quant_tune $dt --shapes "$SHAPES" --m 1,2 --reps 5
done
for dt in bfloat16 float16; do
  run timeout 150 python3 bench/kernels/quant_compare.py --dtype $dt --shapes "$SHAPES" --m 1,2,3,4,8,16 \
    --out "$FINAL/quant-$dt.json"
done
run timeout 90 ncu --clock-control none -k 'regex:w4a16_warp' -c 1 --section SpeedOfLight --section WarpStateStats \
  --section SchedulerStats --section Occupancy python3 bench/kernels/quant_compare.py --dtype bfloat16 \
  --shapes 8192x8192 --m 1
cp "$log" "$FINAL/"
grep -E '^\$|exit|tests passed|FAILED|Failure|best:|shipped|read floor|^\| [0-9]+×|Duration|DRAM Throughput|Issued Warp' "$log" | head -150
