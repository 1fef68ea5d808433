#!/bin/bash
# One `gpusqueeze report` of this node per Slurm job and stage, for `gpusqueeze fleet` to compare across nodes:
#   $GSQ_FLEET_DIR/<short hostname>/<job id>-<prolog|epilog>/report.json (with index.html, report.md, report.log)
# Run by gpusqueeze-prolog.sh and gpusqueeze-epilog.sh (slurm.conf Prolog= and Epilog=), or as
# `gpusqueeze-slurm.sh prolog|epilog`; without an argument the stage comes from Slurm's SLURM_SCRIPT_CONTEXT.
# It never fails the job or the node: whatever happens it exits 0 (a failing prolog drains the node and requeues the
# job, a failing epilog drains the node), and says what it did in syslog (logger -t gpusqueeze-slurm) or GSQ_LOG_FILE.
#
# Settings, from the environment or from the file GSQ_SLURM_ENV (default /etc/default/gpusqueeze-slurm, sourced as
# bash when readable; slurmd gives prologs and epilogs only Slurm's own variables, so that file is where they go):
#   GSQ_FLEET_DIR      folder the reports go to (a shared file system); unset, or not a writable folder: no report
#   GSQ_PROLOG_BUDGET  seconds `report --budget` may measure in the prolog (default 20)
#   GSQ_EPILOG_BUDGET  the same in the epilog (default 20)
#   GSQ_REPORT_GRACE   seconds past the budget before the report is stopped (default 60: its checks and the page)
#   GSQ_ALL_GPUS=1     measure every GPU of the node, whatever the job was given (nodes given whole to one job);
#                      otherwise only the job's GPUs (SLURM_JOB_GPUS, from gres/gpu), and a job given none gets no
#                      report, so that other jobs' GPUs on a shared node are never loaded
#   GSQ_BINARY         the gpusqueeze program (default: gpusqueeze on PATH, /usr/bin and /usr/local/bin included)
#   GSQ_LOG_FILE       append log lines to this file instead of syslog
#   GSQ_DEV_DIR        where the NVIDIA device nodes are looked for (default /dev): a node without /dev/nvidiaN gets
#                      no report
set -u
trap 'exit 0' EXIT # the exit status Slurm sees, even when a command or an unset variable ends the script early

# slurmd runs prologs and epilogs without a search path
PATH="${PATH:+$PATH:}/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
export PATH
umask 022

stage="${1:-}"
if [ -z "$stage" ]; then
  case "${SLURM_SCRIPT_CONTEXT:-}" in
    prolog_slurmd) stage=prolog ;;
    epilog_slurmd) stage=epilog ;;
  esac
fi

# log PRIORITY MESSAGE: syslog (daemon facility) or GSQ_LOG_FILE
log() {
  local priority=$1
  shift
  local msg="${stage:-?} job ${SLURM_JOB_ID:-?}: $*"
  if [ -n "${GSQ_LOG_FILE:-}" ]; then
    printf '%s gpusqueeze-slurm %s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$priority" "$msg" \
      >>"$GSQ_LOG_FILE" 2>/dev/null
  elif command -v logger >/dev/null 2>&1; then
    logger -t gpusqueeze-slurm -p "daemon.$priority" -- "$msg" 2>/dev/null
  else
    printf 'gpusqueeze-slurm %s %s\n' "$priority" "$msg" >&2
  fi
  return 0
}

settings="${GSQ_SLURM_ENV:-/etc/default/gpusqueeze-slurm}"
if [ -r "$settings" ]; then
  # shellcheck source=/dev/null
  . "$settings"
fi

case "$stage" in
  prolog | epilog) ;;
  *)
    log err "stage '${stage}' is neither prolog nor epilog (pass it, or run under slurmd): no report"
    exit 0
    ;;
esac
job="${SLURM_JOB_ID:-}"
if ! [[ "$job" =~ ^[0-9]+$ ]]; then
  log err "SLURM_JOB_ID '${job}' is not a job id: no report"
  exit 0
fi
if [ -z "${GSQ_FLEET_DIR:-}" ]; then
  log info "GSQ_FLEET_DIR is unset (set it in ${settings}): no report"
  exit 0
fi
if [ ! -d "$GSQ_FLEET_DIR" ] || [ ! -w "$GSQ_FLEET_DIR" ]; then
  log warning "GSQ_FLEET_DIR ${GSQ_FLEET_DIR} is not a writable folder: no report"
  exit 0
