"""Typed records of a certification on the control side: the network matrix, a node's and the cluster's result."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from provision.certify.probe.records import VERDICTS, CheckResult, Verdict, worst


@dataclass(frozen=True)
class NetMatrix:
    """Pairwise bandwidth between nodes: values[i][j] is i -> j (None when not measured or failed)."""

    nodes: tuple[str, ...]
    values: tuple[tuple[float | None, ...], ...]
    unit: str = "Gb/s"
    tool: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"nodes": list(self.nodes), "values": [list(row) for row in self.values],
                "unit": self.unit, "tool": self.tool}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NetMatrix:
        """Rebuild from `to_dict` output."""
        return cls(tuple(data["nodes"]), tuple(tuple(row) for row in data["values"]), data["unit"], data["tool"])


@dataclass(frozen=True)
class NodeInventory:
    """What one node runs, as its probe read it: each entry a version string or "n/a"; a VBIOS per GPU."""

    kernel: str
    os: str
    slurm: str
    nccl: str
    driver: str
    cuda: str
    vbios: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"kernel": self.kernel, "os": self.os, "slurm": self.slurm, "nccl": self.nccl,
                "driver": self.driver, "cuda": self.cuda, "vbios": list(self.vbios)}


@dataclass(frozen=True)
class NodeResult:
    """Every check about one node, and the node's verdict (the worst of them)."""

    name: str
    checks: tuple[CheckResult, ...]
    gpu_model: str | None = None
    group: str | None = None  # the spec's node group
    inventory: NodeInventory | None = None  # None when the probe did not run on the node

    @property
    def verdict(self) -> Verdict:
        """The worst verdict of the node's checks."""
        return worst(c.verdict for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"name": self.name, "gpu_model": self.gpu_model, "group": self.group, "verdict": self.verdict,
                "inventory": self.inventory.to_dict() if self.inventory else None,
                "checks": [c.to_dict() for c in self.checks]}


@dataclass(frozen=True)
class ClusterReport:
    """The whole certification: per-node results, cluster-wide checks, the network matrix, the verdict."""

    cluster: str
    level: str
    started_at: str  # ISO 8601, UTC
    finished_at: str
    nodes: tuple[NodeResult, ...]
    checks: tuple[CheckResult, ...] = ()  # cluster-wide (node is None), e.g. the all-node NCCL run
    network: NetMatrix | None = None
    tool_version: str | None = None  # gpu-provision's version that ran the certification
    spec_digest: str | None = None  # "sha256:<hex>" of the spec certified against (provision.spec.digest)

    @property
    def verdict(self) -> Verdict:
        """The worst verdict of every node and every cluster-wide check."""
        return worst([n.verdict for n in self.nodes] + [c.verdict for c in self.checks])

    def all_checks(self) -> list[CheckResult]:
        """Every check, node by node, then the cluster-wide ones."""
        return [c for n in self.nodes for c in n.checks] + list(self.checks)

    def counts(self) -> dict[str, int]:
        """How many checks ended with each verdict."""
        out = {v: 0 for v in VERDICTS}
        for check in self.all_checks():
            out[check.verdict] += 1
        return out
