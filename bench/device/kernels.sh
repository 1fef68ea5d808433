#!/usr/bin/env bash
# Device run for the kernel library (steps 3 and 4), all figures from one call: the kernels' GPU tests, `gpusqueeze
# kernels` (ours vs naive vs cudaMemcpy D2D), PyTorch eager and torch.compile through the Python module, `occupancy`
# of our library next to the runtime's numbers, and Nsight Compute's achieved occupancy and DRAM throughput.
# Usage on the device with the build carried: BUILD=.carry/build bench/device/kernels.sh (writes $OUT); TORCH_WIDTHS
# sets the row widths of the PyTorch comparison (default the issue's sweep, 256-65536), TORCH_ROUNDS its rounds
# (default 5: contenders shuffled each round, ours / torch.compile with a 95% interval).
set -uo pipefail
LOG=kernels.log source "$(dirname "$0")/lib.sh"
export PATH=$PATH:/usr/local/cuda/bin
export GSQ_KERNELS_LIBRARY=$PWD/$BUILD/lib/libgsqkernels.so
[ "${SKIP_TESTS:-0}" = 1 ] || run ctest --test-dir /work/main/build -R '^(KernelsGpu|KernelsAbi|Occupancy|Philox|Dropout|RowPlan|References)\.' --output-on-failure
run $B kernels --max-seconds 0.5 -o "$OUT/kernels.json"
run python3 bench/kernels/torch_compare.py --out "$OUT/torch.json" --compile-budget-s "${COMPILE_BUDGET:-300}" \
  --widths "${TORCH_WIDTHS:-256,512,1024,2048,4096,8192,16384,32768,65536}" --rounds "${TORCH_ROUNDS:-5}" --reps 10
run $B occupancy "$GSQ_KERNELS_LIBRARY" --json
$B occupancy "$GSQ_KERNELS_LIBRARY" --json > "$OUT/occupancy.json" 2>&1
if command -v ncu >/dev/null; then
  run ncu --clock-control none --kernel-name 'regex:row_kernel|transpose_kernel' --csv \
    --metrics sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,launch__registers_per_thread,launch__block_size,launch__occupancy_limit_registers \
    python3 bench/kernels/ncu_workload.py
fi
grep -E '^\$|exit|tests passed|FAILED|^\| kernels\.|^\| (layer_norm|rms_norm|softmax|softmax_dropout|nchw_to_nhwc) ' "$log" | tail -n 90
