#!/usr/bin/env bash
# Device call 1 (exploration): copyx7 (flat copy variants vs cudaMemcpy D2D at 1/4/8 GiB); row_tune of the norms at
# 8192-32768 with the two-read kernel's "affine ahead" shapes; Nsight Compute on ours vs torch.compile's kernel for
# LayerNorm and RMSNorm 8192 x 16384 and LayerNorm 16384 x 8192. Build carried gzipped in .carry/build.
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze .carry/build/tests/* .carry/build/copyx7
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card.txt"
LOG=run1.log source bench/device/lib.sh
run .carry/build/copyx7
run $BUILD/tests/row_tune --ops layer_norm,rms_norm --widths 8192,16384,32768
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__block_size,launch__grid_size
M=$M,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,lts__t_sector_hit_rate.pct
M=$M,l1tex__t_sector_hit_rate.pct,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static
for spec in "layer_norm 16384" "rms_norm 16384" "layer_norm 8192"; do
  set -- $spec
  run ncu --clock-control none --profile-from-start off --csv --metrics $M \
    python3 bench/kernels/ncu_versus_compile.py --op $1 --cols $2
done
run python3 bench/kernels/torch_compare.py --widths 8192,16384 --out $OUT/torch.json
grep -E '^\$|exit|x memcpy|best:|shipped plan|affine ahead|^\| (layer_norm|rms_norm) ' "$log" | tail -n 120
