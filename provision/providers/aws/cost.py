"""What a set of nodes costs per hour, from the dated price table, by the rules `provision plan` uses.

On-demand and spot nodes are priced at the on-demand list price (for spot an upper bound); a node in a capacity
reservation adds nothing (the reservation is billed whether it runs or not); a type the table lacks is left out.
"""
from __future__ import annotations

from provision.providers.aws import prices
from provision.records import NodeInfo
from provision.spec.model import ClusterSpec, NodeGroup


def hourly(spec: ClusterSpec, nodes: list[NodeInfo]) -> float | None:
    """The nodes' hourly cost in USD, or None when not one of them could be priced."""
    groups = {g.name: g for g in spec.node_groups}
    costs = [node_price(node, groups.get(node.group), prices.table()) for node in nodes]
    known = [c for c in costs if c is not None]
    return round(sum(known), 4) if known else None


def node_price(node: NodeInfo, group: NodeGroup | None, table: prices.PriceTable) -> float | None:
    """One node's hourly price: its live instance type where described, else its group's; None when unknown.

    A node of a group the spec no longer has is priced at on-demand (its capacity model is not known any more)."""
    if group is not None and group.capacity == "reservation":
        return 0.0
    instance_type = node.extra.get("instance_type") or (group.instance_type if group else None)
    return table.instance(instance_type) if instance_type else None
