"""Typed records of certification: one check's verdict, a measurement, a node's and the cluster's result.

Standard library only: the node-side probe builds these too. Every record turns into a plain dict
(`to_dict`) for the probe's JSON document and the versioned report, and back (`from_dict`).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Literal

Verdict = Literal["pass", "warn", "fail", "na"]
VERDICTS: tuple[str, ...] = ("pass", "warn", "fail", "na")
_RANK = {"na": 0, "pass": 1, "warn": 2, "fail": 3}

Scalar = float | int | str | bool | None


def worst(verdicts: Iterable[str]) -> Verdict:
    """The most severe verdict: fail > warn > pass > na; "na" when there is nothing to judge."""
    result = "na"
    for verdict in verdicts:
        if _RANK[verdict] > _RANK[result]:
            result = verdict
    return result  # type: ignore[return-value]


@dataclass(frozen=True)
class CheckResult:
    """One judged check: its stable id, the verdict, what was measured against what, and why."""

    check: str  # stable id, e.g. "gpu.ecc.volatile_uncorrected", "net.pairwise_bw", "slurm.srun"
    verdict: Verdict
    node: str | None = None  # None: a cluster-wide check
    subject: str | None = None  # what on the node: "gpu3", "mlx5_0", "node-a<->node-b"
    value: Scalar = None
    unit: str | None = None
    threshold: Scalar = None  # a number for measurements, a condition ("== 0", "enabled") otherwise
    source: str | None = None  # where the threshold comes from
    detail: str = ""
    action: str | None = None  # what to do about it, machine-readable (e.g. "reset_gpu", see certify.xid); optional

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict '{self.verdict}' is not one of {', '.join(VERDICTS)}")

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckResult:
        """Rebuild from `to_dict` output; unknown keys are an error (the probe and the library must agree)."""
        return cls(**data)


@dataclass(frozen=True)
class Measurement:
    """A number measured on a node, judged later against a floor and against the rest of the fleet."""

    metric: str  # e.g. "gpu.gemm_bf16", "gpu.copy_bw", "gpu.h2d_bw", "fs.write_bw"
    node: str
    value: float
    unit: str
    subject: str | None = None  # "gpu0"
    context: dict[str, Scalar] = field(default_factory=dict)  # gpu_model, pcie_gen, pcie_width, ...
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Measurement:
        """Rebuild from `to_dict` output."""
        return cls(**data)


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
class NodeResult:
    """Every check about one node, and the node's verdict (the worst of them)."""

    name: str
    checks: tuple[CheckResult, ...]
    gpu_model: str | None = None

    @property
    def verdict(self) -> Verdict:
        """The worst verdict of the node's checks."""
        return worst(c.verdict for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"name": self.name, "gpu_model": self.gpu_model, "verdict": self.verdict,
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
