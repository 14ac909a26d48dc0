"""Slurm's view of the cluster: NodeName and PartitionName entries, hostlist-compressed.

A node's CPUs, topology and RealMemory come from its recorded hardware (provision.node.hardware), the spec's
cpus / real_memory_mb overriding them; nodes whose definitions are equal share one line.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from provision import hostlist
from provision.certify.probe.gpus import GPU_MODELS
from provision.node.hardware import NodeHardware
from provision.records import ClusterInfo, NodeInfo

TOPOLOGY = ("boards", "sockets_per_board", "cores_per_socket", "threads_per_core")


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


def resources(node: NodeInfo, hw: NodeHardware | None) -> dict[str, int]:
    """CPUs (with the topology when it agrees with them) and RealMemory of one node; {} when nothing is known."""
    out: dict[str, int] = {}
    cpus = node.cpus or (hw.cpus if hw else None)
    if cpus:
        out["cpus"] = cpus
    if hw and cpus == hw.cpus == hw.topology_cpus:
        out.update({key: getattr(hw, key) for key in TOPOLOGY})
    memory = node.real_memory_mb or (hw.real_memory_mb if hw else None)
    if memory:
        out["real_memory"] = memory
    return out


def node_entries(cluster: ClusterInfo, hardware: Mapping[str, NodeHardware] | None = None) -> list[dict]:
    """One entry per set of identical compute nodes: 10,000 identical nodes give one NodeName line."""
    hardware = hardware or {}
    buckets: dict[tuple, list[str]] = defaultdict(list)
    for node in cluster.with_role("compute"):
        entry = resources(node, hardware.get(node.name))
        entry.update({key: value for key, value in (("gres", _gres(node)), ("features", _features(node))) if value})
        buckets[tuple(entry.items())].append(node.name)
    return [{"names": hostlist.compress(names), **dict(key)} for key, names in buckets.items()]


def partition_entries(cluster: ClusterInfo, hardware: Mapping[str, NodeHardware] | None = None) -> list[dict]:
    """One partition per name (node groups by default); the flagged or first one is the default.

    DefMemPerCPU is the smallest RealMemory per CPU of the partition's nodes, so a job that names no memory
    gets its CPUs' share and memory can be scheduled (SelectTypeParameters=CR_Core_Memory)."""
    hardware = hardware or {}
    members: dict[str, list[NodeInfo]] = defaultdict(list)
    flagged = None
    for node in cluster.with_role("compute"):
        members[node.partition or node.group].append(node)
        if node.default_partition:
            flagged = node.partition or node.group
    default = flagged or next(iter(members), None)
    entries = []
    for name, nodes in members.items():
        entry = {"name": name, "nodes": hostlist.compress([n.name for n in nodes]), "default": name == default}
        shares = [r["real_memory"] // r["cpus"] for r in (resources(n, hardware.get(n.name)) for n in nodes)
                  if "real_memory" in r and "cpus" in r]
        if len(shares) == len(nodes):
            entry["def_mem_per_cpu"] = min(shares)
        entries.append(entry)
    return entries


def gres_nodes(cluster: ClusterInfo) -> list[dict]:
    """gres.conf entries: GPU nodes grouped by GPU type and count."""
    buckets: dict[tuple, list[str]] = defaultdict(list)
    for node in cluster.with_role("compute"):
        if node.gpu_count:
            buckets[(_gres(node).split(":")[1], node.gpu_count)].append(node.name)
    return [{"names": hostlist.compress(names), "type": kind, "count": count}
            for (kind, count), names in buckets.items()]
