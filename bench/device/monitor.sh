#!/usr/bin/env bash
# Device run for the exporter (step 7): live metrics idle and under a bf16 GEMM (GPM SM activity, XID registration),
# scrape latency and CPU over 1,000 scrapes next to nvidia-smi per scrape, 1,000 concurrent connections plus slow
# clients, and on-demand capture of a PyTorch loop both by `gpusqueeze capture` and by the exporter's watcher.
# Usage on the device with the build carried: BUILD=.carry/build bench/device/monitor.sh (writes $OUT)
set -uo pipefail
LOG=monitor.log source "$(dirname "$0")/lib.sh"
T=$BUILD/tests/hw_target
mkdir -p "$OUT/monitor"
M=$OUT/monitor
$B exporter --once > "$M/live-idle.txt" 2>>"$log"; echo "[exit $?] exporter --once idle: $(wc -l < "$M/live-idle.txt") lines" | tee -a "$log"
"$T" matmul 5000 > /tmp/mm.json &
mm=$!
sleep 3
$B exporter --once > "$M/live-matmul.txt" 2>>"$log"; echo "[exit $?] exporter --once under GEMM" | tee -a "$log"
wait $mm
grep -hE '^gsq_gpu_(sm_active|sm_occupancy|dram_bandwidth|pipe_active|xid|last_xid|utilization_ratio)' "$M/live-idle.txt" | sed 's/^/idle:  /' | tee -a "$log"
grep -hE '^gsq_gpu_(sm_active|sm_occupancy|dram_bandwidth|pipe_active|utilization_ratio)' "$M/live-matmul.txt" | sed 's/^/gemm:  /' | tee -a "$log"

$B exporter --listen 127.0.0.1:9835 --interval 1 2>>"$log" &
ex=$!
sleep 2
run python3 bench/exporter/scrape_load.py --url http://127.0.0.1:9835 --pid $ex --nvidia-smi --slow 16 --slow-seconds 10 --out "$M/scrape_load.json"
kill $ex; wait $ex

mkdir -p /tmp/od && rm -f /tmp/od/*
$B trace --on-demand -o /tmp/od/torch.gsqt -- python3 bench/exporter/torch_server.py --pid-file /tmp/od/pid 2>>"$log" &
tr=$!
for i in $(seq 60); do [ -s /tmp/od/pid ] && break; sleep 0.5; done
pid=$(cat /tmp/od/pid)
echo "torch server pid $pid" | tee -a "$log"
sleep 2
run $B capture "$pid" --seconds 2
$B exporter --listen 127.0.0.1:9836 --interval 1 --watch-pid "$pid" --watch-for 3 --capture-seconds 2 > "$M/watcher.log" 2>&1 &
ex=$!
for i in $(seq 60); do grep -q "findings in\|failed" "$M/watcher.log" && break; sleep 1; done
sleep 2
python3 -c "import urllib.request;print(urllib.request.urlopen('http://127.0.0.1:9836/metrics').read().decode())" | grep -E '^gsq_exporter_captur|^gsq_gpu_sm_active' | tee -a "$log"
kill $ex; wait $ex
cat "$M/watcher.log" >> "$log"
kill -TERM "$pid"; wait $tr
cp /tmp/od/*.analysis.json "$M/" 2>/dev/null
ls -la /tmp/od | tee -a "$log"
grep -E '^\$|exit|^idle|^gemm|scrape p50|nvidia-smi per|^load|watch:|verdict|captur' "$log" | tail -n 50
