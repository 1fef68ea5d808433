#!/usr/bin/env python3
"""deploy/slurm's prolog and epilog run as slurmd runs them: Slurm's variables only, with a stand-in `gpusqueeze`
(SYNTHETIC: a bash script that records its arguments and CUDA_VISIBLE_DEVICES, writes a report.json into its -o folder
and exits as told) and a stand-in `hostname` first on PATH.

  run        the reports land in $GSQ_FLEET_DIR/<host>/<job>-<stage>/ with the budgets and the job's GPUs; the scripts
             exit 0, leaving no report, when the report fails, runs past its time or reads no GPU, and exit 0 without
             calling gpusqueeze when GSQ_FLEET_DIR is unset or unwritable, on a node without a GPU, for a job without a
             GPU or a job id, without gpusqueeze, or with a broken settings file; the scripts parse (bash -n) and are
             executable
  shellcheck shellcheck finds nothing in them

Usage: test_slurm.py [--gpusqueeze BINARY] [run|shellcheck ...]   (both parts without arguments; with the binary,
       the prolog also runs the real `gpusqueeze report --budget 0`)
Exit 0 passed, 1 failed, 77 skipped (shellcheck missing: the line says which package provides it).
"""

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deploy_common import ROOT, fail, run_checks, skip  # noqa: E402

SLURM = ROOT / "deploy/slurm"
PROLOG, EPILOG, WORKER = SLURM / "gpusqueeze-prolog.sh", SLURM / "gpusqueeze-epilog.sh", SLURM / "gpusqueeze-slurm.sh"
SCRIPTS = [PROLOG, EPILOG, WORKER]
HOST = "gpu-node-07"
JOB = "4242"

STUB_GPUSQUEEZE = r"""#!/bin/bash
# SYNTHETIC stand-in for gpusqueeze (tests/deploy/test_slurm.py): records its arguments and the GPUs it was given,
# writes a report.json into its -o folder unless GSQ_STUB_WRITE=0, sleeps GSQ_STUB_SLEEP s, exits GSQ_STUB_RC.
printf '%s\n' "$@" >"$GSQ_STUB_RECORD.args"
printf '%s\n' "${CUDA_VISIBLE_DEVICES-<unset>}" >"$GSQ_STUB_RECORD.gpus"
out="" prev=""
for a in "$@"; do
  [ "$prev" = -o ] && out="$a"
  prev="$a"
done
if [ -n "$out" ] && [ "${GSQ_STUB_WRITE:-1}" = 1 ]; then
  mkdir -p "$out"
  provenance="this machine"
  [ "${GSQ_STUB_THIS_MACHINE:-true}" = true ] || provenance="NOT THIS MACHINE (no NVIDIA driver: stand-in)"
  printf '{\n  "schema": "gpusqueeze.report/1",\n  "mark": "%s",\n  "provenance": "%s",\n  "this_machine": %s\n}\n' \
    "${GSQ_STUB_MARK:-}" "$provenance" "${GSQ_STUB_THIS_MACHINE:-true}" >"$out/report.json"
  printf '<html></html>\n' >"$out/index.html"
fi
if [ -n "${GSQ_STUB_SLEEP:-}" ]; then sleep "$GSQ_STUB_SLEEP"; fi
echo "stub: exit ${GSQ_STUB_RC:-0}"
exit "${GSQ_STUB_RC:-0}"
"""
STUB_HOSTNAME = f"""#!/bin/bash
# SYNTHETIC stand-in for hostname (tests/deploy/test_slurm.py)
if [ "${{1:-}}" = -s ]; then echo {HOST}; else echo {HOST}.cluster.example; fi
"""


