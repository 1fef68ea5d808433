#!/bin/bash
# Same-run A/B on the CPU machine: the exporter before the header gate (commit d3d26ee) and with it, interleaved.
cd /work/main
OUT=bench/results/2026-12-03-cpu-exporter-gate
LOG=$OUT/ab.log
OLD=/tmp/oldtree/build/gpusqueeze
NEW=build/gpusqueeze
echo "# $(date -u +%FT%TZ) $(hostname) $(nproc) CPUs, no GPU; exporter replaying tests/fixtures/h200-snapshot.json; old = build of d3d26ee, new = d3d26ee + the header gate + TCP_DEFER_ACCEPT" > $LOG
one() {  # label binary slow out
  $2 exporter --snapshot tests/fixtures/h200-snapshot.json --listen 127.0.0.1:9899 --interval 1 > /tmp/exp.log 2>&1 &
  local pid=$!
  sleep 1
  echo "\$ [$1] gpusqueeze exporter --snapshot tests/fixtures/h200-snapshot.json --listen 127.0.0.1:9899 --interval 1" >> $LOG
  echo "\$ [$1] python3 bench/exporter/scrape_load.py --url http://127.0.0.1:9899 --pid \$pid --scrapes 1000 --idle-seconds 1 $3 --out $4" >> $LOG
  python3 bench/exporter/scrape_load.py --url http://127.0.0.1:9899 --pid $pid --scrapes 1000 --idle-seconds 1 $3 --out $OUT/$4 2>/dev/null | grep -E "scrape p50|load:" >> $LOG
  kill $pid; wait $pid 2>/dev/null
}
for r in 1 2 3; do
  one old $OLD "--connections 0" ab-idle-old-r$r.json
  one new $NEW "--connections 0" ab-idle-new-r$r.json
done
for s in 16 50; do
  one old $OLD "--slow $s --slow-seconds 10" ab-load-old-slow$s.json
  one new $NEW "--slow $s --slow-seconds 10" ab-load-new-slow$s.json
done
