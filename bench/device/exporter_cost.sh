#!/usr/bin/env bash
# Device run for the exporter's own cost: where a collection's time goes (GSQ_NVML_PROFILE), then CPU per second at a
# 1 s interval while idle and scrape latency over 1,000 scrapes (no load phase).
# Usage on the device with the build carried: BUILD=.carry/build bench/device/exporter_cost.sh (writes $OUT)
set -uo pipefail
LOG=exporter_cost.log source "$(dirname "$0")/lib.sh"
GSQ_NVML_PROFILE=1 timeout -s INT 12 $B exporter --listen 127.0.0.1:9837 --interval 1 >>"$log" 2>&1
echo "[exit $?] profiled exporter, 12 s at 1 s" | tee -a "$log"
$B exporter --listen 127.0.0.1:9835 --interval 1 2>>"$log" &
ex=$!
sleep 2
run python3 bench/exporter/scrape_load.py --url http://127.0.0.1:9835 --pid $ex --connections 0 --idle-seconds 30 --out "$OUT/exporter_cost.json"
kill $ex; wait $ex
grep -A30 'NVML collection cost' "$log" | head -30
grep -E 'exit|scrape p50' "$log"
