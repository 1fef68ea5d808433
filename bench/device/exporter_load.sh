#!/usr/bin/env bash
# Device run for the exporter under load with live NVML: one exporter (defaults, 1 s interval); for each S in $SLOW
# (default 0 16 50 200) 1,000 sequential scrapes, then a 1,000-connection burst beside S clients that send a header
# byte a second. The S = 0 run also times `nvidia-smi --query-gpu` per scrape beside it.
# Usage on the device with the build carried: BUILD=.carry/build bench/device/exporter_load.sh (writes $OUT)
set -uo pipefail
LOG=exporter_load.log source "$(dirname "$0")/lib.sh"
$B exporter --listen 127.0.0.1:9835 --interval 1 2>>"$log" &
ex=$!
sleep 2
for s in ${SLOW:-0 16 50 200}; do
  smi=()
  [ "$s" = 0 ] && smi=(--nvidia-smi --nvidia-smi-runs 100)
  run python3 bench/exporter/scrape_load.py --url http://127.0.0.1:9835 --pid $ex --scrapes 1000 --idle-seconds 10 \
    --slow "$s" --slow-seconds 10 "${smi[@]}" --out "$OUT/scrape_load-slow$s.json"
done
python3 -c "import urllib.request; print(''.join(l for l in urllib.request.urlopen('http://127.0.0.1:9835/metrics').read().decode().splitlines(True) if l.startswith('gsq_exporter_connections_cut_total')))" | tee -a "$log"
kill $ex
wait $ex
grep -E '^\$|exit|scrape p50|load:|nvidia-smi' "$log"
