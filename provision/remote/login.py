"""`provision ssh`: the system ssh command line that logs in to a node the way Ansible does.

The same options as Ansible's path (provision.remote.ssh_options): host keys checked against the cluster's known_hosts
(StrictHostKeyChecking=yes, first on the line), the cluster's key, the spec's user and port, the provider's jump host
as a verifying ProxyCommand, and $PROVISION_SSH_CONFIG as -F. Everything reaches ssh as separate arguments; the
destination comes after `--`, so no value is read as an option.
"""
from __future__ import annotations

from collections.abc import Sequence

from provision.errors import UsageError
from provision.records import ClusterInfo, NodeInfo
from provision.remote import ssh_options
from provision.remote.commands import command_line, node_hint

SSH = "ssh"


def find_node(cluster: ClusterInfo, name: str) -> NodeInfo:
    """The named node; a UsageError with "did you mean" when the cluster has none of that name."""
    try:
        return cluster.node(name)
    except KeyError:
        raise UsageError(f"'{name}' is not a node of {cluster.name}", hint=node_hint(cluster, name)) from None


def ssh_argv(cluster: ClusterInfo, name: str, command: Sequence[str] = ()) -> list[str]:
    """`ssh <options> -- <address> [command]` for the named node; the command as `exec` takes it (one argument is a
    shell command line, several are each quoted)."""
    node = find_node(cluster, name)
    argv = [SSH, *ssh_options.config_args(), *ssh_options.host_key_args(cluster.known_hosts_path)]
    if cluster.ssh_key_path is not None:
        argv += ["-i", ssh_options.option_path(cluster.ssh_key_path)]
    jump = cluster.vars.get("ssh_jump_host")
    if jump and node.address != jump:
        argv += ["-o", f"ProxyCommand={ssh_options.proxy_command(cluster, jump)}"]
    if node.ssh_port != 22:
        argv += ["-p", str(node.ssh_port)]
    argv += ["-l", cluster.ssh_user, "--", node.address or node.name]
    return argv + [command_line(command)] if command else argv
