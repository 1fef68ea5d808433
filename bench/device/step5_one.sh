#!/usr/bin/env bash
# Step 5's parts that one GPU can run (the multi-GPU device run is multigpu.sh): the P2P GPU tests (SM copy kernel
# exact, ping-pong complete), `probe p2p` on one GPU (the diagonal: copy engine, SM copy kernel, copy-engine and
# SM ping-pong latency), `probe nccl` in one process and as --procs 1 with NCCL's own INFO lines captured, and the
# live report (each measured section after the first no longer waits on NVML's utilisation of its predecessor).
# NCCL: the loader's, else the one PyTorch's wheel brought (nvidia-nccl-cu13). Nothing changes a GPU setting.
# Usage: run(command="bash bench/device/step5_one.sh", carry=[".carry/build.txz"])
set -uo pipefail
NAME=step5 source "$(dirname "$0")/carried.sh"
run $BUILD/tests/test_gpu_live --gtest_filter='P2pGpu.*:ProbesGpu.*'
run timeout 120 $B probe p2p
$B probe p2p --format json >"$FINAL/p2p.json" 2>>"$log"
if ! $B probe nccl --nccl-library >/dev/null 2>&1; then
  lib=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib', 'libnccl.so.2'))" 2>/dev/null)
  [ -n "$lib" ] && [ -f "$lib" ] && export GSQ_NCCL_LIBRARY=$lib
fi
run $B probe nccl --nccl-library
run timeout 200 $B probe nccl --max-bytes 268435456
$B probe nccl --format json --max-bytes 268435456 >"$FINAL/nccl-one.json" 2>>"$log"
run timeout 200 $B probe nccl --procs 1 --ops all_reduce,all_gather --max-bytes 268435456
NCCL_DEBUG=WARN run timeout 100 $B probe nccl --ops all_reduce --max-bytes 1048576  # the user's NCCL_DEBUG stands
ls /tmp | grep -c gsq-nccl | sed 's/^/capture folders left behind: /' | tee -a "$log"
live_report 60
cp "$log" "$FINAL/"
grep -E '^\$|\[exit|GB/s|µs|note:|PASSED|FAILED|waiting 3 s|report wall|left behind' "$log" | head -150