class Node:
    """A temporary node: a fleet folder, /dev with nvidia0, the stand-ins, a log file."""

    def __init__(self, tmp):
        self.tmp = Path(tmp)
        self.bin = self.tmp / "bin"
        self.dev = self.tmp / "dev"
        self.fleet = self.tmp / "fleet"
        self.record = self.tmp / "record"
        self.log = self.tmp / "gpusqueeze-slurm.log"
        for d in (self.bin, self.dev, self.fleet):
            d.mkdir()
        (self.dev / "nvidia0").touch()
        (self.dev / "nvidiactl").touch()
        for name, text in (("gpusqueeze", STUB_GPUSQUEEZE), ("hostname", STUB_HOSTNAME)):
            p = self.bin / name
            p.write_text(text)
            p.chmod(0o755)

    def env(self, **overrides):
        env = {"PATH": f"{self.bin}:/usr/bin:/bin", "SLURM_JOB_ID": JOB, "SLURM_JOB_GPUS": "0,1",
               "SLURM_JOB_USER": "someone", "GSQ_FLEET_DIR": str(self.fleet), "GSQ_LOG_FILE": str(self.log),
               "GSQ_SLURM_ENV": str(self.tmp / "no-settings"), "GSQ_DEV_DIR": str(self.dev),
               "GSQ_STUB_RECORD": str(self.record)}
        for k, v in overrides.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return env

    def run(self, script, *args, timeout=60, **overrides):
        r = subprocess.run(["/bin/bash", str(script), *args], env=self.env(**overrides), capture_output=True,
                           text=True, timeout=timeout, cwd=self.tmp)
        return r.returncode

    def called(self):
        return Path(f"{self.record}.args").exists()

    def args(self):
        return Path(f"{self.record}.args").read_text().splitlines()

    def gpus(self):
        return Path(f"{self.record}.gpus").read_text().strip()

    def log_text(self):
        return self.log.read_text() if self.log.exists() else ""

    def reports(self):
        """Every path under the fleet folder, relative."""
        return sorted(str(p.relative_to(self.fleet)) for p in self.fleet.rglob("*"))


def node_run(fn):
    """Runs fn(node) in a fresh temporary node."""
    with tempfile.TemporaryDirectory(prefix="gsq-slurm-") as tmp:
        return fn(Node(tmp))


def expect_rc0(rc, what):
    if rc != 0:
        fail(f"{what}: exit {rc}, expected 0")


def expect_no_report(node, what, log_says=None, called=None):
    if node.reports() not in ([], [HOST]):
        fail(f"{what}: left {node.reports()} in the fleet folder")
    if called is not None and node.called() != called:
        fail(f"{what}: gpusqueeze was {'not ' if called else ''}called")
    if log_says and log_says not in node.log_text():
        fail(f"{what}: the log does not say {log_says!r}:\n{node.log_text()}")


def expect_report(node, stage, budget="20"):
    final = f"{HOST}/{JOB}-{stage}"
    want = [HOST, final, f"{final}/index.html", f"{final}/report.json", f"{final}/report.log"]
    if node.reports() != want:
        fail(f"{stage}: the fleet folder holds {node.reports()}, expected {want}")
    args = node.args()
    if args[:3] != ["report", "--budget", budget] or len(args) != 5 or args[3] != "-o":
        fail(f"{stage}: gpusqueeze called with {args}, expected report --budget {budget} -o DIR")
    out = Path(args[4])
    if out.parent != node.fleet / HOST or not out.name.startswith(f".{JOB}-{stage}.tmp."):
        fail(f"{stage}: -o {out}: not a hidden folder beside the final one")
    if "written to" not in node.log_text():
        fail(f"{stage}: the log does not say where the report went:\n{node.log_text()}")


# --- run -------------------------------------------------------------------------------------------------------------

def scripts_parse_and_are_executable():
    for s in SCRIPTS:
        r = subprocess.run(["bash", "-n", str(s)], capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"bash -n {s.name}: {r.stderr.strip()}")
        if not os.stat(s).st_mode & stat.S_IXUSR:
            fail(f"{s.name} is not executable: slurmd runs it directly, and a prolog it cannot run drains the node")
        text = s.read_text()
        if not text.startswith("#!/bin/bash\n") or "\nset -u\n" not in text:
            fail(f"{s.name}: must start with #!/bin/bash and set -u")
    return ", ".join(s.name for s in SCRIPTS)


def prolog_writes_the_documented_folder():
    def t(node):
        expect_rc0(node.run(PROLOG), "prolog")
        expect_report(node, "prolog")
        if node.gpus() != "0,1":
            fail(f"prolog: the report was given GPUs {node.gpus()!r}, the job's are 0,1")
    node_run(t)
    return f"<fleet>/{HOST}/{JOB}-prolog/report.json, report --budget 20, CUDA_VISIBLE_DEVICES=0,1"


