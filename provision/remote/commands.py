"""Run a command on cluster nodes over SSH with the cluster's key and known_hosts (host keys verified).

One node or many: `select_nodes` turns --node selectors (a hostlist expression, a group name, or `all`) into
nodes, `run_across` runs one command on them in parallel, `fold` groups nodes whose outcome is identical (like
clush -b). A command runs for at most its timeout; then it is stopped on the node (adaptors.ssh.run_within).
"""
from __future__ import annotations

import difflib
import shlex
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from provision import hostlist
from provision.adaptors import ssh
from provision.errors import ConnectionFailure, ProvisionError, SpecError, UsageError
from provision.records import ClusterInfo, NodeInfo

MAX_PARALLEL = 32
UNREACHABLE_RC = 255  # what ssh itself exits with when it cannot run the command
TIMED_OUT_RC = 124  # as timeout(1): the command ran past its time and was stopped
DEFAULT_TIMEOUT_S = 300.0
EVERY_NODE = "all"  # the --node selector for every node (a reserved name: no group or node is called so)


@dataclass
class CommandResult:
    """Exit status and output of one remote command; `error` says why it did not finish (unreachable node, timeout),
    without the node's name."""

    node: str
    rc: int
    stdout: str
    stderr: str
    error: str | None = None


def pick_node(cluster: ClusterInfo, name: str | None) -> NodeInfo:
    """The named node, or the controller when no name is given."""
    if name is None:
        return cluster.controller
    try:
        return cluster.node(name)
    except KeyError:
        raise UsageError(f"--node: '{name}' is not a node of {cluster.name}", hint=node_hint(cluster, name)) from None


def node_hint(cluster: ClusterInfo, name: str) -> str:
    """"did you mean compute01?" when a node's name is close, else the cluster's nodes as a hostlist."""
    close = sorted(difflib.get_close_matches(name, [n.name for n in cluster.nodes], n=3, cutoff=0.6))
    every = hostlist.compress(n.name for n in cluster.nodes)
    return f"did you mean {' or '.join(close)}? (nodes: {every})" if close else f"use one of {every}"


def ssh_target(cluster: ClusterInfo, node: NodeInfo) -> ssh.SshTarget:
    """How to log in to a node: the cluster key, its known_hosts, and the jump host when the provider set one.

    As in the inventory, port 22 counts as not set, so the user's ssh config may name another (ssh.connect applies
    the config)."""
    jump = None
    if cluster.vars.get("ssh_jump_host") and node.address != cluster.vars["ssh_jump_host"]:
        jump = ssh.SshTarget(host=cluster.vars["ssh_jump_host"], port=None, user=cluster.ssh_user,
                             key_path=cluster.ssh_key_path, known_hosts_path=cluster.known_hosts_path)
    return ssh.SshTarget(host=node.address or node.name, port=None if node.ssh_port == 22 else node.ssh_port,
                         user=cluster.ssh_user, key_path=cluster.ssh_key_path,
                         known_hosts_path=cluster.known_hosts_path, jump=jump)


def run_on(cluster: ClusterInfo, node: NodeInfo, command: str, timeout: float = DEFAULT_TIMEOUT_S,
           stdin: bytes | None = None) -> CommandResult:
    """Run one command on one node for at most `timeout` seconds (then it is stopped there), `stdin` its input;
    raises ConnectionFailure naming the node if it cannot be reached, ssh.CommandTimeout (one) if the command ran out
    of time."""
    try:
        with ssh.connect(ssh_target(cluster, node)) as client:
            rc, out, err = ssh.run_within(client, command, timeout, stdin)
    except ConnectionFailure as exc:
        exc.message = f"{node.name}: {exc.message}"  # the same error, its message naming the node
        raise
    return CommandResult(node.name, rc, out, err)


Runner = Callable[[ClusterInfo, NodeInfo, str], CommandResult]


