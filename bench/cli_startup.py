"""How long the CLI takes to answer the commands that should feel instant: `provision --help`, `provision version` and
a shell completion request (the SPEC argument of `validate`, with a few known clusters in a temporary state root).

    .venv/bin/python bench/cli_startup.py [--runs 15] [--source DIR]

Each command runs `--runs` times in a fresh interpreter (`python -m provision`, from an empty working directory);
the table shows the median, the fastest and the slowest wall time. `--source DIR` times another copy of the package
(e.g. an older tree unpacked with `git archive`), for a before/after comparison. Compare figures only from one quiet
machine; `python -X importtime -m provision version` shows where the time goes.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPEC = "name: {name}\nprovider: {{type: static}}\nnode_groups:\n  - {{name: cn, roles: [controller, compute], " \
       "addresses: [10.0.0.1], hosts: cn01}}\n"
CLUSTERS = ("alpha", "beta", "gamma")


def cases(state: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """name -> (arguments, extra environment)."""
    complete = {"_PROVISION_COMPLETE": "complete_bash", "COMP_WORDS": "provision validate ", "COMP_CWORD": "2",
                "PROVISION_STATE_DIR": str(state)}
    return {
        "provision --help": (["--help"], {}),
        "provision version": (["version"], {}),
        "completion (validate SPEC)": ([], complete),
    }


def make_state(root: Path) -> Path:
    """A state root with a few clusters' spec copies, as `up` leaves them."""
    for name in CLUSTERS:
        folder = root / "clusters" / name
        folder.mkdir(parents=True)
        (folder / "spec.yaml").write_text(SPEC.format(name=name))
    return root


def time_once(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Wall seconds of one run; the run must succeed."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=120)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode(errors='replace')}")
    return elapsed


def measure(runs: int, source: Path | None) -> list[tuple[str, list[float]]]:
    """Every case, `runs` times each (one warm-up run first, so the page cache is warm for all)."""
    base = {**os.environ}
    if source is not None:
        base["PYTHONPATH"] = str(source)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        cwd, state = Path(tmp) / "cwd", make_state(Path(tmp) / "state")
        cwd.mkdir()
        for name, (args, extra) in cases(state).items():
            argv, env = [sys.executable, "-m", "provision", *args], {**base, **extra}
            time_once(argv, env, cwd)
            results.append((name, [time_once(argv, env, cwd) for _ in range(runs)]))
    return results


def table(results: list[tuple[str, list[float]]]) -> str:
    """Median, fastest and slowest per case, in seconds."""
    lines = [f"{'command':<30} {'median':>8} {'min':>8} {'max':>8}"]
    for name, times in results:
        lines.append(f"{name:<30} {statistics.median(times):>8.3f} {min(times):>8.3f} {max(times):>8.3f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per command (default 15)")
    parser.add_argument("--source", type=Path, help="time the provision package in this folder instead")
    options = parser.parse_args()
    source = options.source.resolve() if options.source else None
    print(f"python {sys.version.split()[0]}, {options.runs} runs each, package from {source or 'the installed one'}")
    print(table(measure(options.runs, source)))


if __name__ == "__main__":
    main()
