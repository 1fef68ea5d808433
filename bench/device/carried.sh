# Preamble of the device scripts that run from the carried build (sourced, after `set -uo pipefail`): unpacks
# .carry/build.txz, keeps the run's scratch under /tmp/gsq-$NAME and what comes back under $FINAL (the device's $OUT),
# then sources lib.sh (the run() logger) with the log $NAME.log.
#   NAME  the script's short name (pairs, pass3, …)
[ -f .carry/build.txz ] && [ ! -d .carry/build ] && tar xJf .carry/build.txz -C .carry
FINAL=${OUT:-/tmp/gsq-out}
export BUILD=.carry/build OUT=/tmp/gsq-$NAME
rm -rf "$OUT" && mkdir -p "$OUT" "$FINAL"
LOG=$NAME.log source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
# The live report with its own measurements within BUDGET seconds, timed, packed into $FINAL/report.tgz.
live_report() {
  local start
  start=$(date +%s%N)
  run timeout $(( $1 + 190 )) $B report -o "$OUT/report" --budget "$1"
  echo "report wall (with its own measurements): $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$log"
  tar czf "$FINAL/report.tgz" -C "$OUT" report
}
# The wheels carried in .whl (Liger-Kernel's, pure Python) installed for this run: PYTHONPATH gets them.
install_wheels() {
  if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl &&
      export PYTHONPATH=/tmp/site
  fi
}
