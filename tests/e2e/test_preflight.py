"""Issue 5 on the shared sandbox: healthy nodes pass; each fault gives the right verdict on the right node."""
from __future__ import annotations

import json
import socket
import subprocess
import time

import pytest

from conftest import provision
from provision.cluster import lifecycle
from provision.preflight import run_preflight
from provision.providers.sandbox import faults
from provision.spec.loader import load_spec
from test_deploy_faults import faults_target

pytestmark = pytest.mark.e2e

HOST_KEYS = "/etc/ssh/ssh_host_ed25519_key /etc/ssh/ssh_host_ed25519_key.pub"


def _ssh_verdicts(cluster) -> dict[str, tuple[str, str]]:
    report = run_preflight(cluster.info)
    return {n.name: (n.check("ssh").verdict, n.check("ssh").detail) for n in report.nodes}


def test_healthy_nodes_pass_preflight(slurm_cluster):
    result = provision("preflight", str(slurm_cluster.spec_path), "--json")
    report = json.loads(result.stdout)
    assert sorted(n["name"] for n in report["nodes"]) == sorted(n.name for n in slurm_cluster.info.nodes)
    assert all(n["verdict"] in ("pass", "warn") for n in report["nodes"])
    for node in report["nodes"]:
        checks = {c["id"]: c["verdict"] for c in node["checks"]}
        assert checks["ssh"] == checks["privilege"] == checks["os"] == checks["python3"] == "pass"
        assert checks["hostname"] == "pass" and checks["clock"] == "pass"
        assert checks["gpus"] == "n/a" and checks["fabric"] == "n/a"
        # sandbox nodes share the host kernel, whose headers Debian does not ship: a warning, not a failure
        assert checks["kernel_headers"] == "warn"


def test_stopped_node_fails_ssh_on_that_node_only(slurm_cluster):
    victim = slurm_cluster.compute[0]
    root, name = faults_target(slurm_cluster)
    faults.stop_node(root, name, victim)
    try:
        verdicts = _ssh_verdicts(slurm_cluster)
    finally:
        faults.start_node(root, name, victim)
    assert verdicts[victim][0] == "fail"
    assert any(word in verdicts[victim][1] for word in ("timed out", "refused", "No route", "unreachable"))
    assert {n: v for n, (v, _) in verdicts.items() if n != victim} == {
        n.name: "pass" for n in slurm_cluster.info.nodes if n.name != victim}


def test_wrong_key_fails_authentication_on_that_node_only(slurm_cluster):
    victim = slurm_cluster.compute[1]
    slurm_cluster.ssh(victim, "cp /root/.ssh/authorized_keys /root/.ssh/authorized_keys.keep && "
                              "ssh-keygen -q -t ed25519 -N '' -f /root/other && cp /root/other.pub /root/.ssh/authorized_keys")
    try:
        verdicts = _ssh_verdicts(slurm_cluster)
    finally:
        _restore_inside(slurm_cluster, victim,
                        "mv /root/.ssh/authorized_keys.keep /root/.ssh/authorized_keys && rm -f /root/other /root/other.pub")
    assert verdicts[victim][0] == "fail" and "authentication failed" in verdicts[victim][1]
    assert sum(v == "fail" for v, _ in verdicts.values()) == 1
    slurm_cluster.ssh(victim, "true")


def test_changed_host_key_is_refused_with_the_ssh_keygen_hint(slurm_cluster):
    victim = slurm_cluster.compute[2]
    slurm_cluster.ssh(victim, f"mkdir -p /root/hostkeys && cp {HOST_KEYS} /root/hostkeys/ && rm -f {HOST_KEYS} && "
                              "ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key && "
                              "kill -HUP $(cat /run/sshd.pid)")
    _wait_listening(slurm_cluster.info.node(victim).address)
    try:
        verdicts = _ssh_verdicts(slurm_cluster)
    finally:
        _restore_inside(slurm_cluster, victim, "cp /root/hostkeys/* /etc/ssh/ && kill -HUP $(cat /run/sshd.pid)")
    assert verdicts[victim][0] == "fail"
    assert "host key changed" in verdicts[victim][1] and "ssh-keygen -f" in verdicts[victim][1]
    assert sum(v == "fail" for v, _ in verdicts.values()) == 1
    slurm_cluster.ssh(victim, "true")


def _wait_listening(address: str, port: int = 22) -> None:
    """sshd re-executes itself on SIGHUP: wait until it accepts connections again (no SSH, keys differ)."""
    for _ in range(100):
        try:
            socket.create_connection((address, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"{address}:{port} is not listening")


def _restore_inside(cluster, node: str, command: str) -> None:
    """Undo a fault without SSH (the fault broke it): run the command in the node's namespaces via its init PID."""
    pid = lifecycle.current_cluster(load_spec(cluster.spec_path)).node(node).provider_id
    subprocess.run(["nsenter", "-t", str(pid), "-m", "-u", "-i", "-n", "-p", "-r", "-w", "sh", "-c", command],
                   check=True, timeout=60)
    for _ in range(50):  # sshd re-executes itself on SIGHUP: wait until it listens again
        if cluster.ssh(node, "true", check=False).returncode == 0:
            return
        time.sleep(0.2)


def test_nodes_are_reached_through_a_jump_host_with_keys_verified(slurm_cluster):
    """The aws provider reaches EFA nodes through the controller; the sandbox proves the same path for real."""
    live = lifecycle.current_cluster(load_spec(slurm_cluster.spec_path))
    jumping = live.model_copy(update={"vars": {**live.vars, "ssh_jump_host": live.controller.address}})
    report = run_preflight(jumping)
    assert {n.name: n.check("ssh").verdict for n in report.nodes} == {n.name: "pass" for n in live.nodes}
    from provision.remote.commands import run_on
    seen_from = run_on(jumping, jumping.node(slurm_cluster.compute[0]), "echo $SSH_CLIENT").stdout.split()[0]
    assert seen_from == live.controller.address  # the session came in through the controller
