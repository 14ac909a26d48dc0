"""Issue 22 end to end on the shared 4-node sandbox: the cheap re-run still finds and corrects drift.

A converged node answers each role in one read-only probe, so a re-run changes nothing and only reads the nodes;
after a file, a daemon or a package is changed by hand on one node, the next deploy changes exactly that, on that
node only, and a re-run after it is back to changed=0. (Speed itself is measured by bench/deploy_scale.py.)
`deploy --check` shows the drift of a file as a unified diff (issue 32), in --json too with rc 4, and never a
secret: the accounting password and the munge key are in no output.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from conftest import provision
from provision.spec.loader import load_spec
from provision.state import ClusterState

pytestmark = pytest.mark.e2e

PROBED_ROLES = ("common", "munge", "slurm", "mpi", "certify")


def _changed(result: dict) -> dict[str, int]:
    return {h["host"]: h["changed"] for h in result["hosts"]}


def _expect_only(cluster, result: dict, victim: str, changes: int) -> None:
    assert result["rc"] == 0, result
    assert _changed(result) == {n.name: changes if n.name == victim else 0 for n in cluster.info.nodes}


def _node_tasks(artifacts: Path, host: str) -> list[tuple[str, str, str]]:
    """(role, action, task) of every task that ran on the host in a run (local actions and skips left out)."""
    local = {"assert", "debug", "set_fact", "meta", "include_tasks", "import_tasks", "include_vars",
             "validate_argument_spec"}  # a role's argument check, at its start, on the control node
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
    # each role's one read of the node (the node_probe action: one remote command, as raw was)
    assert ran and all(action == "node_probe" and task.startswith("Read ") for _, action, task in ran), ran


HOSTS_TASK = "List every cluster node in /etc/hosts (from the inventory, not live facts)"
READ_BLOCK = "sed -n '/^# BEGIN gpu-provision/,/^# END gpu-provision/p' /etc/hosts"
DBD_CONF = "/etc/slurm/slurmdbd.conf"


def test_editing_one_file_on_one_node_is_shown_by_check_as_a_diff_and_corrected_there_only(slurm_cluster):
    """--check prints the victim's /etc/hosts diff; the accounting password, whose file was drifted on the
    controller too, is in no line of it (a no_log task: named nowhere, diffed nowhere); the deploy corrects both."""
    victim, controller = slurm_cluster.compute[1], slurm_cluster.controller
    password = ClusterState.for_spec(load_spec(slurm_cluster.spec_path)).secrets.db_password.read_text().strip()
    block = slurm_cluster.ssh(victim, READ_BLOCK).stdout
    dbd = slurm_cluster.ssh(controller, f"sha256sum {DBD_CONF}").stdout
    slurm_cluster.ssh(victim, f"sed -i '/ {controller}$/d' /etc/hosts")
    slurm_cluster.ssh(controller, f"sed -i 's/^StoragePass=.*/StoragePass=drifted-by-hand/' {DBD_CONF}")
    try:
        shown = provision("deploy", str(slurm_cluster.spec_path), "--check", "--quiet", check=False)
        assert shown.returncode == 4, shown.stderr
        printed = shown.stdout + shown.stderr
        assert f"diff on {victim} (1 host): {HOSTS_TASK}" in shown.stdout
        assert re.search(rf"^\+\S+\s+{controller}$", shown.stdout, re.MULTILINE), shown.stdout
        assert password not in printed and "drifted-by-hand" not in printed and "StoragePass" not in printed
    finally:
        rc, result = slurm_cluster.deploy()
    assert rc == 0 and password not in json.dumps(result)
    changed = _changed(result)
    assert changed[victim] == 1 and changed[controller] > 0  # the controller: slurmdbd.conf and its restart
    assert all(count == 0 for host, count in changed.items() if host not in (victim, controller)), changed
    assert next(h["changed_tasks"] for h in result["hosts"] if h["host"] == victim) == [HOSTS_TASK]
    assert slurm_cluster.ssh(victim, READ_BLOCK).stdout == block
    assert slurm_cluster.ssh(controller, f"sha256sum {DBD_CONF}").stdout == dbd
    _expect_only(slurm_cluster, slurm_cluster.deploy()[1], "", 0)


def test_a_daemon_a_package_and_a_built_file_each_gone_from_one_node_come_back_there_only(slurm_cluster):
    """Three kinds of drift at once, each on a node of its own, in one deploy: munged stopped (started again), iperf3
    removed (installed again), the MPI check's binary deleted (tasks/mpi.yml compiles it; the unpack command builds it
    on a fresh node). Each victim changes exactly that, every other node nothing."""
    stopped, removed, deleted = slurm_cluster.compute[:3]
    binary = "/opt/gpu-provision/certify/bin/mpi-check"
    slurm_cluster.ssh(stopped, "systemctl stop munge")
    slurm_cluster.ssh(removed, "DEBIAN_FRONTEND=noninteractive apt-get remove -y -q iperf3", timeout=300)
    slurm_cluster.ssh(deleted, f"test -x {binary} && rm {binary}")
    rc, result = slurm_cluster.deploy()
    assert result["rc"] == 0, result
    assert _changed(result) == {n.name: 1 if n.name in (stopped, removed, deleted) else 0
                                for n in slurm_cluster.info.nodes}
    tasks = {h["host"]: h["changed_tasks"] for h in result["hosts"]}
    assert tasks[deleted] == ["Compile the MPI check with mpicc"]
    assert tasks[stopped] != tasks[removed] and len(tasks[stopped]) == len(tasks[removed]) == 1, tasks
    credential = slurm_cluster.ssh(stopped, "munge -n").stdout
    assert "Success" in slurm_cluster.ssh(slurm_cluster.controller, "unmunge", input=credential).stdout
    slurm_cluster.ssh(removed, "command -v iperf3")
    slurm_cluster.ssh(deleted, f"test -x {binary}")


def test_a_munge_key_changed_on_one_node_is_named_by_check_and_replaced_there_only(slurm_cluster):
    """The key travels inside one module run (no copy, never on a command line): --check names it without the
    secret and changes nothing; the deploy puts the cluster's key back on that node alone, 0400 munge."""
    victim = slurm_cluster.compute[0]
    key = ClusterState.for_spec(load_spec(slurm_cluster.spec_path)).secrets.munge_key.read_bytes()
    read_key = "sha256sum < /etc/munge/munge.key | cut -d' ' -f1; stat -c '%U %G %a' /etc/munge/munge.key"
    slurm_cluster.ssh(victim, "head -c 1024 /dev/urandom > /etc/munge/munge.key")
    slurm_cluster.ssh(victim, f"sed -i '/ {slurm_cluster.controller}$/d' /etc/hosts")  # and a file with a diff
    try:
        rc, result = slurm_cluster.deploy("--check")
        assert rc == 4 and result["rc"] == 4 and result["changed_hosts"] == [victim], result["hosts"]
        tasks = next(h["changed_tasks"] for h in result["hosts"] if h["host"] == victim)
        assert "Report that the cluster's munge key would be installed (--check)" in tasks
        [diff] = result["diffs"]  # the hosts file's; the key's task is no_log: no diff, no content
        assert (diff["task"], diff["nodes"]) == (HOSTS_TASK, [victim])
        assert re.search(rf"^\+\S+\s+{slurm_cluster.controller}$", diff["diff"], re.MULTILINE), diff
        assert key.hex() not in json.dumps(result) and "munge.key" not in diff["diff"]
        assert slurm_cluster.ssh(victim, read_key).stdout.split()[0] != hashlib.sha256(key).hexdigest()
    finally:
        rc, result = slurm_cluster.deploy()
    assert rc == 0 and result["changed_hosts"] == [victim], result["hosts"]
    # The install task is no_log (its event carries no result, so no task name is listed); the restart it notified is.
    assert "Restart munge" in next(h["changed_tasks"] for h in result["hosts"] if h["host"] == victim)
    assert slurm_cluster.ssh(victim, read_key).stdout.split() == [hashlib.sha256(key).hexdigest(), "munge", "munge",
                                                                  "400"]
    assert key.hex() not in json.dumps(result)  # the secret is in no result
    credential = slurm_cluster.ssh(victim, "munge -n").stdout
    assert "Success" in slurm_cluster.ssh(slurm_cluster.controller, "unmunge", input=credential).stdout
    _expect_only(slurm_cluster, slurm_cluster.deploy()[1], victim, 0)
