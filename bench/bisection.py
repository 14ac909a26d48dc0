"""Bisection on the sandbox: MPI broken between exactly two of 8 compute nodes, located by `provision certify`.

Run as root: .venv/bin/python bench/bisection.py [--pair compute03 compute06] [--keep]
(the python that runs it, and ansible-playbook beside it, must import this checkout's provision: the certify role
stages the probe from there)

The cluster `bis` (subnet 10.89.0.0/24: one controller, eight compute nodes, no shared filesystem, health program
off) is brought up without certify, or reused when it is up (a reused cluster keeps the mpi-check it was
deployed with: run `provision deploy` on it after changing the certify role). The pair is cut with the sandbox's
fault (each node's network namespace refuses the other's address; both keep talking to every other node),
`certify --level quick --json` runs once, and the pair is restored. The figures: certify's wall time, the MPI jobs
bisection ran (mpi.bisect's value and its path), whether mpi.pair names exactly the cut pair, and that no other node
failed a check. Printed, and written to build/bench/bisection.json. tests/e2e/test_bisection.py runs the same case
in `make test` on a cluster of its own; this bench times it and can cut another pair.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPEC = """\
name: bis
provider: {type: sandbox, subnet: 10.89.0.0/24}
node_groups:
  - {name: ctl, roles: [controller], count: 1}
  - {name: compute, roles: [compute], count: 8}
health: {enabled: false}
"""
OUT = Path("build/bench/bisection.json")


def provision(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess."""
    return subprocess.run([sys.executable, "-m", "provision", *args], capture_output=True, text=True,
                          timeout=timeout)


def certify(spec: Path) -> tuple[dict, float]:
    """One `certify --json --level quick`: its report and wall time."""
    started = time.perf_counter()
    result = provision("certify", str(spec), "--json", "--level", "quick", timeout=3600)
    if not result.stdout.strip():
        raise RuntimeError(f"certify gave no report (exit {result.returncode}): {result.stderr[-2000:]}")
    return json.loads(result.stdout), time.perf_counter() - started


def checks(doc: dict) -> list[dict]:
    """Every check of a report: the nodes' and the cluster's."""
    return [c for n in doc.get("nodes", []) for c in n.get("checks", [])] + list(doc.get("checks", []))


def summary(doc: dict, seconds: float, pair: tuple[str, str]) -> dict:
    """What the run found and how."""
    found = [c for c in checks(doc) if c["check"] == "mpi.bisect"]
    pairs = sorted({c["node"] for c in checks(doc) if c["check"] == "mpi.pair" and c["verdict"] == "fail"})
    others = sorted({f"{c['node']}:{c['check']}" for c in checks(doc) if c["verdict"] == "fail" and c.get("node")
                     and c["check"] not in ("mpi.pair",)})
    return {"seconds": round(seconds, 1), "verdict": doc.get("verdict"), "pair_cut": list(pair), "pair_named": pairs,
            "located": pairs == sorted(pair), "jobs": found[0].get("value") if found else None,
            "path": found[0].get("detail") if found else None, "other_node_failures": others}


def main() -> None:
    """Bring the cluster up, cut the pair, certify, restore; print and write the figures."""
    from provision.providers.sandbox import faults

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", nargs=2, default=["compute03", "compute06"], metavar="NODE")
    parser.add_argument("--keep", action="store_true", help="leave the cluster up")
    args = parser.parse_args()
    spec = Path(tempfile.mkdtemp()) / "bis.yaml"
    spec.write_text(SPEC)
    started = time.perf_counter()
    up = provision("up", str(spec), "--skip-certify", "--quiet", timeout=2400)
    if up.returncode != 0:
        raise SystemExit(f"up failed: {up.stderr[-3000:]}")
    print(f"cluster bis up in {time.perf_counter() - started:.0f} s", flush=True)
    a, b = args.pair
    try:
        faults.cut_pair(None, "bis", a, b)
        try:
            doc, seconds = certify(spec)
        finally:
            faults.restore_pair(None, "bis", a, b)
        result = summary(doc, seconds, (a, b))
        print(json.dumps(result, indent=2), flush=True)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(result, indent=2) + "\n")
        print(f"written to {OUT}")
    finally:
        if not args.keep:
            provision("down", str(spec), timeout=900)


if __name__ == "__main__":
    main()
