"""Typed records of a certification on the control side: the network matrix, a node's and the cluster's result, and
what the run covered (its scope)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from provision.certify.probe.records import VERDICTS, CheckResult, Verdict, worst


@dataclass(frozen=True)
class NetSampling:
    """Which pairs the matrix measured: every pair, or a ring and random matchings drawn from `seed`
    (certify.control.schedule; the seed and the node order draw the same pairs again)."""

    kind: str = "all pairs"  # "all pairs" | "sampled"
    seed: int | None = None
    rounds: int = 0
    pairs: int = 0  # unordered pairs scheduled, each measured both directions
    matchings: int = 0  # random matchings on top of the ring (sampled only)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"kind": self.kind, "seed": self.seed, "rounds": self.rounds, "pairs": self.pairs,
                "matchings": self.matchings}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> NetSampling | None:
        """Rebuild from `to_dict` output; None for a report written before the matrix was sampled."""
        if not data:
            return None
        return cls(str(data["kind"]), data.get("seed"), int(data.get("rounds", 0)), int(data.get("pairs", 0)),
                   int(data.get("matchings", 0)))


@dataclass(frozen=True)
class NetMatrix:
    """Pairwise bandwidth between nodes: values[i][j] is i -> j (None when not measured, not scheduled or failed)."""

    nodes: tuple[str, ...]
    values: tuple[tuple[float | None, ...], ...]
    unit: str = "Gb/s"
    tool: str = ""
    sampling: NetSampling | None = None  # None: every pair (and a report from before sampling)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"nodes": list(self.nodes), "values": [list(row) for row in self.values],
                "unit": self.unit, "tool": self.tool,
                "sampling": self.sampling.to_dict() if self.sampling else None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NetMatrix:
        """Rebuild from `to_dict` output."""
        return cls(tuple(data["nodes"]), tuple(tuple(row) for row in data["values"]), data["unit"], data["tool"],
                   NetSampling.from_dict(data.get("sampling")))


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


def names(nodes: tuple[str, ...] | list[str], shown: int = 8) -> str:
    """Node names for a line of text: the first `shown`, then how many more."""
    listed = ", ".join(nodes[:shown])
    return listed + (f" and {len(nodes) - shown} more" if len(nodes) > shown else "")


@dataclass(frozen=True)
class RunScope:
    """What a run certified: the whole cluster ("full"), or some nodes ("partial": a grow, a release, a rolling
    batch) measured against a few peers already in service. Peers take part in the measurements (network pairs, the
    MPI job, package versions) but are not judged: the report has no verdict about them."""

    kind: Literal["full", "partial"] = "full"
    nodes: tuple[str, ...] = ()  # the compute nodes certified (partial runs; empty for a full run)
    peers: tuple[str, ...] = ()  # in-service compute nodes they were measured against
    note: str = ""  # how the peers were chosen, or why there are fewer than asked

    @property
    def partial(self) -> bool:
        """Only some nodes were certified: the run is not the cluster's verdict."""
        return self.kind == "partial"

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"kind": self.kind, "nodes": list(self.nodes), "peers": list(self.peers), "note": self.note}

    def headline(self) -> str:
        """One line for the reports: "partial: 1 node (compute05) against peers compute01, compute02"."""
        if not self.partial:
            return "full: every node"
        count = f"{len(self.nodes)} node{'' if len(self.nodes) == 1 else 's'}"
        against = f"peers {names(self.peers)}" if self.peers else "no peer"
        return f"partial: {count} ({names(self.nodes)}) against {against}"

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RunScope:
        """Rebuild from `to_dict` output; a report without a scope (schema before 1.3) was a full run."""
        if not isinstance(data, dict) or data.get("kind") != "partial":
            return cls()
        return cls("partial", tuple(str(n) for n in data.get("nodes") or ()),
                   tuple(str(n) for n in data.get("peers") or ()), str(data.get("note") or ""))


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
    scope: RunScope = RunScope()  # full, or partial: which nodes were certified against which peers

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
