"""Time the MPI job certify runs (srun --mpi=pmix, 2 ranks a node, allreduces verified) across N compute nodes,
and certify quick as a whole.

Run as root: .venv/bin/python bench/mpi_scale.py [--compute 3 15] [--rounds 3]
Each size gets a sandbox cluster of its own (1 controller + N compute, no accounting, no filesystem), brought
up without certify, then certified ROUNDS times; the figures are the MPI check's srun wall time and its 8 MiB
allreduce time, and certify quick's wall time.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPEC = """\
name: mbench{compute}
provider: {{type: sandbox, subnet: 10.92.{compute}.0/24}}
node_groups:
  - {{name: ctl, roles: [controller], count: 1}}
  - {{name: cn, roles: [compute], count: {compute}}}
software: {{slurm: {{accounting: false}}}}
"""


def _provision(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    """Run the CLI and time it."""
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "provision", *args], capture_output=True, text=True)
    return time.perf_counter() - start, result


def _mpi(doc: dict) -> dict:
    return next(c for c in doc["checks"] if c["check"] == "mpi.allreduce")


def measure(compute: int, rounds: int) -> None:
    """Up, certify ROUNDS times, down; one line per round and a summary."""
    spec = Path(tempfile.mkdtemp()) / f"mbench{compute}.yaml"
    spec.write_text(SPEC.format(compute=compute))
    _provision("down", str(spec))
    try:
        seconds, result = _provision("up", str(spec), "--skip-certify", "--quiet")
        if result.returncode != 0:
            print(f"{compute} compute nodes: up FAILED after {seconds:.1f} s\n{result.stderr[-2000:]}")
            return
        print(f"{compute} compute nodes: up {seconds:.1f} s")
        walls, certify = [], []
        for index in range(rounds):
            seconds, result = _provision("certify", str(spec), "--json")
            doc = json.loads(result.stdout)
            mpi = _mpi(doc)
            certify.append(seconds)
            walls.append(mpi["value"])
            print(f"  round {index + 1}: certify quick {seconds:.1f} s ({doc['verdict']}); mpi.allreduce "
                  f"{mpi['verdict']}: {mpi['detail']}")
        print(f"{compute} compute nodes: MPI job median {statistics.median(walls):.2f} s (srun wall), certify quick "
              f"median {statistics.median(certify):.1f} s over {rounds} rounds")
    finally:
        seconds, _ = _provision("down", str(spec))
        print(f"{compute} compute nodes: down {seconds:.1f} s")


def main() -> None:
    """Measure each size in turn."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--compute", type=int, nargs="+", default=[3, 15])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for compute in args.compute:
        measure(compute, args.rounds)


if __name__ == "__main__":
    main()