fi
if ! compgen -G "${GSQ_DEV_DIR:-/dev}/nvidia[0-9]*" >/dev/null; then
  log debug "no NVIDIA GPU device in ${GSQ_DEV_DIR:-/dev}: no report"
  exit 0
fi

# The job's GPUs as the node numbers them (gres.conf's /dev/nvidiaN), given to CUDA in PCI bus order, the order of
# the device numbers on most servers. The prolog runs outside the job's cgroup, so Slurm's CUDA_VISIBLE_DEVICES (which
# may count from 0 inside it) is not used.
gpus="${SLURM_JOB_GPUS:-}"
if [ "${GSQ_ALL_GPUS:-0}" = 1 ]; then
  unset CUDA_VISIBLE_DEVICES
  gpus=all
elif [[ "$gpus" =~ ^[0-9]+(,[0-9]+)*$ ]]; then
  export CUDA_VISIBLE_DEVICES="$gpus" CUDA_DEVICE_ORDER=PCI_BUS_ID
else
  log info "the job was given no GPU (SLURM_JOB_GPUS '${gpus}'; GSQ_ALL_GPUS=1 measures them all): no report"
  exit 0
fi

bin="${GSQ_BINARY:-gpusqueeze}"
if ! command -v "$bin" >/dev/null 2>&1; then
  log warning "${bin} not found (PATH ${PATH}): no report"
  exit 0
fi

if [ "$stage" = prolog ]; then budget="${GSQ_PROLOG_BUDGET:-20}"; else budget="${GSQ_EPILOG_BUDGET:-20}"; fi
if ! [[ "$budget" =~ ^[0-9]+([.][0-9]+)?$ ]]; then
  log warning "budget '${budget}' is not a number of seconds: 20 taken"
  budget=20
fi
grace="${GSQ_REPORT_GRACE:-60}"
if ! [[ "$grace" =~ ^[0-9]+$ ]]; then
  log warning "GSQ_REPORT_GRACE '${grace}' is not a whole number of seconds: 60 taken"
  grace=60
fi
limit=$((${budget%.*} + 1 + grace))

host="$(hostname -s 2>/dev/null)" || host=""
[ -n "$host" ] || host="${HOSTNAME%%.*}"
if ! [[ "$host" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]]; then
  log err "host name '${host}' cannot name a folder: no report"
  exit 0
fi
dir="${GSQ_FLEET_DIR%/}/${host}"
final="${dir}/${job}-${stage}"
tmp="${dir}/.${job}-${stage}.tmp.$$"
if ! mkdir -p "$dir" 2>/dev/null; then
  log warning "cannot create ${dir}: no report"
  exit 0
fi

# Written under a hidden name and renamed when whole, so that a reader of the folder never sees half a report.
started=$SECONDS
if command -v timeout >/dev/null 2>&1; then
  timeout --kill-after=10 "$limit" "$bin" report --budget "$budget" -o "$tmp" </dev/null >"${tmp}.log" 2>&1
else
  "$bin" report --budget "$budget" -o "$tmp" </dev/null >"${tmp}.log" 2>&1
fi
rc=$?
took=$((SECONDS - started))
last="$(tail -n 1 "${tmp}.log" 2>/dev/null)"

# exit 0: no fail-level finding; 1: the page holds one (both are reports). Anything else leaves no report.
if { [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]; } && [ -f "${tmp}/report.json" ]; then
  if grep -Eq '"this_machine"[[:space:]]*:[[:space:]]*false' "${tmp}/report.json"; then
    # report shows its bundled H200 files when it cannot read this node's GPUs: not this node's report
    why="$(grep -m1 -o 'NOT THIS MACHINE[^"]*' "${tmp}/report.json")"
    log warning "gpusqueeze could not read this node's GPUs, no report kept: ${why}"
    rm -rf -- "$tmp" "${tmp}.log"
    exit 0
  fi
  mv -f -- "${tmp}.log" "${tmp}/report.log"
  rm -rf -- "$final" # the same job again on this node (requeued): the newer report replaces the older
  if mv -- "$tmp" "$final"; then
    log info "report of GPUs ${gpus} written to ${final} in ${took} s (budget ${budget} s, exit ${rc})"
  else
    log warning "cannot move the report to ${final}"
    rm -rf -- "$tmp"
  fi
elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  log warning "gpusqueeze report stopped after ${took} s (budget ${budget} s + ${grace} s): no report." \
    "Last line: ${last}"
  rm -rf -- "$tmp" "${tmp}.log"
else
  log warning "gpusqueeze report exited ${rc} after ${took} s: no report. Last line: ${last}"
  rm -rf -- "$tmp" "${tmp}.log"
fi
exit 0
