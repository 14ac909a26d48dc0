"""Slurm's view of the cluster: NodeName and PartitionName entries, hostlist-compressed."""
from __future__ import annotations

from collections import defaultdict

from provision import hostlist
from provision.gpus import GPU_MODELS
from provision.records import ClusterInfo, NodeInfo


def _gres(node: NodeInfo) -> str:
    """The Gres= value of a GPU node, e.g. gpu:h100:8; empty for a CPU node."""
    if not node.gpu_count or not node.gpu_model:
        return ""
    model = GPU_MODELS.get(node.gpu_model)
    kind = model.gres_type if model else node.gpu_model.lower()
    return f"gpu:{kind}:{node.gpu_count}"


def _features(node: NodeInfo) -> str:
    """Node features let jobs pick hardware (--constraint=h100-sxm)."""
    return node.gpu_model.lower() if node.gpu_model else ""


def node_entries(cluster: ClusterInfo) -> list[dict]:
    """One entry per set of identical compute nodes: 10,000 identical nodes give one NodeName line."""
    buckets: dict[tuple, list[str]] = defaultdict(list)
    for node in cluster.with_role("compute"):
        key = (node.cpus, node.real_memory_mb, _gres(node), _features(node))
        buckets[key].append(node.name)
    entries = []
    for (cpus, memory, gres, features), names in buckets.items():
        entry = {"names": hostlist.compress(names)}
        if cpus:
            entry["cpus"] = cpus
        if memory:
            entry["real_memory"] = memory
        if gres:
            entry["gres"] = gres
        if features:
            entry["features"] = features
        entries.append(entry)
    return entries


def partition_entries(cluster: ClusterInfo) -> list[dict]:
    """One partition per name (node groups by default); the flagged or first one is the default."""
    members: dict[str, list[str]] = defaultdict(list)
    flagged = None
    for node in cluster.with_role("compute"):
        members[node.partition or node.group].append(node.name)
        if node.default_partition:
            flagged = node.partition or node.group
    default = flagged or next(iter(members), None)
    return [{"name": name, "nodes": hostlist.compress(names), "default": name == default}
            for name, names in members.items()]


def gres_nodes(cluster: ClusterInfo) -> list[dict]:
    """gres.conf entries: GPU nodes grouped by GPU type and count."""
    buckets: dict[tuple, list[str]] = defaultdict(list)
    for node in cluster.with_role("compute"):
        if node.gpu_count:
            buckets[(_gres(node).split(":")[1], node.gpu_count)].append(node.name)
    return [{"names": hostlist.compress(names), "type": kind, "count": count}
            for (kind, count), names in buckets.items()]
