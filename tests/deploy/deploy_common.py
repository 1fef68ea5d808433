"""What the deploy/ tests share: the repository root, skipping with CTest's SKIP_RETURN_CODE, and a check runner."""

import importlib
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIP = 77  # SKIP_RETURN_CODE of every deploy test in tests/CMakeLists.txt


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def need_module(module, package):
    """Imports a Python module or skips the test, naming the package that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        skip(f"Python module {module} is not installed (PyPI {package}; scripts/setup.sh installs it)")


class CheckFailed(Exception):
    pass


def fail(message):
    raise CheckFailed(message)


def run_checks(name, checks):
    """Runs each check (a function that raises CheckFailed or returns a short note) and prints one line per check and
    a closing 'N passed, N failed' line. Returns the exit code: 0 when every check passed, else 1."""
    passed = failed = 0
    for check in checks:
        try:
            note = check()
            print(f"ok    {check.__name__}" + (f": {note}" if note else ""))
            passed += 1
        except CheckFailed as e:
            print(f"FAIL  {check.__name__}: {e}")
            failed += 1
        except Exception:  # a broken check is a failure too, with its traceback
            print(f"FAIL  {check.__name__}: unexpected error\n{traceback.format_exc()}")
            failed += 1
    print(f"{name}: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1
