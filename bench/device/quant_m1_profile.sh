#!/usr/bin/env bash
# Where W4A16 at M = 1 loses to the copy floor (issue: W4A16 at its floor for M = 1…16), one call: Nsight Compute's
# view (clocks as lent) of the bf16 and fp16 kernels the dispatch picks at M = 1 (CUDA-core warp kernel) and M = 3
# (tensor-core kernel), and of PyTorch's tinygemm beside them, at 8192x8192; then the timed comparison at M = 1…3 in
# both dtypes. Usage: scripts/device_carry.sh, then run(command="bash bench/device/quant_m1_profile.sh",
# carry=[".carry/build.txz"]).
set -uo pipefail
NAME=quant_m1_profile source "$(dirname "$0")/carried.sh"
export GSQ_KERNELS_LIBRARY=$PWD/$BUILD/lib/libgsqkernels.so PYTHONUNBUFFERED=1
for dt in bfloat16 float16; do
  for m in 1 3; do
    run timeout 120 ncu --clock-control none -k 'regex:w4a16_(warp|mma)|tinygemm' -c 2 --section SpeedOfLight \
      --section WarpStateStats --section SchedulerStats --section InstructionStats --section Occupancy \
      --section LaunchStats --section MemoryWorkloadAnalysis \
      python3 bench/kernels/quant_compare.py --dtype $dt --shapes 8192x8192 --m $m
  done
  run timeout 100 python3 bench/kernels/quant_compare.py --dtype $dt --shapes 8192x8192,28672x8192 --m 1,2,3 \
    --out "$FINAL/quant-$dt.json"
done
cp "$log" "$FINAL/"
grep -E '^\$|exit|w4a16_|tinygemm|Duration|DRAM Throughput|Issued Warp|Eligible Warps|Active Warps|No Eligible|Registers Per|Stall|Warp Cycles Per Issued|Executed Ipc A|^\| ' "$log" | head -150