@dataclass(frozen=True)
class OutputBlock:
    """Nodes whose command ended the same way: the same exit status, stdout and stderr."""

    nodes: tuple[str, ...]
    rc: int
    stdout: str
    stderr: str
    error: str | None = None

    @property
    def hostlist(self) -> str:
        """The nodes folded into one hostlist expression ("compute[01-03]")."""
        return hostlist.compress(self.nodes)


def command_line(argv: Sequence[str]) -> str:
    """The remote command line: one argument is a shell command as written (`exec -- 'ls | wc'`); several are
    each quoted, so they arrive exactly as given (`exec -- bash -c 'echo a b'`)."""
    if not argv:
        raise UsageError("no command given", hint="put the command after --, such as: exec SPEC -- uptime")
    return argv[0] if len(argv) == 1 else shlex.join(argv)


def select_nodes(cluster: ClusterInfo, selectors: Sequence[str]) -> list[NodeInfo]:
    """The nodes that the selectors name, in cluster order; the controller when there are none, every node for
    `all`."""
    if not selectors:
        return [cluster.controller]
    if EVERY_NODE in selectors:
        return list(cluster.nodes)
    wanted = {name for selector in selectors for name in _names(cluster, selector)}
    return [node for node in cluster.nodes if node.name in wanted]


def _names(cluster: ClusterInfo, selector: str) -> list[str]:
    """One selector: a group's nodes, or the names of a hostlist expression (each must be a node)."""
    group = [node.name for node in cluster.nodes if node.group == selector]
    if group:
        return group
    try:
        names = hostlist.expand(selector, limit=len(cluster.nodes))
    except SpecError as exc:
        raise UsageError(f"--node: {exc.message}", hint=_choices(cluster)) from None
    for name in names:
        pick_node(cluster, name)
    return names


def _choices(cluster: ClusterInfo) -> str:
    """The hint for a selector that names nothing."""
    groups = ", ".join(dict.fromkeys(node.group for node in cluster.nodes))
    return (f"give a hostlist such as {hostlist.compress(n.name for n in cluster.nodes)}, a group ({groups}) or "
            f"{EVERY_NODE}")


def run_across(cluster: ClusterInfo, nodes: Sequence[NodeInfo], command: str, runner: Runner | None = None,
               max_parallel: int = MAX_PARALLEL, timeout: float = DEFAULT_TIMEOUT_S) -> list[CommandResult]:
    """Run one command on every node at once (at most `max_parallel` at a time, each for at most `timeout` seconds);
    results in the nodes' order. A node that cannot be reached gives exit status 255, a command stopped at its
    timeout 124 (with what it wrote until then), each with the reason in `error`, instead of stopping the others."""

    def one(node: NodeInfo) -> CommandResult:
        try:
            return runner(cluster, node, command) if runner else run_on(cluster, node, command, timeout)
        except ssh.CommandTimeout as exc:
            return CommandResult(node.name, TIMED_OUT_RC, exc.stdout, exc.stderr, _reason(exc, node))
        except ProvisionError as exc:
            return CommandResult(node.name, UNREACHABLE_RC, "", "", _reason(exc, node))
    with ThreadPoolExecutor(max_workers=max(1, min(max_parallel, len(nodes)))) as pool:
        return list(pool.map(one, nodes))


def _reason(exc: ProvisionError, node: NodeInfo) -> str:
    """An error's line without the node's name in front (the result names the node), so equal causes fold."""
    return str(exc).removeprefix(f"{node.name}: ")


def fold(results: Sequence[CommandResult]) -> list[OutputBlock]:
    """One block per distinct outcome, with every node that had it; blocks in the order their first node came."""
    groups: dict[tuple[int, str, str, str | None], list[str]] = {}
    for result in results:
        groups.setdefault((result.rc, result.stdout, result.stderr, result.error), []).append(result.node)
    return [OutputBlock(tuple(nodes), rc, out, err, error) for (rc, out, err, error), nodes in groups.items()]


def worst_rc(results: Sequence[CommandResult]) -> int:
    """The exit status of a run across nodes: the highest any node returned."""
    return max((r.rc for r in results), default=0)
