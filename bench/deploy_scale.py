"""Time `provision up` (nodes + inventory + preflight + deploy, no certify) from nothing, then a re-run deploy.

Run as root: .venv/bin/python bench/deploy_scale.py [--nodes 4 16] [--filesystem none|glusterfs]
Figures depend on the apt proxy's cache: the first run on a machine also downloads every package.
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
name: dbench{nodes}
provider: {{type: sandbox, subnet: 10.93.{octet}.0/24}}
node_groups:
  - {{name: ctl, roles: [controller], count: 1}}
  - {{name: cn, roles: [compute, storage], count: {compute}}}
filesystem: {{type: {filesystem}, replica: 2}}
"""


def _provision(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    """Run the CLI and time it."""
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "provision", *args], capture_output=True, text=True)
    return time.perf_counter() - start, result


def measure(nodes: int, filesystem: str) -> None:
    """Cold up, re-run deploy (must be changed=0), down; print one line per step."""
    spec = Path(tempfile.mkdtemp()) / f"dbench{nodes}.yaml"
    compute = nodes - 1 if filesystem == "none" or (nodes - 1) % 2 == 0 else nodes - 2
    spec.write_text(SPEC.format(nodes=nodes, octet=nodes, compute=compute, filesystem=filesystem))
    _provision("down", str(spec))
    try:
        seconds, result = _provision("up", str(spec), "--skip-certify", "--quiet")
        status = "ok" if result.returncode == 0 else f"FAILED\n{result.stderr[-2000:]}"
        print(f"{compute + 1} nodes: cold up {seconds:.1f} s ({status})")
        seconds, result = _provision("deploy", str(spec), "--json")
        changed = sum(h["changed"] for h in json.loads(result.stdout)["hosts"]) if result.stdout else "?"
        print(f"{compute + 1} nodes: re-run deploy {seconds:.1f} s, changed={changed}, rc={result.returncode}")
    finally:
        seconds, _ = _provision("down", str(spec))
        print(f"{compute + 1} nodes: down {seconds:.1f} s")


def main() -> None:
    """Measure each size in turn."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, nargs="+", default=[4, 16])
    parser.add_argument("--filesystem", default="none", choices=["none", "glusterfs"])
    args = parser.parse_args()
    for nodes in args.nodes:
        measure(nodes, args.filesystem)


if __name__ == "__main__":
    main()
