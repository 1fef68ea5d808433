#!/usr/bin/env bash
# Device call 5: Nsight Compute's view of the shared-memory split the driver configures for our kernels at each
# carveout preference (src/ncu_carve.py, the library of call 3) and at the default after torch.compile / a copy.
set -uo pipefail
gunzip -rf .carry/x
export GSQ_KERNELS_LIBRARY=$PWD/.carry/x/libgsqkernels-carve.so PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total,clocks.max.mem --format=csv > "$OUT/card5.txt"
LOG=run5.log source bench/device/lib.sh
run timeout 400 ncu --clock-control none --cache-control none --kernel-name 'regex:row_kernel|triton' --csv \
  --metrics launch__shared_mem_config_size,launch__shared_mem_per_block_static,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__registers_per_thread,launch__block_size,gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed \
  python3 bench/results/2026-12-04-h200-shuffled/src/ncu_carve.py
grep -E '^"' "$log" | python3 -c "
import csv,sys
rows=list(csv.reader(sys.stdin)); h=rows[0]; i={k:h.index(k) for k in ['ID','Kernel Name','Metric Name','Metric Value']}
cur=None
for r in rows[1:]:
  if r[i['ID']]!=cur: cur=r[i['ID']]; print(); print(cur, r[i['Kernel Name']][:60], end=' ')
  print(r[i['Metric Name']].split('__')[-1][:28]+'='+r[i['Metric Value']], end=' ')
print()" > "$OUT/ncu5.txt"
cat "$OUT/ncu5.txt"; grep -E '^\$|exit|done' "$log"