def epilog_writes_the_documented_folder():
    def t(node):
        expect_rc0(node.run(EPILOG), "epilog")
        expect_report(node, "epilog")
    node_run(t)
    return f"<fleet>/{HOST}/{JOB}-epilog/report.json"


def stage_comes_from_slurm_when_not_given():
    def t(node):
        expect_rc0(node.run(WORKER, SLURM_SCRIPT_CONTEXT="epilog_slurmd"), "worker without a stage")
        expect_report(node, "epilog")
    node_run(t)


def settings_file_sets_the_folder_and_budgets():
    def t(node):
        settings = node.tmp / "settings"
        settings.write_text(f"GSQ_FLEET_DIR={node.fleet}\nGSQ_PROLOG_BUDGET=7\nGSQ_EPILOG_BUDGET=3.5\n")
        expect_rc0(node.run(PROLOG, GSQ_FLEET_DIR=None, GSQ_SLURM_ENV=str(settings)), "prolog")
        expect_report(node, "prolog", budget="7")
        expect_rc0(node.run(EPILOG, GSQ_FLEET_DIR=None, GSQ_SLURM_ENV=str(settings)), "epilog")
        if node.args()[:3] != ["report", "--budget", "3.5"]:
            fail(f"epilog: called with {node.args()}, expected --budget 3.5")
        expect_rc0(node.run(PROLOG, GSQ_PROLOG_BUDGET="twenty"), "prolog with a bad budget")
        if node.args()[:3] != ["report", "--budget", "20"] or "not a number" not in node.log_text():
            fail(f"a bad budget: called with {node.args()}; log:\n{node.log_text()}")
    node_run(t)
    return "GSQ_PROLOG_BUDGET=7, GSQ_EPILOG_BUDGET=3.5, a bad one gives 20"


def a_report_with_findings_is_kept():
    def t(node):
        expect_rc0(node.run(PROLOG, GSQ_STUB_RC="1"), "report exit 1")
        expect_report(node, "prolog")
    node_run(t)


def a_failing_report_exits_0_and_leaves_nothing():
    for rc in ("2", "3", "70"):
        def t(node):
            expect_rc0(node.run(PROLOG, GSQ_STUB_RC=rc), f"report exit {rc}")
            expect_no_report(node, f"report exit {rc}", log_says=f"exited {rc}", called=True)
        node_run(t)
    return "report exits 2, 3, 70"


def a_report_past_its_time_is_stopped():
    def t(node):
        expect_rc0(node.run(PROLOG, timeout=30, GSQ_STUB_SLEEP="60", GSQ_PROLOG_BUDGET="0", GSQ_REPORT_GRACE="1"),
                   "a report that hangs")
        expect_no_report(node, "a report that hangs", log_says="stopped after", called=True)
    node_run(t)
    return "budget 0 + grace 1: stopped after 2 s"


def a_report_of_no_gpu_is_not_kept():
    def t(node):
        expect_rc0(node.run(EPILOG, GSQ_STUB_THIS_MACHINE="false"), "NOT THIS MACHINE report")
        expect_no_report(node, "NOT THIS MACHINE report", log_says="could not read this node's GPUs", called=True)
        expect_no_report(node, "NOT THIS MACHINE report", log_says="NOT THIS MACHINE (no NVIDIA driver: stand-in)")
    node_run(t)


def the_real_gpusqueeze_is_judged_the_same():
    """The real program, budget 0: on a machine without an NVIDIA driver its report is the bundled H200's, which the
    script must recognise in the real report.json and not keep; with a driver, the report is kept."""
    if not GSQ_BINARY:
        return "no binary given (--gpusqueeze BINARY): not run"

    def t(node):
        expect_rc0(node.run(PROLOG, timeout=300, GSQ_BINARY=str(GSQ_BINARY), GSQ_PROLOG_BUDGET="0"), "real gpusqueeze")
        if Path("/dev/nvidiactl").exists():
            if not (node.fleet / HOST / f"{JOB}-prolog" / "report.json").is_file():
                fail(f"a node with an NVIDIA driver: no report kept; log:\n{node.log_text()}")
            return "a driver here: report kept"
        expect_no_report(node, "real gpusqueeze without a driver", log_says="NOT THIS MACHINE")
        return "no driver here: the bundled H200 report recognised and not kept"
    return node_run(t)


