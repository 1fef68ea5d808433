#!/usr/bin/env bash
# `gpusqueeze coldstart` for real on this machine with PyTorch's CPU backend (Inductor compiles C++): the built-in model
# shows cold > warm-local with cache hits counted; `prepare` writes a bundle that `--bundle` accepts here and refuses
# (exit 2, with the reason) once its manifest names another GPU. CTest `coldstart_cpu`; exit 77 = no PyTorch here.
# Usage: scripts/test_coldstart.sh path/to/gpusqueeze   (GSQ_TORCH_PYTHON: an interpreter that has torch)
set -euo pipefail
G=$(realpath "${1:-build/gpusqueeze}")
PY=${GSQ_TORCH_PYTHON:-python3}
"$PY" -c "import torch" 2>/dev/null || { echo "SKIP: $PY cannot import torch (set GSQ_TORCH_PYTHON)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$G" coldstart --module --python "$PY" --json >coldstart.json
"$PY" - <<'PY'
import json
r = json.load(open("coldstart.json"))
p = {x["phase"]: x for x in r["phases"]}
print({k: (v["first_result_s"], v["counters"]["inductor.fxgraph_cache_hit"], v["counters"]["inductor.fxgraph_cache_miss"]) for k, v in p.items()})
assert p["cold"]["first_result_s"] > p["warm-local"]["first_result_s"], "cold must be slower than warm-local"
assert p["cold"]["counters"]["inductor.fxgraph_cache_miss"] >= 1
assert p["warm-local"]["counters"]["inductor.fxgraph_cache_hit"] >= 1
assert p["warm-portable"]["counters"]["inductor.fxgraph_cache_hit"] >= 1
assert p["warm-portable"]["artifact_loaded_bytes"] == p["cold"]["artifact_saved_bytes"] > 0
print("ok: cold > warm-local; hits counted in both warm phases")
PY
"$G" coldstart prepare --module --python "$PY" -o "$work/cache.bundle" 2>/dev/null
"$G" coldstart --module --python "$PY" --phases warm-portable --bundle "$work/cache.bundle" --json >portable.json 2>/dev/null
echo "ok: a bundle made here is accepted here"
"$PY" - <<PY
import gzip, json
d = json.load(gzip.open("$work/cache.bundle", "rt"))
d["manifest"]["device"] = "NVIDIA H200"; d["manifest"]["compute_capability"] = "9.0"
json.dump(d, gzip.open("$work/other.bundle", "wt"))
PY
set +e
"$G" coldstart --module --python "$PY" --bundle "$work/other.bundle" >out.txt 2>err.txt
rc=$?
set -e
grep -q "device: the bundle was made with 'NVIDIA H200'" err.txt && [ "$rc" = 2 ] \
  && echo "ok: a bundle from another GPU is refused (exit 2): $(grep -m1 device: err.txt)" \
  || { echo "expected exit 2 naming the device, got $rc"; cat err.txt; exit 1; }
