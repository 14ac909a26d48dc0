"""Run a command on a cluster node over SSH with the cluster's key and known_hosts (host keys verified)."""
from __future__ import annotations

from dataclasses import dataclass

from provision.adaptors import ssh
from provision.errors import UsageError
from provision.records import ClusterInfo, NodeInfo


@dataclass
class CommandResult:
    """Exit status and output of one remote command."""

    node: str
    rc: int
    stdout: str
    stderr: str


def pick_node(cluster: ClusterInfo, name: str | None) -> NodeInfo:
    """The named node, or the controller when no name is given."""
    if name is None:
        return cluster.controller
    try:
        return cluster.node(name)
    except KeyError:
        names = ", ".join(n.name for n in cluster.nodes)
        raise UsageError(f"--node: '{name}' is not a node of {cluster.name}", hint=f"use one of {names}") from None


def ssh_target(cluster: ClusterInfo, node: NodeInfo) -> ssh.SshTarget:
    """How to log in to a node: the cluster key, its known_hosts, and the jump host when the provider set one."""
    jump = None
    if cluster.vars.get("ssh_jump_host") and node.address != cluster.vars["ssh_jump_host"]:
        jump = ssh.SshTarget(host=cluster.vars["ssh_jump_host"], port=22, user=cluster.ssh_user,
                             key_path=cluster.ssh_key_path, known_hosts_path=cluster.known_hosts_path)
    return ssh.SshTarget(host=node.address or node.name, port=node.ssh_port, user=cluster.ssh_user,
                         key_path=cluster.ssh_key_path, known_hosts_path=cluster.known_hosts_path, jump=jump)


def run_on(cluster: ClusterInfo, node: NodeInfo, command: str, timeout: float = 300.0) -> CommandResult:
    """Run one command on one node; raises ConnectionFailure if the node cannot be reached."""
    with ssh.connect(ssh_target(cluster, node)) as client:
        rc, out, err = ssh.run(client, command, timeout)
    return CommandResult(node.name, rc, out, err)
