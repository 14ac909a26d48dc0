"""From node groups to named nodes: names, addresses (where the spec fixes them) and roles."""
from __future__ import annotations

from provision import hostlist
from provision.errors import SpecError
from provision.records import NodeInfo
from provision.spec.model import ClusterSpec, NodeGroup


def group_names(group: NodeGroup) -> list[str]:
    """The host names of a group: its hostlist expression, or <group>NN for a counted group."""
    if group.hosts:
        return hostlist.expand(group.hosts)
    count = group.count or 0
    width = max(2, len(str(count)))
    return [f"{group.name}{index:0{width}d}" for index in range(1, count + 1)]


def group_addresses(group: NodeGroup) -> list[str]:
    """The addresses a static group declares, as a list (expression or explicit list)."""
    if group.addresses is None:
        return []
    if isinstance(group.addresses, list):
        return [str(a) for a in group.addresses]
    return hostlist.expand(group.addresses)


def names_per_group(spec: ClusterSpec) -> list[list[str]] | None:
    """Host names per group, or None when an expression is unreadable (validation reports that)."""
    try:
        return [group_names(g) for g in spec.node_groups]
    except SpecError:
        return None


def planned_nodes(spec: ClusterSpec) -> list[NodeInfo]:
    """Every node of the spec, with an address where the spec or the provider fixes it."""
    nodes: list[NodeInfo] = []
    for group in spec.node_groups:
        addresses = group_addresses(group)
        for position, name in enumerate(group_names(group)):
            declared = addresses[position] if position < len(addresses) else None
            address = spec.provider.node_address(len(nodes), declared)
            nodes.append(_node(spec, group, name, address))
    return nodes


def _node(spec: ClusterSpec, group: NodeGroup, name: str, address: str | None) -> NodeInfo:
    """One planned node record."""
    is_compute = "compute" in group.roles
    return NodeInfo(
        name=name,
        group=group.name,
        roles=tuple(group.roles),
        address=address,
        ssh_port=spec.ssh.port,
        gpu_model=group.gpu.model if group.gpu else None,
        gpu_count=group.gpu.count if group.gpu else 0,
        partition=(group.partition or group.name) if is_compute else None,
        default_partition=group.default_partition,
        cpus=group.cpus,
        real_memory_mb=group.real_memory_mb,
        interconnect=group.interconnect.type,
        interconnect_nics=group.interconnect.nics,
    )