def a_requeued_job_replaces_its_report():
    def t(node):
        expect_rc0(node.run(PROLOG, GSQ_STUB_MARK="first"), "first run")
        expect_rc0(node.run(PROLOG, GSQ_STUB_MARK="second"), "second run")
        expect_report(node, "prolog")
        text = (node.fleet / HOST / f"{JOB}-prolog/report.json").read_text()
        if '"second"' not in text:
            fail(f"the second run's report did not replace the first: {text}")
    node_run(t)


def no_fleet_dir_no_report():
    def t(node):
        expect_rc0(node.run(PROLOG, GSQ_FLEET_DIR=None), "GSQ_FLEET_DIR unset")
        expect_no_report(node, "GSQ_FLEET_DIR unset", log_says="GSQ_FLEET_DIR is unset", called=False)
        if node.reports():
            fail(f"GSQ_FLEET_DIR unset: wrote {node.reports()}")
        expect_rc0(node.run(EPILOG, GSQ_FLEET_DIR=""), "GSQ_FLEET_DIR empty")
        expect_no_report(node, "GSQ_FLEET_DIR empty", called=False)
    node_run(t)


def unwritable_fleet_dir_no_report():
    def t(node):
        a_file = node.tmp / "a-file"
        a_file.write_text("")
        cases = {"a file": str(a_file), "a missing folder": str(node.tmp / "missing"),
                 "below a file": str(a_file / "sub")}
        if os.geteuid() != 0:  # root writes anywhere; another user is refused a read-only folder
            ro = node.tmp / "read-only"
            ro.mkdir(mode=0o555)
            cases["a read-only folder"] = str(ro)
        for what, path in cases.items():
            expect_rc0(node.run(PROLOG, GSQ_FLEET_DIR=path), f"GSQ_FLEET_DIR {what}")
            expect_no_report(node, f"GSQ_FLEET_DIR {what}", log_says="not a writable folder", called=False)
        return ", ".join(cases)
    return node_run(t)


def no_gpu_no_report():
    def t(node):
        empty = node.tmp / "empty-dev"
        empty.mkdir()
        (empty / "nvidiactl").touch()  # the control device alone is no GPU
        expect_rc0(node.run(PROLOG, GSQ_DEV_DIR=str(empty)), "no GPU")
        expect_no_report(node, "no GPU", log_says="no NVIDIA GPU device", called=False)
    node_run(t)


def job_without_gpus_gets_no_report_unless_all_gpus():
    def t(node):
        expect_rc0(node.run(PROLOG, SLURM_JOB_GPUS=None), "job without GPUs")
        expect_no_report(node, "job without GPUs", log_says="given no GPU", called=False)
        expect_rc0(node.run(PROLOG, SLURM_JOB_GPUS=None, GSQ_ALL_GPUS="1", CUDA_VISIBLE_DEVICES="0"),
                   "GSQ_ALL_GPUS=1")
        expect_report(node, "prolog")
        if node.gpus() != "<unset>":
            fail(f"GSQ_ALL_GPUS=1: the report was given CUDA_VISIBLE_DEVICES={node.gpus()}, expected it unset")
        expect_rc0(node.run(PROLOG, GSQ_ALL_GPUS="1"), "GSQ_ALL_GPUS=1 for a job with GPUs 0,1")
        if node.gpus() != "<unset>":
            fail(f"GSQ_ALL_GPUS=1, SLURM_JOB_GPUS=0,1: CUDA_VISIBLE_DEVICES={node.gpus()}, expected it unset")
    node_run(t)


def bad_job_or_stage_no_report():
    def t(node):
        for what, kw in (("no job id", {"SLURM_JOB_ID": None}), ("job id ../x", {"SLURM_JOB_ID": "../x"})):
            expect_rc0(node.run(PROLOG, **kw), what)
            expect_no_report(node, what, log_says="is not a job id", called=False)
        expect_rc0(node.run(WORKER, "teardown"), "stage teardown")
        expect_no_report(node, "stage teardown", log_says="neither prolog nor epilog", called=False)
    node_run(t)


