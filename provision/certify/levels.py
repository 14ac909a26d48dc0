"""What each certification level adds to the one below it, and which of that a given cluster can run.

The figures come from where the runs take them (the filesystem test's size, the burn-in's length, DCGM's run level),
so this explanation cannot drift from what a level does. `explain` answers for one spec: `certify --level standard`
on a cluster without GPUs says that the GPU benchmarks and NCCL are skipped there, and why.
"""
from __future__ import annotations

from dataclasses import dataclass

from provision.certify.control.run import FS_SIZE_MIB
from provision.certify.probe.collect import BURN_SECONDS
from provision.certify.probe.dcgm import RUN_LEVEL
from provision.certify.probe.expect import LEVELS
from provision.spec import topology
from provision.spec.model import ClusterSpec

GPU, TWO_GPU_NODES, FILESYSTEM = "gpu", "two-gpu-nodes", "filesystem"


@dataclass(frozen=True)
class Addition:
    """One thing a level measures that the level below it does not, and what the cluster needs for it."""

    what: str
    needs: str | None = None  # GPU | TWO_GPU_NODES | FILESYSTEM


@dataclass(frozen=True)
class LevelNote:
    """A level on one cluster: what it adds that runs there, and what it adds that is skipped there (with why)."""

    level: str
    runs: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]  # (what, why)

    def line(self) -> str:
        """`standard adds: ...; skipped here, no GPU nodes: GPU benchmarks, ...; no shared filesystem: ...`."""
        verb = "runs" if self.level == LEVELS[0] else "adds"
        text = f"{self.level} {verb}: {', '.join(self.runs) or 'nothing this cluster can run'}"
        reasons: dict[str, list[str]] = {}
        for what, why in self.skipped:
            reasons.setdefault(why, []).append(what)
        if reasons:
            text += "; skipped here, " + "; ".join(f"{why}: {', '.join(whats)}" for why, whats in reasons.items())
        return text


def additions() -> dict[str, tuple[Addition, ...]]:
    """Per level, what it adds to the level below (quick: what it runs)."""
    quick, standard, full = LEVELS
    return {
        quick: (Addition("node and GPU health (NVML), Slurm, munge, MPI and the pairwise network (sampled beyond 9 nodes)"),
                Addition(f"DCGM diagnostic level {RUN_LEVEL[quick]}", GPU),
                Addition(f"a {FS_SIZE_MIB[quick]} MiB shared filesystem test", FILESYSTEM)),
        standard: (Addition("GPU benchmarks (BF16 GEMM, memory and PCIe bandwidth)", GPU),
                   Addition("NCCL all_reduce within each GPU node", GPU),
                   Addition("NCCL all_reduce across the GPU nodes", TWO_GPU_NODES),
                   Addition(f"DCGM diagnostic level {RUN_LEVEL[standard]}", GPU),
                   Addition(f"a {FS_SIZE_MIB[standard]} MiB shared filesystem test", FILESYSTEM)),
        full: (Addition(f"a {BURN_SECONDS[full] // 60}-minute GPU burn-in before measuring", GPU),
               Addition(f"DCGM diagnostic level {RUN_LEVEL[full]}", GPU),
               Addition(f"a {FS_SIZE_MIB[full]} MiB shared filesystem test", FILESYSTEM)),
    }


def explain(level: str, spec: ClusterSpec) -> list[LevelNote]:
    """Each level up to `level`, above quick (quick alone: quick itself), as it would run on this spec's cluster."""
    shown = LEVELS[1:LEVELS.index(level) + 1] if level != LEVELS[0] else LEVELS[:1]
    missing = _missing(spec)
    table = additions()
    return [LevelNote(name, tuple(a.what for a in table[name] if a.needs not in missing),
                      tuple((a.what, missing[a.needs]) for a in table[name] if a.needs in missing))
            for name in shown]


def _missing(spec: ClusterSpec) -> dict[str, str]:
    """What the cluster lacks that a level may need, and how to say so."""
    names = topology.names_per_group(spec) or [[] for _ in spec.node_groups]
    gpu_nodes = sum(len(hosts) for group, hosts in zip(spec.node_groups, names)
                    if group.gpu is not None and "compute" in group.roles)
    missing = {GPU: "no GPU nodes"} if not gpu_nodes else {}
    if gpu_nodes < 2:
        missing[TWO_GPU_NODES] = "no GPU nodes" if not gpu_nodes else "one GPU node only"
    if spec.filesystem.type == "none":
        missing[FILESYSTEM] = "no shared filesystem"
    return missing
