#!/usr/bin/env bash
# Builds the .deb from a configured build folder (CPack) and installs it into an empty root with `dpkg --root`
# (a dpkg database of its own; dependencies are the host's, so --force-depends), then checks that the files are where
# the unit files and the binary expect them and that the installed binary runs from there. CTest `deb_package`.
# Usage: scripts/test_deb.sh [BUILD_DIR]   (exit 77 = skipped: no dpkg)
set -euo pipefail
build=$(realpath "${1:-build}")
command -v dpkg >/dev/null && command -v cpack >/dev/null || { echo "SKIP: needs dpkg and cpack"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" 2>&1) \
  || { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/out/*.deb)
echo "package: $(basename "$deb") ($(du -h "$deb" | cut -f1))"
dpkg-deb --field "$deb" Package Version Architecture Depends Suggests
root=$work/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
dpkg --root="$root" --force-depends --force-script-chrootless -i "$deb" >"$work/dpkg.log" 2>&1 \
  || { cat "$work/dpkg.log"; exit 1; }
dpkg --root="$root" -L gpusqueeze | grep -E 'bin/|\.service|man1/gpusqueeze\.1|libgsq|h200-snapshot' | sort
fail=0
check() { if [ -e "$root$1" ]; then echo "ok: $1"; else echo "MISSING: $1"; fail=1; fi; }
for unit in gpusqueeze-exporter.service gpusqueeze-tune.service; do
  f=$root/usr/lib/systemd/system/$unit
  [ -f "$f" ] || f=$root/lib/systemd/system/$unit
  [ -f "$f" ] || { echo "MISSING unit $unit"; fail=1; continue; }
  exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$f")
  echo "$unit: ExecStart=$exe"
  check "$exe"
done
check /usr/bin/gpusqueeze
check /usr/lib/gpusqueeze/libgsqtrace.so
check /usr/lib/libgsqkernels.so
check /usr/share/gpusqueeze/h200-snapshot.json
check /usr/share/gpusqueeze/tune/gpu-server-base.toml
check /usr/share/gpusqueeze/prometheus/gpusqueeze-rules.yml
check /usr/share/gpusqueeze/kubernetes/gpusqueeze-exporter.yaml
check /usr/share/gpusqueeze/kubernetes/gpusqueeze-monitoring.yaml
check /usr/share/gpusqueeze/grafana/gpusqueeze-dashboard.json
check /usr/share/gpusqueeze/container/Dockerfile
for s in gpusqueeze-prolog.sh gpusqueeze-epilog.sh gpusqueeze-slurm.sh; do
  check /usr/share/gpusqueeze/slurm/$s
  [ -x "$root/usr/share/gpusqueeze/slurm/$s" ] || { echo "NOT EXECUTABLE: /usr/share/gpusqueeze/slurm/$s"; fail=1; }
done
check /usr/share/man/man1/gpusqueeze.1
check /usr/share/man/man1/gpusqueeze-tune.1
"$root/usr/bin/gpusqueeze" --version
# The installed binary finds its data one level up (share/gpusqueeze): the no-GPU report is built from it.
(cd "$work" && "$root/usr/bin/gpusqueeze" report -o "$work/report" >/dev/null 2>&1 && test -s "$work/report/index.html") \
  && echo "ok: the installed binary wrote the report from its own share/gpusqueeze" || { echo "report FAILED"; fail=1; }
exit $fail
