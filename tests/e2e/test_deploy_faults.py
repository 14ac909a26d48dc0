"""Issue 4 faults on the shared sandbox: an unreachable node, --retry-failed, and a SIGTERM mid-run; `exec` to the
stopped node names it and the cause, in --json too, with no traceback (issue 32)."""
from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from conftest import PROVISION, provision
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
        _exec_names_the_stopped_node(slurm_cluster, victim)
    finally:
        faults.start_node(state_root, name, victim)
    rc, result = slurm_cluster.deploy("--retry-failed")
    assert rc == 0, json.dumps([h for h in result["hosts"] if h["status"] not in ("ok", "changed")] or result)
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


def _exec_names_the_stopped_node(cluster, victim: str) -> None:
    """One node of several unreachable: its block and error name it; --json gives the cause, never a traceback."""
    shown = provision("exec", str(cluster.spec_path), "--node", "all", "--", "hostname", check=False, timeout=120)
    assert shown.returncode == 255, shown.stderr
    assert f"\n{victim} (1 node, exit 255)\n" in shown.stdout and f"error: {victim}: " in shown.stderr
    assert "Traceback" not in shown.stdout + shown.stderr and "SSHException" not in shown.stderr
    as_json = provision("exec", str(cluster.spec_path), "-n", victim, "--json", "--", "hostname", check=False,
                        timeout=120)
    [node] = json.loads(as_json.stdout)["nodes"]
    assert (node["node"], node["rc"], node["stdout"]) == (victim, 255, "") and node["error"], node
    assert "Traceback" not in as_json.stdout + as_json.stderr and as_json.stderr == ""
