# Shared preamble of the device scripts (sourced): $OUT, the build folder, the run() logger.
#   BUILD   build folder carried to the device (default build); its ctest files name /work/main/build
#   LOG     log file name under $OUT
OUT=${OUT:-/tmp/gsq-out}
BUILD=${BUILD:-build}
mkdir -p "$OUT" /work/main
[ -e /work/main/build ] || ln -sfn "$PWD/$BUILD" /work/main/build
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=$BUILD/gpusqueeze
log=$OUT/$LOG
# Runs a command, appending its output to the log and its exit status to the log and the terminal.
run() { echo "\$ $*" | tee -a "$log"; "$@" >>"$log" 2>&1; rc=$?; echo "[exit $rc]" | tee -a "$log"; }
{ echo "date: $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu,pcie.link.gen.max,pcie.link.width.max --format=csv; } >>"$log"
