"""Typed records both sides of certification share: one check's verdict and one measurement.

Node side (standard library only): the probe builds them, the control side judges and reports them. Each turns into a
plain dict (`to_dict`) for the probe's document and the versioned report, and back (`from_dict`).
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
