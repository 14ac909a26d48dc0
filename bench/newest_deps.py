"""Will the next fresh install still work? The unit suite and ruff against the newest versions pyproject.toml allows.

`make test` installs exactly what requirements.lock names. This check does what a user's `pip install gpu-provision`
would do today instead: a scratch venv (build/newest-venv, made anew each run) with the newest release of every
dependency the ranges in pyproject.toml admit, then prints each package whose version differs from the lock and runs
`ruff check` and the unit suite (tests/unit) there. The build backend (requirements-build.in) is installed at its
newest too, so that the comparison covers the whole lock. Run it before `make lock`, or on a schedule, to see an upstream
break before a fresh machine does:

    make newest                       # or: python3 bench/newest_deps.py [--keep] [-- PYTEST ARGS]

Exit status: pytest's (0 when the newest versions pass), 3 when the install itself fails.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "build" / "newest-venv"


def locked_versions(lock: Path) -> dict[str, str]:
    """name -> version for the lock lines whose environment markers hold on this interpreter and platform (needs
    `packaging`: run inside a venv made from the lock or from pyproject.toml)."""
    from packaging.markers import Marker

    found: dict[str, str] = {}
    for match in re.finditer(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)(?: ; ([^\\\n]+))?", lock.read_text(), re.M):
        name, version, marker = match.groups()
        if marker is None or Marker(marker.strip()).evaluate():
            found[_normal(name)] = version
    return found


def _locked_in(python: Path) -> dict[str, str]:
    """locked_versions() as the scratch venv's interpreter sees the markers."""
    code = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import newest_deps; "
            f"print(json.dumps(newest_deps.locked_versions(newest_deps.ROOT / 'requirements.lock')))")
    return json.loads(subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True).stdout)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_versions(python: Path) -> dict[str, str]:
    out = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze", "--exclude-editable"],
                         check=True, capture_output=True, text=True).stdout
    pairs = (line.split("==", 1) for line in out.splitlines() if "==" in line)
    return {_normal(name): version for name, version in pairs}


def drift(locked: dict[str, str], newest: dict[str, str]) -> list[str]:
    """One line per package whose newest version is not the locked one (or that only one side has)."""
    rows = []
    for name in sorted(set(locked) | set(newest)):
        old, new = locked.get(name, "-"), newest.get(name, "-")
        if old != new and name not in ("pip", "setuptools", "wheel"):
            rows.append(f"  {name:32} {old:>16} -> {new}")
    return rows


def make_venv() -> Path:
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    python = VENV / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--upgrade", "--upgrade-strategy", "eager",
                    "-r", str(ROOT / "requirements-build.in"), "-e", f"{ROOT}[test]"], check=True)
    return python


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep build/newest-venv afterwards")
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (default: tests/unit -q)")
    args = parser.parse_args()
    start = time.monotonic()
    try:
        python = make_venv()
    except subprocess.CalledProcessError as exc:
        print(f"newest: the install of the newest allowed versions failed (exit {exc.returncode})", file=sys.stderr)
        return 3
    rows = drift(_locked_in(python), installed_versions(python))
    print(f"newest: {len(rows)} package(s) differ from requirements.lock (locked -> newest):")
    print("\n".join(rows) or "  none")
    lint = subprocess.run([str(python), "-m", "ruff", "check", "--no-cache", "provision", "tests", "bench",
                           "playbooks"], cwd=ROOT)
    tests = subprocess.run([str(python), "-m", "pytest", "-p", "no:cacheprovider",
                            *(args.pytest_args or ["tests/unit", "-q"])], cwd=ROOT)
    print(f"newest: ruff exit {lint.returncode}, pytest exit {tests.returncode}, "
          f"{time.monotonic() - start:.0f} s in all")
    if not args.keep:
        shutil.rmtree(VENV, ignore_errors=True)
    return tests.returncode or lint.returncode


if __name__ == "__main__":
    sys.exit(main())
