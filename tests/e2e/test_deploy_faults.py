"""Issue 4 faults on the shared sandbox: an unreachable node, --retry-failed, and a SIGTERM mid-run."""
from __future__ import annotations

import signal
import subprocess
import time

import pytest

from conftest import PROVISION
from provision.providers.sandbox import faults

pytestmark = pytest.mark.e2e


def test_stopped_node_is_named_others_finish_then_retry_failed_converges_it(slurm_cluster):
    victim = slurm_cluster.compute[-1]
    state_root, name = faults_target(slurm_cluster)
    faults.stop_node(state_root, name, victim)
    try:
        rc, result = slurm_cluster.deploy()
        assert rc == 1
        statuses = {h["host"]: h["status"] for h in result["hosts"]}
        assert statuses[victim] == "unreachable"
        assert result["failed_hosts"] == [victim]
        assert all(s in ("ok", "changed") for h, s in statuses.items() if h != victim)
    finally:
        faults.start_node(state_root, name, victim)
    rc, result = slurm_cluster.deploy("--retry-failed")
    assert rc == 0, result
    assert [h["host"] for h in result["hosts"]] == [victim]
    out = slurm_cluster.ssh(slurm_cluster.controller, f"sinfo -h -n {victim} -o %t").stdout.strip()
    assert out == "idle"


def test_deploy_killed_mid_run_converges_when_run_again(slurm_cluster):
    for node in slurm_cluster.compute:
        slurm_cluster.ssh(node, "rm -f /etc/slurm/gres.conf /etc/slurm/cgroup.conf")
    process = subprocess.Popen([*PROVISION, "deploy", str(slurm_cluster.spec_path), "--quiet"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(6)
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=300)
    assert process.returncode != 0, output
    rc, result = slurm_cluster.deploy()
    assert rc == 0, result
    for node in slurm_cluster.compute:
        slurm_cluster.ssh(node, "test -f /etc/slurm/gres.conf && test -f /etc/slurm/cgroup.conf")
    assert slurm_cluster.ssh(slurm_cluster.controller, "srun -N3 true", check=False).returncode == 0


def faults_target(cluster):
    """What the sandbox faults API needs to find the cluster."""
    from provision.state import ClusterState
    from provision.spec.loader import load_spec

    state = ClusterState.for_spec(load_spec(cluster.spec_path))
    return state.root, state.cluster
