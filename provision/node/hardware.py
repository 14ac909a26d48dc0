"""What each node really has (CPUs, their topology, memory), as `slurmd -C` would report it.

Preflight reads it from every node and records it in the cluster's state (`hardware.json`); the inventory
renders Slurm's node definitions from that record, never from live facts, so a `--limit` run cannot
rewrite them wrong. Slurm's RealMemory is the node's memory less a reserve for the OS and the daemons.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from provision.records import NodeInfo
from provision.state import ClusterState

DOCUMENT = "hardware"
# Memory kept back from Slurm for the kernel, page cache, slurmd, munge, DCGM and the like: 5 % of the
# node, at least 1 GiB and at most 16 GiB. A 24 GiB node offers 23,351 MiB to jobs, a 2 TiB node 2 TiB - 16 GiB.
RESERVE_FRACTION = 0.05
RESERVE_MIN_MB = 1024
RESERVE_MAX_MB = 16384


@dataclass(frozen=True)
class NodeHardware:
    """One node's processors and memory (MiB), in Slurm's terms."""

    cpus: int
    boards: int
    sockets_per_board: int
    cores_per_socket: int
    threads_per_core: int
    memory_mb: int

    @property
    def topology_cpus(self) -> int:
        """CPUs as the topology multiplies out (equals `cpus` on a consistent reading)."""
        return self.boards * self.sockets_per_board * self.cores_per_socket * self.threads_per_core

    @property
    def real_memory_mb(self) -> int:
        """What Slurm may hand to jobs: the memory less the documented reserve."""
        return self.memory_mb - memory_reserve_mb(self.memory_mb)

    def describe(self) -> str:
        """"2 CPUs (1 socket x 2 cores x 1 thread), 24105 MiB"."""
        sockets = self.boards * self.sockets_per_board
        return (f"{self.cpus} CPUs ({sockets} socket{'s' if sockets != 1 else ''} x {self.cores_per_socket} cores x "
                f"{self.threads_per_core} thread{'s' if self.threads_per_core != 1 else ''}), {self.memory_mb} MiB")

    @classmethod
    def from_facts(cls, facts: dict[str, str]) -> NodeHardware | None:
        """From preflight's key=value facts; None when a figure is missing or not a positive number."""
        keys = ("cpus", "boards", "sockets_per_board", "cores_per_socket", "threads_per_core", "memory_mb")
        values = [facts.get(key, "") for key in keys]
        if not all(v.isdigit() and int(v) > 0 for v in values):
            return None
        return cls(*(int(v) for v in values))

    @classmethod
    def from_dict(cls, data: dict) -> NodeHardware:
        """From the state document."""
        return cls(**{key: int(data[key]) for key in cls.__dataclass_fields__})


def memory_reserve_mb(memory_mb: int) -> int:
    """The memory kept from Slurm on a node of this size (see RESERVE_*)."""
    return int(min(max(memory_mb * RESERVE_FRACTION, RESERVE_MIN_MB), RESERVE_MAX_MB, memory_mb // 2))


def load(state: ClusterState) -> dict[str, NodeHardware]:
    """Every recorded node's hardware; empty when nothing was recorded yet."""
    document = state.read(DOCUMENT) or {}
    return {name: NodeHardware.from_dict(data) for name, data in (document.get("nodes") or {}).items()}


def record(state: ClusterState, found: dict[str, NodeHardware]) -> None:
    """Add or refresh nodes' hardware in the state (other nodes' records are kept)."""
    if not found:
        return
    nodes = {name: asdict(hw) for name, hw in load(state).items()}
    nodes.update({name: asdict(hw) for name, hw in found.items()})
    state.write(DOCUMENT, {"nodes": dict(sorted(nodes.items()))})


def forget(state: ClusterState, names: list[str]) -> None:
    """Drop nodes that no longer exist from the record."""
    nodes = {name: asdict(hw) for name, hw in load(state).items() if name not in names}
    state.write(DOCUMENT, {"nodes": nodes})


@dataclass(frozen=True)
class Excess:
    """A spec value above what the node has: which field, what was asked, what was found."""

    field: str
    asked: int
    found: int


def excesses(node: NodeInfo, hw: NodeHardware) -> list[Excess]:
    """The spec's cpus / real_memory_mb overrides that ask for more than the node has."""
    out = []
    if node.cpus is not None and node.cpus > hw.cpus:
        out.append(Excess("cpus", node.cpus, hw.cpus))
    if node.real_memory_mb is not None and node.real_memory_mb > hw.memory_mb:
        out.append(Excess("real_memory_mb", node.real_memory_mb, hw.memory_mb))
    return out
