#!/usr/bin/env bash
# The row kernels' few-row gap, looked into (issue: kernels at every shape): what each call launches and its device
# time beside Liger-Kernel's (bench/kernels/row_probe.py), then Nsight Compute's view of LayerNorm's and RMSNorm's
# kernels at 1 × 4096 and 1 × 768 bf16 (launch, occupancy, warp states).
# Usage: KERNELS_ONLY=1 scripts/device_carry.sh, then
#   run(command="bash bench/device/row_probe.sh", carry=[".carry/build.txz", ".whl"])
set -uo pipefail
NAME=row_probe source "$(dirname "$0")/carried.sh"
export GSQ_KERNELS_LIBRARY=$PWD/$BUILD/lib/libgsqkernels.so PYTHONUNBUFFERED=1
install_wheels
run timeout 150 python3 bench/kernels/row_probe.py ${PROBE_ARGS:-} --out "$FINAL/row-probe.json"
for shape in ${NCU_SHAPES:-1x4096 1x768}; do
  for op in layer_norm rms_norm; do
    run timeout 60 ncu --clock-control none -k 'regex:row_kernel' -c 1 --section SpeedOfLight --section LaunchStats \
      --section Occupancy --section WarpStateStats --section SchedulerStats \
      python3 bench/kernels/row_probe.py --shapes "$shape" --ops $op --calls 1 --plain
  done
done
cp "$log" "$FINAL/"
