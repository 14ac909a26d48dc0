"""Faults on a running sandbox cluster, for tests: stop/start nodes, slow or cut links, cut one pair, stop services.

Each call names the state root (None: the default one), the cluster and the node, and returns when the
fault is in place (start_node: when sshd answers again)."""
from __future__ import annotations

from pathlib import Path

from provision.errors import SandboxError
from provision.providers.sandbox import commands, fleet, network, node, record
from provision.providers.sandbox.record import NodeRecord, SandboxRecord
from provision.state import ClusterState, state_root

IFB = "ifb0"  # inside the node's netns: carries its inbound traffic so it can be shaped too


def stop_node(root: Path | None, cluster: str, name: str) -> None:
    """Stop a node like a power-off that lets services exit: its processes end, its disk (upper layer) stays."""
    state, rec, _ = _target(root, cluster, name)
    survivors = fleet.halt(state, rec, [name])
    if survivors:
        raise SandboxError(f"node {name} would not stop")


def start_node(root: Path | None, cluster: str, name: str, timeout: float = 60.0) -> None:
    """Start a stopped node again (enabled units come back through `systemctl default`); wait for sshd."""
    state, rec, item = _target(root, cluster, name)
    prefixlen = int(rec.subnet.split("/")[1])
    network.ensure_node_link(item.netns, item.veth, rec.bridge, item.address, prefixlen)
    fleet.boot(state, rec, [name], ssh_timeout=timeout)


def slow_link(root: Path | None, cluster: str, name: str, delay_ms: int | None = None,
              rate: str | None = None) -> None:
    """Shape the node's link both ways: rate such as '1mbit' (tbf), delay_ms added latency (needs netem)."""
    if delay_ms is None and rate is None:
        raise SandboxError("slow_link needs delay_ms, rate or both")
    _, _, item = _target(root, cluster, name)
    _clear_shaping(item.netns)
    tc = ["tc", "-n", item.netns]
    try:
        _shape(item.netns, network.NODE_IFNAME, delay_ms, rate)
        commands.run(["ip", "-n", item.netns, "link", "add", IFB, "type", "ifb"])
        commands.run(["ip", "-n", item.netns, "link", "set", IFB, "up"])
        _shape(item.netns, IFB, delay_ms, rate)
        commands.run([*tc, "qdisc", "add", "dev", network.NODE_IFNAME, "handle", "ffff:", "ingress"])
        commands.run([*tc, "filter", "add", "dev", network.NODE_IFNAME, "parent", "ffff:", "protocol", "all",
                      "u32", "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", IFB])
    except SandboxError:
        _clear_shaping(item.netns)
        raise


def cut_link(root: Path | None, cluster: str, name: str) -> None:
    """Take the node's network link down: it keeps running but nothing reaches it."""
    _, _, item = _target(root, cluster, name)
    commands.run(["ip", "-n", item.netns, "link", "set", network.NODE_IFNAME, "down"])


def restore_link(root: Path | None, cluster: str, name: str) -> None:
    """Undo slow_link and cut_link: no shaping, link up."""
    _, _, item = _target(root, cluster, name)
    _clear_shaping(item.netns)
    commands.run(["ip", "-n", item.netns, "link", "set", network.NODE_IFNAME, "up"])


def cut_pair(root: Path | None, cluster: str, a: str, b: str) -> None:
    """Break traffic between two nodes and nothing else: each node's netns refuses the other's address (a prohibit
    route: a connection fails at once instead of hanging); both keep talking to every other node."""
    _, _, first = _target(root, cluster, a)
    _, _, second = _target(root, cluster, b)
    for argv in pair_routes(first, second, "replace"):
        commands.run(argv)


def restore_pair(root: Path | None, cluster: str, a: str, b: str) -> None:
    """Undo cut_pair (a route already gone is fine)."""
    _, _, first = _target(root, cluster, a)
    _, _, second = _target(root, cluster, b)
    for argv in pair_routes(first, second, "del"):
        commands.run(argv, check=False)


def pair_routes(first: NodeRecord, second: NodeRecord, verb: str) -> list[list[str]]:
    """The two `ip route` commands of cut_pair ("replace") or restore_pair ("del"), one in each node's netns."""
    return [["ip", "-n", here.netns, "route", verb, "prohibit", f"{there.address}/32"]
            for here, there in ((first, second), (second, first))]


def stop_service(root: Path | None, cluster: str, name: str, unit: str) -> None:
    """Stop a systemd unit inside the node (through its systemctl), as if the daemon had died."""
    _, _, item = _target(root, cluster, name)
    commands.run(node.exec_argv(item, ["systemctl", "stop", unit]), timeout=120)


def _shape(netns: str, device: str, delay_ms: int | None, rate: str | None) -> None:
    """One device's egress: netem for delay (with its own rate option), tbf for rate alone."""
    base = ["tc", "-n", netns, "qdisc", "add", "dev", device, "root"]
    if delay_ms is None:
        commands.run([*base, "tbf", "rate", str(rate), "burst", "32kbit", "latency", "400ms"])
        return
    result = commands.run([*base, "netem", "delay", f"{delay_ms}ms", *(["rate", rate] if rate else [])],
                          check=False)
    if result.returncode != 0:
        raise SandboxError(f"cannot add {delay_ms} ms of delay: {result.stderr.strip() or 'tc failed'}",
                           hint="delay needs the kernel's netem qdisc (CONFIG_NET_SCH_NETEM); "
                                "slow_link(rate='1mbit') alone works without it")


def _clear_shaping(netns: str) -> None:
    """Remove whatever slow_link added (missing pieces are fine)."""
    for argv in (["tc", "-n", netns, "qdisc", "del", "dev", network.NODE_IFNAME, "root"],
                 ["tc", "-n", netns, "qdisc", "del", "dev", network.NODE_IFNAME, "ingress"],
                 ["ip", "-n", netns, "link", "del", IFB]):
        commands.run(argv, check=False)


def _target(root: Path | None, cluster: str, name: str) -> tuple[ClusterState, SandboxRecord, NodeRecord]:
    """The cluster's state, its sandbox record and the named node, or a clear error."""
    state = ClusterState(state_root(root), cluster)
    rec = record.load(state)
    if rec is None:
        raise SandboxError(f"no sandbox cluster '{cluster}' under {state.root}",
                           hint="bring it up first (`provision up SPEC`)")
    if name not in rec.nodes:
        raise SandboxError(f"cluster '{cluster}' has no node '{name}'",
                           hint=f"its nodes are {', '.join(rec.nodes)}")
    return state, rec, rec.nodes[name]
