"""Issue 21 on the shared sandbox: while `provision deploy` runs, a second changing command exits 3 naming it.

Only commands that are harmless if the lock ever failed are started second (`up` and `deploy` converge an existing
cluster); `down` is left to the unit tests, so a regression here can never tear down the session's cluster.
"""
from __future__ import annotations

import subprocess
import time

import pytest

from conftest import PROVISION, provision
from provision.cluster.lock import recorded_holder
from provision.spec.loader import load_spec
from provision.state import ClusterState

pytestmark = pytest.mark.e2e


def _wait_for_holder(state, pid: int, timeout: float = 120) -> None:
    """Until the lock file names the process `pid` as its holder."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        holder = recorded_holder(state)
        if holder is not None and holder.pid == pid:
            return
        time.sleep(0.2)
    pytest.fail(f"deploy (PID {pid}) never took the cluster lock")


def test_a_second_command_is_refused_while_deploy_runs(slurm_cluster):
    spec = str(slurm_cluster.spec_path)
    state = ClusterState.for_spec(load_spec(slurm_cluster.spec_path))
    deploy = subprocess.Popen([*PROVISION, "deploy", spec, "--quiet"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_holder(state, deploy.pid)
        for argv in (["up", spec, "--quiet"], ["deploy", spec, "--quiet"]):
            second = provision(*argv, check=False, timeout=120)
            assert deploy.poll() is None, "deploy ended before the second command was refused; nothing was tested"
            assert second.returncode == 3, second.stderr
            assert f"is busy: `provision deploy` (PID {deploy.pid} on " in second.stderr
    finally:
        out, err = deploy.communicate(timeout=1500)
    assert deploy.returncode == 0, err[-3000:]  # the first command was not disturbed
    assert recorded_holder(state) is None  # and released the lock cleanly
