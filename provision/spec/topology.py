"""From node groups to named nodes: names, addresses (where the spec fixes them) and roles."""
from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network

from provision import hostlist
from provision.records import NodeInfo
from provision.spec.model import ClusterSpec, NodeGroup

SANDBOX_FIRST_HOST = 10  # .1 is the bridge; nodes start at .10


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


def sandbox_address(subnet: IPv4Network, index: int) -> str:
    """The deterministic sandbox address of the index-th node (0-based)."""
    return str(IPv4Address(int(subnet.network_address) + SANDBOX_FIRST_HOST + index))


def sandbox_capacity(subnet: IPv4Network) -> int:
    """How many nodes fit in a sandbox subnet after the bridge and reserved low addresses."""
    return max(0, subnet.num_addresses - SANDBOX_FIRST_HOST - 1)


def planned_nodes(spec: ClusterSpec) -> list[NodeInfo]:
    """Every node of the spec, with an address where the spec or the sandbox fixes it."""
    nodes: list[NodeInfo] = []
    for group in spec.node_groups:
        addresses = group_addresses(group)
        for position, name in enumerate(group_names(group)):
            address = addresses[position] if position < len(addresses) else None
            if spec.provider.type == "sandbox":
                address = sandbox_address(spec.provider.subnet, len(nodes))
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
