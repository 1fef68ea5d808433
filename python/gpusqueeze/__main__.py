"""`python -m gpusqueeze ARGS` and the `gpusqueeze` console script: run the CLI binary with ARGS (it replaces this
process, so exit codes, signals and the terminal are the binary's own)."""
from __future__ import annotations

import os
import sys

from gpusqueeze import binary


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        exe = binary()
    except FileNotFoundError as e:
        print(f"gpusqueeze: {e}", file=sys.stderr)
        return 3
    os.execv(exe, [exe, *args])
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
