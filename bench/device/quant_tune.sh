#!/usr/bin/env bash
# Device run that picks the W4A16 dispatch: the kernels' and quantization's GPU tests, then quant_tune (every
# configuration of the W4A16 kernels next to the shipped dispatch, cuBLAS fp16 and cudaMemcpy D2D, one process) on
# symmetric weights over all decoding shapes, on asymmetric weights at 8192x8192 (the Σx term's cost), and the W8A16
# warp kernel's configurations.
# Usage on the device with the build carried: BUILD=.carry/build bench/device/quant_tune.sh (writes $OUT);
# SKIP_SWEEP=1 leaves the sweep out, SKIP_INT8=1 its W8A16 part; PROFILE=1 adds Nsight Compute's view of the M = 1
# kernels (PROFILE_KERNELS: "name:quant_tune-args ..."; the first launch of each, i.e. the shipped dispatch's).
set -uo pipefail
LOG=quant_tune.log source "$(dirname "$0")/lib.sh"
export GSQ_KERNELS_LIBRARY=$PWD/$BUILD/lib/libgsqkernels.so
[ "${SKIP_TESTS:-0}" = 1 ] || run ctest --test-dir /work/main/build -R '^(KernelsGpu|QuantGpu)\.' --output-on-failure
if [ "${SKIP_SWEEP:-0}" != 1 ]; then
  run $BUILD/bench/tune/quant_tune ${TUNE_ARGS:-}
  cp "$log" "$OUT/tune-symmetric.md"
  run $BUILD/bench/tune/quant_tune --asymmetric --shapes 8192x8192 --m 1,4,16
  [ "${SKIP_INT8:-0}" = 1 ] || run $BUILD/bench/tune/quant_tune --int8 ${TUNE_ARGS:-}
fi
if [ "${PROFILE:-0}" = 1 ] && command -v ncu >/dev/null; then  # where the M = 1 warp kernels spend their time
  for kind in ${PROFILE_KERNELS:-w4a16_mma_kernel: w4a16_warp_kernel: w8a16_warp_kernel:--int8}; do
    run ncu --clock-control none -k "regex:${kind%%:*}" -c 1 --section SpeedOfLight --section WarpStateStats \
      --section SchedulerStats --section InstructionStats --section Occupancy --section LaunchStats \
      $BUILD/bench/tune/quant_tune ${kind#*:} --shapes 8192x8192 --m 1 --launches 5 --reps 1
  done
fi
[ -n "${KERNELS_ARGS:-}" ] && run $B kernels $KERNELS_ARGS -o "$OUT/kernels.json"
grep -E '^\$|exit|tests passed|FAILED|Failure|best:|cuBLAS|memcpy|shipped|^\| kernels\.nc|^\| kernels\.nh|^\| (nchw_to_nhwc|nhwc_to_nchw) ' "$log" | tail -n 120
