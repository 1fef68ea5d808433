#!/usr/bin/env bash
# Device run for step 3/5 ceilings: GPU tests, `probe mem`, `probe pcie`, and a plain torch copy loop of pinned memory as
# the PCIe reference, all in one call. Usage on the device with build/ carried: bench/device/probes.sh (writes $OUT)
set -uo pipefail
LOG=probes.log source "$(dirname "$0")/lib.sh"
run ctest --test-dir /work/main/build -L gpu --output-on-failure
run $B probe mem --max-seconds 1 -o "$OUT/mem.json"
run $B probe pcie --max-seconds 1 -o "$OUT/pcie.json"
run python3 - <<'PY'
import torch
n = 256 << 20
h = torch.empty(n, dtype=torch.uint8).pin_memory(); d = torch.empty(n, dtype=torch.uint8, device="cuda")
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for name, f in (("h2d", lambda: d.copy_(h, non_blocking=True)), ("d2h", lambda: h.copy_(d, non_blocking=True))):
    for _ in range(5): f()
    torch.cuda.synchronize(); s.record()
    for _ in range(50): f()
    e.record(); e.synchronize()
    print(f"plain torch copy loop, pinned 256 MiB {name}: {n * 50 / (s.elapsed_time(e) * 1e-3) / 1e9:.2f} GB/s")
PY
grep -E '^\$|exit|tests passed|plain torch|^\| (mem|pcie)\.[a-z0-9_]+ +\||cudaMemcpy +\|' "$log" | tail -n 40
