"""Run a step's task the way Slurm would, here: one local bash process per node, all at once, with the node's name
in $SLURMD_NODENAME and the stand-in iperf3 and ss of tests/fixtures/fake_iperf3 first on PATH (its files in
`folder`)."""
from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

FAKE = Path(__file__).resolve().parents[2] / "fixtures" / "fake_iperf3"


def run_tasks(program: str, nodes: Iterable[str], folder: Path, timeout: float = 120.0,
              default_gbps: float | None = None) -> dict[str, str]:
    """{node: what its task printed}; `default_gbps`: the rate of a pair the rates file does not list."""
    (folder / "refuse").mkdir(parents=True, exist_ok=True)
    (folder / "rates").touch()
    env = {**os.environ, "PATH": f"{FAKE}:{os.environ['PATH']}", "FAKE_IPERF3": str(folder)}
    if default_gbps is not None:
        env["FAKE_IPERF3_DEFAULT_GBPS"] = str(default_gbps)
    tasks = {node: subprocess.Popen(["bash", "-c", program], env={**env, "SLURMD_NODENAME": node},
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for node in nodes}
    return {node: task.communicate(timeout=timeout)[0] for node, task in tasks.items()}
