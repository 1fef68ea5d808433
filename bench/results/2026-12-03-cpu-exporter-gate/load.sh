#!/bin/bash
# Exporter with the header gate under slow clients (CPU machine, snapshot replay).
cd /work/main
OUT=bench/results/2026-12-03-cpu-exporter-gate
LOG=$OUT/load.log
echo "# $(date -u +%FT%TZ) $(hostname) $(nproc) CPUs, no GPU; exporter replaying tests/fixtures/h200-snapshot.json; build of $(git rev-parse --short HEAD) + the header gate (uncommitted at the time of the run)" > $LOG
for slow in 0 16 50 200; do
  echo "\$ gpusqueeze exporter --snapshot tests/fixtures/h200-snapshot.json --listen 127.0.0.1:9899 --interval 1" >> $LOG
  build/gpusqueeze exporter --snapshot tests/fixtures/h200-snapshot.json --listen 127.0.0.1:9899 --interval 1 > /tmp/exp.log 2>&1 &
  pid=$!
  sleep 1
  echo "\$ python3 bench/exporter/scrape_load.py --url http://127.0.0.1:9899 --pid \$pid --scrapes 200 --idle-seconds 3 --slow $slow --slow-seconds 10 --out gate-slow$slow.json" >> $LOG
  python3 bench/exporter/scrape_load.py --url http://127.0.0.1:9899 --pid $pid --scrapes 200 --idle-seconds 3 --slow $slow --slow-seconds 10 --out $OUT/gate-slow$slow.json >> $LOG 2>&1
  curl -s http://127.0.0.1:9899/metrics | grep "^gsq_exporter_connections_cut_total" >> $LOG
  kill $pid; wait $pid
done
