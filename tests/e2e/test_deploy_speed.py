"""Issue 22 end to end on the shared 4-node sandbox: the cheap re-run still finds and corrects drift.

A converged node answers each role in one read-only probe, so a re-run changes nothing and only reads the nodes;
after a file, a daemon or a package is changed by hand on one node, the next deploy changes exactly that, on that
node only, and a re-run after it is back to changed=0. (Speed itself is measured by bench/deploy_scale.py.)
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

PROBED_ROLES = ("common", "munge", "slurm", "mpi", "certify")


def _changed(result: dict) -> dict[str, int]:
    return {h["host"]: h["changed"] for h in result["hosts"]}


def _expect_only(cluster, result: dict, victim: str, changes: int) -> None:
    assert result["rc"] == 0, result
    assert _changed(result) == {n.name: changes if n.name == victim else 0 for n in cluster.info.nodes}


def _node_tasks(artifacts: Path, host: str) -> list[tuple[str, str, str]]:
    """(role, action, task) of every task that ran on the host in a run (local actions and skips left out)."""
    local = {"assert", "debug", "set_fact", "meta", "include_tasks", "import_tasks", "include_vars"}
    found = []
    for path in artifacts.glob("job_events/*.json"):
        data = json.loads(path.read_text()).get("event_data", {})
        if data.get("host") == host and json.loads(path.read_text())["event"] == "runner_on_ok":
            action = data.get("task_action", "").split(".")[-1]
            if action not in local and not data.get("delegate_to"):
                found.append((data.get("role", ""), action, data.get("task", "")))
    return found


def test_a_converged_rerun_changes_nothing_and_only_reads_the_nodes(slurm_cluster):
    rc, result = slurm_cluster.deploy()
    _expect_only(slurm_cluster, result, "", 0)
    node = slurm_cluster.compute[0]
    ran = [t for t in _node_tasks(Path(result["artifacts_dir"]), node) if t[0] in PROBED_ROLES]
    assert ran and all(action == "raw" and task.startswith("Read ") for _, action, task in ran), ran


def test_editing_one_file_on_one_node_is_corrected_there_only(slurm_cluster):
    victim = slurm_cluster.compute[1]
    block = slurm_cluster.ssh(victim, "sed -n '/^# BEGIN gpu-provision/,/^# END gpu-provision/p' /etc/hosts").stdout
    slurm_cluster.ssh(victim, f"sed -i '/ {slurm_cluster.controller}$/d' /etc/hosts")
    rc, result = slurm_cluster.deploy()
    _expect_only(slurm_cluster, result, victim, 1)
    assert next(h["changed_tasks"] for h in result["hosts"] if h["host"] == victim) == [
        "List every cluster node in /etc/hosts (from the inventory, not live facts)"]
    assert slurm_cluster.ssh(victim, "sed -n '/^# BEGIN gpu-provision/,/^# END gpu-provision/p' /etc/hosts").stdout \
        == block
    _expect_only(slurm_cluster, slurm_cluster.deploy()[1], victim, 0)


def test_a_daemon_stopped_on_one_node_is_started_there_only(slurm_cluster):
    victim = slurm_cluster.compute[0]
    slurm_cluster.ssh(victim, "systemctl stop munge")
    rc, result = slurm_cluster.deploy()
    _expect_only(slurm_cluster, result, victim, 1)
    credential = slurm_cluster.ssh(victim, "munge -n").stdout
    assert "Success" in slurm_cluster.ssh(slurm_cluster.controller, "unmunge", input=credential).stdout


def test_a_package_removed_from_one_node_is_installed_again_there_only(slurm_cluster):
    victim = slurm_cluster.compute[-1]
    slurm_cluster.ssh(victim, "DEBIAN_FRONTEND=noninteractive apt-get remove -y -q iperf3", timeout=300)
    rc, result = slurm_cluster.deploy()
    _expect_only(slurm_cluster, result, victim, 1)
    slurm_cluster.ssh(victim, "command -v iperf3")