def missing_gpusqueeze_or_worker_exits_0():
    def t(node):
        expect_rc0(node.run(PROLOG, GSQ_BINARY="gpusqueeze-not-installed"), "no gpusqueeze")
        expect_no_report(node, "no gpusqueeze", log_says="not found", called=False)
        expect_rc0(node.run(PROLOG, GSQ_SLURM_SCRIPT=str(node.tmp / "missing.sh")), "no gpusqueeze-slurm.sh")
        expect_rc0(node.run(EPILOG, GSQ_SLURM_SCRIPT=str(node.tmp / "missing.sh")), "no gpusqueeze-slurm.sh")
    node_run(t)


def broken_settings_file_exits_0():
    def t(node):
        for body in ("echo \"$NO_SUCH_VARIABLE\"\n", "exit 3\n", "GSQ_FLEET_DIR=(\n"):
            settings = node.tmp / "settings"
            settings.write_text(body)
            expect_rc0(node.run(PROLOG, GSQ_SLURM_ENV=str(settings)), f"settings {body.strip()!r}")
            expect_rc0(node.run(EPILOG, GSQ_SLURM_ENV=str(settings)), f"settings {body.strip()!r}")
            # gpusqueeze-slurm.sh may itself be slurm.conf's Prolog= and Epilog=: it exits 0 too
            expect_rc0(node.run(WORKER, GSQ_SLURM_ENV=str(settings), SLURM_SCRIPT_CONTEXT="prolog_slurmd"),
                       f"gpusqueeze-slurm.sh with settings {body.strip()!r}")
    node_run(t)
    return "an unset variable under set -u, exit 3, a syntax error"


def runs_without_a_search_path():
    def t(node):
        expect_rc0(node.run(PROLOG, PATH=None, GSQ_BINARY=str(node.bin / "gpusqueeze")), "no PATH")
        host = subprocess.run(["hostname", "-s"], capture_output=True, text=True).stdout.strip()
        host = host or os.uname().nodename.split(".")[0]
        if not (node.fleet / host / f"{JOB}-prolog" / "report.json").is_file():
            fail(f"without PATH: the fleet folder holds {node.reports()}; log:\n{node.log_text()}")
    node_run(t)


RUN = [scripts_parse_and_are_executable, prolog_writes_the_documented_folder, epilog_writes_the_documented_folder,
       stage_comes_from_slurm_when_not_given, settings_file_sets_the_folder_and_budgets,
       a_report_with_findings_is_kept, a_failing_report_exits_0_and_leaves_nothing, a_report_past_its_time_is_stopped,
       a_report_of_no_gpu_is_not_kept, the_real_gpusqueeze_is_judged_the_same, a_requeued_job_replaces_its_report,
       no_fleet_dir_no_report,
       unwritable_fleet_dir_no_report, no_gpu_no_report, job_without_gpus_gets_no_report_unless_all_gpus,
       bad_job_or_stage_no_report, missing_gpusqueeze_or_worker_exits_0, broken_settings_file_exits_0,
       runs_without_a_search_path]


# --- shellcheck ------------------------------------------------------------------------------------------------------

def shellcheck_finds_nothing():
    r = subprocess.run(["shellcheck", "--shell=bash", "--severity=style", *map(str, SCRIPTS)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        fail(f"shellcheck:\n{r.stdout}{r.stderr}")
    return ", ".join(s.name for s in SCRIPTS)


PARTS = {"run": RUN, "shellcheck": [shellcheck_finds_nothing]}


GSQ_BINARY = None


def main(argv):
    global GSQ_BINARY
    if len(argv) >= 2 and argv[0] == "--gpusqueeze":
        GSQ_BINARY, argv = Path(argv[1]).resolve(), argv[2:]
    parts = argv or list(PARTS)
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        sys.exit(f"unknown part {unknown}; parts: {', '.join(PARTS)}")
    if "run" in parts and not shutil.which("bash"):
        skip("bash is not installed (Debian package bash)")
    if "shellcheck" in parts and not shutil.which("shellcheck"):
        skip("shellcheck is not installed (Debian package shellcheck; scripts/setup.sh installs it)")
    return run_checks("slurm " + "+".join(parts), [c for p in parts for c in PARTS[p]])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
