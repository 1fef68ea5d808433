#!/usr/bin/env bash
# Device call 4: Nsight Compute on ours vs torch.compile's kernel where the rotating-rounds comparison (call 3) left
# ours behind: LayerNorm 256 and 1024, RMSNorm 512 and 8192 (bf16, 128 Mi elements).
set -uo pipefail
gunzip -rf .carry/build && chmod +x .carry/build/gpusqueeze .carry/build/tests/*
export BUILD=.carry/build GSQ_KERNELS_LIBRARY=$PWD/.carry/build/lib/libgsqkernels.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card4.txt"
LOG=run4.log source bench/device/lib.sh
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__block_size,launch__grid_size
M=$M,launch__occupancy_limit_registers,launch__waves_per_multiprocessor,lts__t_sector_hit_rate.pct
M=$M,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
M=$M,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
M=$M,smsp__inst_executed.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum
M=$M,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
for spec in "layer_norm 256" "layer_norm 1024" "rms_norm 512" "rms_norm 8192"; do
  set -- $spec
  run ncu --clock-control none --profile-from-start off --csv --metrics $M \
    python3 bench/kernels/ncu_versus_compile.py --op $1 --cols $2
done
TORCH_LOGS=output_code python3 bench/kernels/inductor_code.py --cases layer_norm:256,layer_norm:1024,rms_norm:512,rms_norm:8192 > $OUT/inductor.log 2>&1 || true
gzip -f $OUT/inductor.log
grep -E '^\$|exit' "$log"
