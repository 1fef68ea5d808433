#!/bin/bash
# Slurm Prolog (slurm.conf: Prolog=/etc/slurm/gpusqueeze-prolog.sh): one `gpusqueeze report` of this node before the
# job's first step here (with PrologFlags=Alloc: when the job is given the node), written to
# $GSQ_FLEET_DIR/<host>/$SLURM_JOB_ID-prolog/. The work is gpusqueeze-slurm.sh's, installed beside this file (or named
# by GSQ_SLURM_SCRIPT); deploy/slurm/README.md has the settings. Always exits 0: gpusqueeze never fails the job or
# drains the node.
set -u
here="${BASH_SOURCE[0]%/*}"
[ "$here" != "${BASH_SOURCE[0]}" ] || here=.
/bin/bash "${GSQ_SLURM_SCRIPT:-$here/gpusqueeze-slurm.sh}" prolog
exit 0
