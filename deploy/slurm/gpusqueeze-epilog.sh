#!/bin/bash
# Slurm Epilog (slurm.conf: Epilog=/etc/slurm/gpusqueeze-epilog.sh): one `gpusqueeze report` of this node after the
# job ends here, written to $GSQ_FLEET_DIR/<host>/$SLURM_JOB_ID-epilog/. The work is gpusqueeze-slurm.sh's, installed
# beside this file (or named by GSQ_SLURM_SCRIPT); deploy/slurm/README.md has the settings. Always exits 0: gpusqueeze
# never fails the job or drains the node.
set -u
here="${BASH_SOURCE[0]%/*}"
[ "$here" != "${BASH_SOURCE[0]}" ] || here=.
/bin/bash "${GSQ_SLURM_SCRIPT:-$here/gpusqueeze-slurm.sh}" epilog
exit 0
