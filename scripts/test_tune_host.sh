#!/usr/bin/env bash
# `tune` against this machine's real paths (/proc/sys, /sys/kernel/mm, /sys/module, /var/lib) inside a private mount
# namespace: a copy of each host file is bind-mounted over the real one and /var/lib is a tmpfs there, so the binary
# runs unchanged (no --root) while the machine's own settings stay untouched. capture → apply --yes → verify →
# rollback --yes → verify the capture, printing each file before and after. CTest `tune_host_namespace`.
# Usage: scripts/test_tune_host.sh [path/to/gpusqueeze]   (exit 77 = skipped: needs root and mount namespaces)
set -euo pipefail
G=$(realpath "${1:-build/gpusqueeze}")
if [ "$(id -u)" != 0 ] || ! unshare -m --propagation private true 2>/dev/null; then
  echo "SKIP: needs root and mount namespaces (unshare -m)"
  exit 77
fi
export G
exec unshare -m --propagation private bash -euo pipefail -c '
unset GSQ_TUNE_FAKE_GPU
tmp=$(mktemp -d)
trap "rm -rf $tmp" EXIT
declare -A want=(
  [/proc/sys/kernel/numa_balancing]=numa_balancing
  [/sys/kernel/mm/transparent_hugepage/enabled]=transparent_hugepage
  [/sys/kernel/mm/transparent_hugepage/defrag]=transparent_hugepage_defrag
  [/sys/module/pcie_aspm/parameters/policy]=pcie_aspm_policy)
profile=$tmp/flip.toml
printf "[host]\n" >"$profile"
n=0
for f in "${!want[@]}"; do
  [ -r "$f" ] || { echo "absent here: $f"; continue; }
  copy=$tmp/$(echo "$f" | tr / _)
  cat "$f" >"$copy"
  mount --bind "$copy" "$f"
  now=$(sed -n "s/.*\[\(.*\)\].*/\1/p" "$f"); [ -n "$now" ] || now=$(cat "$f")
  case ${want[$f]} in  # a value different from the one in force
    numa_balancing) new=$(( now == 0 ? 1 : 0 )) ;;
    transparent_hugepage) new=$([ "$now" = never ] && echo madvise || echo never) ;;
    transparent_hugepage_defrag) new=$([ "$now" = defer+madvise ] && echo madvise || echo defer+madvise) ;;
    pcie_aspm_policy) new=$([ "$now" = performance ] && echo default || echo performance) ;;
  esac
  [ "${want[$f]}" = numa_balancing ] && printf "%s = %s\n" "${want[$f]}" "$new" >>"$profile" \
    || printf "%s = \"%s\"\n" "${want[$f]}" "$new" >>"$profile"
  echo "before: $f = $(cat "$f")"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "SKIP: none of the host files exists here"; exit 77; }
mount -t tmpfs tmpfs /var/lib
"$G" tune capture -o "$tmp/before.toml"
"$G" tune apply "$profile" --yes
for f in "${!want[@]}"; do [ -r "$f" ] && echo "applied: $f = $(cat "$f")"; done
"$G" tune verify "$profile"
"$G" tune rollback --yes
for f in "${!want[@]}"; do
  [ -r "$f" ] || continue
  echo "after rollback: $f = $(cat "$f")"
done
"$G" tune verify "$tmp/before.toml"
test ! -e /var/lib/gpusqueeze/tune/state.json
echo "tune_host_namespace: $n host setting(s) applied, verified and rolled back"
'
