#!/usr/bin/env bash
# Device run for step 5 (issue: the multi-GPU device run) on a multi-GPU kind: `gpusqueeze topo` through NVML beside
# `nvidia-smi topo -m` and `topo -p2p r`, each saved and read back with `topo --from`, so the two matrices can be
# compared cell by cell (they must agree); then nccl-tests' all_reduce_perf if it is installed, with NCCL_DEBUG=INFO,
# read by `gpusqueeze nccl analyze`; `probe p2p` and `probe nccl` beside them (their busbw against all_reduce_perf's). NVLink multicast stays off (NCCL_NVLS_ENABLE=0). Nothing here changes a GPU
# setting. Usage on the device with the build carried: BUILD=.carry/build bench/device/multigpu.sh (writes $OUT).
LOG=multigpu.log source "$(dirname "$0")/lib.sh"
export NCCL_NVLS_ENABLE=0
run nvidia-smi -L
run $B topo
$B topo --json >"$OUT/topo-nvml.json" 2>>"$log"
nvidia-smi topo -m >"$OUT/topo-m.txt" 2>>"$log"
nvidia-smi topo -p2p r >"$OUT/topo-p2p-r.txt" 2>>"$log"
run $B topo --from "$OUT/topo-m.txt"
$B topo --from "$OUT/topo-m.txt" --json >"$OUT/topo-smi.json" 2>>"$log"
$B topo --from "$OUT/topo-p2p-r.txt" --json >"$OUT/topo-p2p-smi.json" 2>>"$log"
python3 - "$OUT" <<'PY' | tee -a "$log"
import json, sys
out = sys.argv[1]
nvml = json.load(open(f"{out}/topo-nvml.json"))
smi = json.load(open(f"{out}/topo-smi.json"))
p2p = json.load(open(f"{out}/topo-p2p-smi.json"))
def gpu_cells(links):  # links[row][column], GPU rows and columns only
    return {(r, c): v for r, row in links.items() if r.startswith("GPU")
            for c, v in row.items() if c.startswith("GPU")}
for name, ours, theirs in (("topo -m", gpu_cells(nvml["links"]), gpu_cells(smi["links"])),
                           ("topo -p2p r", gpu_cells(nvml.get("p2p_read", {})), gpu_cells(p2p["links"]))):
    differ = {k: (ours.get(k), theirs.get(k)) for k in theirs if ours.get(k) != theirs.get(k)}
    print(f"{name}: {len(theirs)} GPU cells, {len(differ)} differ {dict(list(differ.items())[:8])}")
PY
# gpusqueeze's own probes: P2P matrices (copy engine, SM copy kernel, copy-engine and SM ping-pong latency), then the
# collectives (one process, every GPU; NCCL's choice per size from its captured INFO lines, a Ring run beside
# NVLS/Tree), beside nccl-tests when present.
run timeout 300 $B probe p2p
$B probe p2p --format json >"$OUT/p2p.json" 2>>"$log"
run $B probe nccl --nccl-library
run timeout 400 $B probe nccl --max-bytes 1073741824
$B probe nccl --format json --ops all_reduce,all_gather --max-bytes 1073741824 >"$OUT/nccl-probe.json" 2>>"$log"
# One process per GPU (ncclCommInitRank with the id passed to each), as nccl-tests runs under mpirun.
run timeout 400 $B probe nccl --procs "$(nvidia-smi -L | wc -l)" --ops all_reduce,all_gather --max-bytes 1073741824
# Under mpirun when the device has Open MPI (the plugin is in the carried build/lib): the id through MPI_Bcast.
if command -v mpirun >/dev/null 2>&1; then
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 run timeout 400 mpirun --oversubscribe \
    -np "$(nvidia-smi -L | wc -l)" $B probe nccl --mpi --ops all_reduce --max-bytes 1073741824
else
  echo "mpirun not installed: probe nccl --mpi not run" | tee -a "$log"
fi
# Env advice from measurement: the article's knobs against the default, 3 interleaved trials (NVLS stays off).
run timeout 500 $B probe nccl --sweep-env --trials 3 --max-bytes 536870912 --env NCCL_ALGO=Ring --env NCCL_ALGO=Tree \
  --env NCCL_PROTO=Simple --env NCCL_PROTO=LL128 --env NCCL_MIN_CTAS=32 --env NCCL_P2P_LEVEL=SYS
$B env --save "$OUT/env.json" >>"$log" 2>&1
run $B doctor
if command -v all_reduce_perf >/dev/null 2>&1; then
  n=$(nvidia-smi -L | wc -l)
  NCCL_DEBUG=INFO all_reduce_perf -b 8 -e 1G -f 2 -g "$n" >"$OUT/all_reduce.log" 2>&1
  run $B nccl analyze "$OUT/all_reduce.log"
else
  echo "all_reduce_perf not installed: NCCL part not run" | tee -a "$log"
fi
