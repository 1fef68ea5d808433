#!/usr/bin/env python3
"""Fails when a library in src/ includes a folder above it (docs/architecture.md draws the same layers), or defines
what another library declares.

Each folder may include itself and the folders listed for it; anything else is a layering error, printed as
FILE:LINE: FOLDER may not include OTHER. Includes alone cannot see a folder that defines another library's functions
(src/probes once defined suites src/bench declared, so the harness's header named the probes above it): each folder's
files open only its own namespace, gsq::FOLDER (core and cuda also gsq itself), printed as
FILE:LINE: FOLDER may not define in NAMESPACE. Run by CTest (test `layering`) and by hand:
scripts/check_layers.py [SRC]."""
import pathlib
import re
import sys

# What each folder may include besides itself. Lower layers first; the list is the architecture.
ALLOWED = {
    "core": set(),
    "host": {"core"},
    "cuda": {"core"},
    "gpu": {"core", "host", "cuda"},
    "env": {"core", "gpu"},
    "doctor": {"core", "gpu", "host"},
    "bench": {"core", "cuda", "gpu", "host", "env"},
    "kernels": {"core", "cuda", "gpusqueeze"},
    "probes": {"core", "cuda", "gpu", "host", "bench", "kernels", "gpusqueeze"},
    "trace": {"core"},
    "analyze": {"core", "trace"},
    "monitor": {"core", "gpu", "trace", "analyze", "tune"},
    "triage": {"core", "trace", "gpu"},
    "topo": {"core", "host", "gpu", "cuda"},
    "tune": {"core", "host", "gpu"},
    "report": {"core", "gpu"},
    "program": {"core", "gpu", "trace", "analyze"},
    "fleet": {"core"},
    # What a command does beneath its flags (the report's sections and live measurements, the tune view): every
    # library the report reads, none that reads it.
    "jobs": {"core", "host", "cuda", "gpu", "env", "bench", "probes", "trace", "analyze", "triage", "topo",
             "tune", "report", "program"},
    "cli": None,  # the top: may include any library
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/')
NAMESPACE = re.compile(r"^\s*namespace\s+(gsq(?:::[A-Za-z0-9_]+)*)\s*\{")
# Folders whose files may also open gsq itself: the base types (Error, Finding, tables) and CUDA's error type.
OWNS_GSQ = {"core", "cuda"}


def namespace_ok(folder: str, ns: str) -> bool:
    parts = ns.split("::")
    if len(parts) == 1:
        return folder in OWNS_GSQ
    return parts[1] == folder or (folder == "core" and parts[1] == "stats")


def violations(src: pathlib.Path):
    for path in sorted(src.rglob("*")):
        if path.suffix not in {".cpp", ".hpp", ".cu", ".cuh", ".inc"}:
            continue
        folder = path.relative_to(src).parts[0]
        if folder not in ALLOWED:
            yield f"{path}:1: folder {folder} has no layer in scripts/check_layers.py"
            continue
        allowed = ALLOWED[folder]
        if allowed is None:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if m and m.group(1) != folder and m.group(1) not in allowed:
                yield f"{path}:{number}: {folder} may not include {m.group(1)}"
            n = NAMESPACE.match(line)
            if n and not namespace_ok(folder, n.group(1)):
                yield f"{path}:{number}: {folder} may not define in {n.group(1)}"


def main() -> int:
    src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[1] / "src")
    found = list(violations(src))
    for v in found:
        print(v)
    print(f"layering: {len(found)} violation(s) in {src}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
