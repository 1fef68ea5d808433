#!/bin/bash
# Idle scrape latency, the exporter before the header gate (commit d3d26ee) and with it, 8 interleaved rounds of
# 1,000 scrapes (CPU machine, snapshot replay).
cd /work/main
OUT=bench/results/2026-12-03-cpu-exporter-gate/idle
mkdir -p $OUT
LOG=$OUT/ab_idle.log
echo "# $(date -u +%FT%TZ) $(hostname) $(nproc) CPUs, no GPU; old = build of d3d26ee, new = d3d26ee + header gate + TCP_DEFER_ACCEPT" > $LOG
for r in 1 2 3 4 5 6 7 8; do
  for v in old new; do
    bin=build/gpusqueeze; [ $v = old ] && bin=/tmp/oldtree/build/gpusqueeze
    $bin exporter --snapshot tests/fixtures/h200-snapshot.json --listen 127.0.0.1:9899 --interval 1 > /tmp/exp.log 2>&1 &
    pid=$!
    sleep 1
    echo "[$v r$r] $(python3 bench/exporter/scrape_load.py --url http://127.0.0.1:9899 --pid $pid --scrapes 1000 --idle-seconds 1 --connections 0 --out $OUT/$v-r$r.json 2>/dev/null | grep 'scrape p50')" >> $LOG
    kill $pid; wait $pid 2>/dev/null
  done
done
python3 - "$OUT" >> $LOG <<'PY'
import json, sys, glob, statistics
for v in ("old", "new"):
    runs = [json.load(open(f)) for f in sorted(glob.glob(f"{sys.argv[1]}/{v}-r*.json"))]
    def pick(d, k):
        s = d.get("scrape", d)
        return s.get(k)
    p50 = [pick(d, "p50_ms") for d in runs]; p99 = [pick(d, "p99_ms") for d in runs]
    print(f"{v}: median over {len(runs)} rounds P50 {statistics.median(p50):.3f} ms, P99 {statistics.median(p99):.3f} ms")
PY
