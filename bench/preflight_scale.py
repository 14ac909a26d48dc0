"""Time preflight over real SSH against a sandbox of N nodes (default 16); prints seconds per run.

Run as root: .venv/bin/python bench/preflight_scale.py [--nodes 16] [--runs 3] [--keep]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from provision.cluster import lifecycle
from provision.cluster.lifecycle import get_provider
from provision.preflight import run_preflight
from provision.spec.loader import load_spec

SPEC = """\
name: pfbench
provider: {{type: sandbox, subnet: 10.94.0.0/24}}
node_groups:
  - {{name: ctl, roles: [controller], count: 1}}
  - {{name: cn, roles: [compute], count: {compute}}}
"""


def main() -> None:
    """Bring the nodes up (SSH only, no deploy), run preflight several times, print the figures, tear down."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="leave the nodes up")
    args = parser.parse_args()
    spec_path = Path(tempfile.mkdtemp()) / "pfbench.yaml"
    spec_path.write_text(SPEC.format(compute=args.nodes - 1))
    spec = load_spec(spec_path)
    provider = get_provider(spec)
    start = time.perf_counter()
    provider.create()
    print(f"sandbox up, {args.nodes} nodes: {time.perf_counter() - start:.2f} s")
    try:
        for run in range(1, args.runs + 1):
            report = run_preflight(lifecycle.current_cluster(spec))
            verdicts = sorted({n.verdict for n in report.nodes})
            print(f"preflight run {run}: {len(report.nodes)} nodes in {report.elapsed_s:.2f} s; verdicts {verdicts}")
    finally:
        if not args.keep:
            provider.destroy()
            print("sandbox removed")


if __name__ == "__main__":
    main()
