"""The sandbox network: a private bridge, one network namespace and veth pair per node, a free subnet."""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, ip_network

from provision.errors import SandboxError
from provision.providers.sandbox import commands

NODE_IFNAME = "eth0"


@dataclass(frozen=True)
class Route:
    """One IPv4 route of this machine (any table): where it leads and through which device."""

    dst: IPv4Network
    dev: str


def parse_routes(text: str) -> list[Route]:
    """Routes from `ip -j -4 route show table all`, default routes left out (they overlap everything)."""
    routes = []
    for entry in json.loads(text or "[]"):
        dst = entry.get("dst", "default")
        if dst == "default":
            continue
        routes.append(Route(ip_network(dst, strict=False), entry.get("dev", "")))
    return routes


def host_routes() -> list[Route]:
    """This machine's IPv4 routes right now."""
    return parse_routes(commands.output(["ip", "-j", "-4", "route", "show", "table", "all"]))


def conflicts(subnet: IPv4Network, routes: list[Route], own_bridge: str | None) -> list[Route]:
    """Routes that overlap the subnet, ignoring the ones on this cluster's own bridge."""
    return [r for r in routes if r.dev != own_bridge and r.dst.overlaps(subnet)]


def candidates() -> Iterator[IPv4Network]:
    """Private /24s to try when the default subnet is taken: 10.99.1-255.0, then 10.98.0.0 down to 10.64.0.0."""
    for third in range(1, 256):
        yield IPv4Network(f"10.99.{third}.0/24")
    for second in range(98, 63, -1):
        yield IPv4Network(f"10.{second}.0.0/24")


def choose_subnet(requested: IPv4Network, explicit: bool, routes: list[Route],
                  own_bridge: str | None = None) -> IPv4Network:
    """The requested subnet if free; if it was only the default, the first free candidate; else an error."""
    clash = conflicts(requested, routes, own_bridge)
    if not clash:
        return requested
    free = next((c for c in candidates() if not conflicts(c, routes, own_bridge)), None)
    if explicit or free is None:
        where = ", ".join(f"{r.dst} on {r.dev or '?'}" for r in clash[:3])
        suggestion = f"such as {free}" if free else "that no route of this machine uses"
        raise SandboxError(f"provider.subnet: {requested} overlaps {where} on this machine",
                           hint=f"choose a free private /24 {suggestion}")
    return free


def bridge_address(subnet: IPv4Network) -> str:
    """The bridge takes .1 of the subnet; nodes start at .10."""
    return str(IPv4Address(int(subnet.network_address) + 1))


def link_kind(name: str) -> str | None:
    """'bridge', 'veth', ... for an existing host interface; None if it does not exist."""
    result = commands.run(["ip", "-j", "-d", "link", "show", "dev", name], check=False)
    if result.returncode != 0:
        return None
    info = json.loads(result.stdout)[0].get("linkinfo", {})
    return info.get("info_kind", "")


def link_names() -> list[str]:
    """Every interface name in this machine's network namespace."""
    return [entry["ifname"] for entry in json.loads(commands.output(["ip", "-j", "link", "show"]))]


def netns_names() -> list[str]:
    """Every named network namespace (ip netns)."""
    return [entry["name"] for entry in json.loads(commands.output(["ip", "-j", "netns", "list"]) or "[]")]


def ensure_bridge(name: str, address: str, prefixlen: int) -> None:
    """Create the bridge with its address and bring it up; an existing bridge is checked and reused."""
    kind = link_kind(name)
    if kind is None:
        commands.run(["ip", "link", "add", name, "type", "bridge"])
    elif kind != "bridge":
        raise SandboxError(f"provider.bridge: interface '{name}' exists and is a {kind or 'plain'} interface, "
                           "not a bridge", hint="name another bridge or remove that interface")
    _ensure_address(["ip"], name, f"{address}/{prefixlen}")
    commands.run(["ip", "link", "set", name, "up"])


def remove_link(name: str) -> bool:
    """Delete a host interface (bridge or veth end); whether it existed."""
    if link_kind(name) is None:
        return False
    commands.run(["ip", "link", "del", name])
    return True


def ensure_node_link(netns: str, veth: str, bridge: str, address: str, prefixlen: int) -> None:
    """The node's namespace, its veth pair (eth0 inside, the other end on the bridge) and its address."""
    if netns not in netns_names():
        commands.run(["ip", "netns", "add", netns])
    if link_kind(veth) is None:
        commands.run(["ip", "link", "add", veth, "type", "veth", "peer", "name", NODE_IFNAME, "netns", netns])
    commands.run(["ip", "link", "set", veth, "master", bridge, "up"])
    inside = ["ip", "-n", netns]
    _ensure_address(inside, NODE_IFNAME, f"{address}/{prefixlen}")
    commands.run([*inside, "link", "set", "lo", "up"])
    commands.run([*inside, "link", "set", NODE_IFNAME, "up"])


def remove_netns(netns: str) -> bool:
    """Delete a node's network namespace; whether it existed."""
    if netns not in netns_names():
        return False
    commands.run(["ip", "netns", "del", netns])
    return True


def _ensure_address(ip: list[str], dev: str, cidr: str) -> None:
    """Give a device exactly this IPv4 address (flush others first, so a moved node is not reachable twice)."""
    current = json.loads(commands.output([*ip, "-j", "-4", "addr", "show", "dev", dev]) or "[]")
    have = [f"{a['local']}/{a['prefixlen']}" for entry in current for a in entry.get("addr_info", [])]
    if have == [cidr]:
        return
    if have:
        commands.run([*ip, "-4", "addr", "flush", "dev", dev])
    commands.run([*ip, "addr", "add", cidr, "dev", dev])
