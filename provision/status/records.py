"""The records `provision status` is made of: what Slurm, the health program and certify say about each node."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from provision.node.health import NodeHealth
from provision.node.software import NodeSoftware
from provision.records import ClusterInfo, NodeInfo

BUSY = ("allocated", "mixed", "completing")  # base states counted as "alloc"
UP = ("running", "unknown")  # provider states in which a node may answer (unknown: a static host)


@dataclass(frozen=True)
class SlurmNode:
    """One node as slurmctld has it: its base state and flags (lower case, as sinfo writes them), the reason with who
    set it and when, and whether it is in the hold reservation."""

    name: str
    state: str  # idle | allocated | mixed | down | unknown | future | ...
    flags: tuple[str, ...] = ()  # drain, maint, reserved, not_responding, completing, ...
    reason: str = ""
    reason_user: str = ""
    reason_time: str = ""  # as Slurm prints it: 2026-11-27T15:48:13
    held: bool = False  # in the hold reservation (gpu_provision_certify): no user job starts there

    @property
    def drained(self) -> bool:
        """Drained or draining: no new job starts."""
        return "drain" in self.flags

    @property
    def not_responding(self) -> bool:
        """slurmctld has not heard from its slurmd (sinfo's '*')."""
        return "not_responding" in self.flags

    @property
    def text(self) -> str:
        """State and flags the way scontrol joins them: idle+drain+not_responding."""
        return "+".join((self.state, *self.flags))

    @property
    def category(self) -> str:
        """The one class a summary counts it in: down, drain, alloc, idle, or other."""
        if self.state == "down" or "fail" in self.flags:
            return "down"
        if self.drained:
            return "drain"
        if self.state in BUSY:
            return "alloc"
        return "idle" if self.state == "idle" else "other"

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for --json."""
        return {**asdict(self), "flags": list(self.flags), "text": self.text, "category": self.category}


@dataclass(frozen=True)
class SlurmView:
    """Every node slurmctld knows, read in one query from the controller; `error` says why it could not be read."""

    nodes: dict[str, SlurmNode] = field(default_factory=dict)
    error: str = ""
    asked: str = ""  # the node the query ran on (the controller)

    @property
    def answered(self) -> bool:
        """slurmctld answered."""
        return not self.error


@dataclass(frozen=True)
class CertifyVerdict:
    """A node's entry in the newest certify report that names it."""

    verdict: str  # pass | warn | fail
    level: str
    at: str  # when that run finished (ISO 8601)
    report: str  # the run's folder under the reports folder
    failed: tuple[str, ...] = ()  # the node's failed check ids

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for --json."""
        return {**asdict(self), "failed": list(self.failed)}


@dataclass(frozen=True)
class Alert:
    """One alert Prometheus has active: its rule's name, labels and summary, as Prometheus gave them (never markup)."""

    name: str  # the alertname label
    state: str  # firing | pending
    severity: str = ""
    node: str = ""  # the node label (our rules keep it), else the scrape's instance
    summary: str = ""  # the summary annotation, else the description
    active_at: str = ""  # when it became active (RFC 3339, as Prometheus writes it)
    labels: tuple[tuple[str, str], ...] = ()  # every label, by name

    @property
    def firing(self) -> bool:
        return self.state == "firing"

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for --json."""
        return {**asdict(self), "labels": dict(self.labels)}


@dataclass(frozen=True)
class AlertsView:
    """The alerts active now (firing first), or why Prometheus could not say (error)."""

    alerts: tuple[Alert, ...] = ()
    error: str = ""
    asked: str = ""  # the node the query ran on (the monitoring node)

    @property
    def firing(self) -> tuple[Alert, ...]:
        return tuple(a for a in self.alerts if a.firing)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for --json."""
        return {"answered": not self.error, "error": self.error, "asked": self.asked,
                "alerts": [a.to_dict() for a in self.alerts]}


@dataclass(frozen=True)
class NodeStatus:
    """Everything known about one node now; None where that source has nothing on it."""

    node: NodeInfo
    slurm: SlurmNode | None = None  # None: not a Slurm node (the controller), or slurmctld did not answer
    health: NodeHealth | None = None  # None: the health program does not run there (or is switched off)
    certify: CertifyVerdict | None = None  # None: no report names the node
    software: NodeSoftware | None = None  # None: the node was not asked (not running)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def up(self) -> bool:
        """The provider has the node running (or cannot tell): it is asked; a node that is not, is not."""
        return bool(self.node.address) and self.node.state in UP

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for --json: the node's provider record and every source, complete."""
        return {**self.node.model_dump(mode="json"),
                "slurm": self.slurm.to_dict() if self.slurm else None,
                "health": self.health.to_dict() if self.health else None,
                "certify": self.certify.to_dict() if self.certify else None,
                "software": asdict(self.software) if self.software else None}


@dataclass(frozen=True)
class ClusterStatus:
    """The cluster now: per node its status, what slurmctld answered, and whether the health program runs."""

    cluster: ClusterInfo
    nodes: tuple[NodeStatus, ...]
    slurm: SlurmView = SlurmView()
    health_enabled: bool = True
    alerts: AlertsView | None = None  # None: monitoring is off (Prometheus was not asked)

    @property
    def name(self) -> str:
        return self.cluster.name

    @property
    def provider(self) -> str:
        return self.cluster.provider

    def counts(self) -> dict[str, int]:
        """Slurm nodes per summary class (down, drain, alloc, idle, other), and held / not responding ones."""
        known = [n.slurm for n in self.nodes if n.slurm is not None]
        found = {kind: sum(s.category == kind for s in known) for kind in ("idle", "alloc", "drain", "down", "other")}
        return {**found, "held": sum(s.held for s in known), "not_responding": sum(s.not_responding for s in known),
                "in_slurm": len(known)}

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for --json: the cluster's record with each node's status in place of its provider record."""
        return {**self.cluster.model_dump(mode="json"), "health_enabled": self.health_enabled,
                "slurm": {"answered": self.slurm.answered, "error": self.slurm.error, "asked": self.slurm.asked},
                "counts": self.counts(), "nodes": [n.to_dict() for n in self.nodes],
                "alerts": self.alerts.to_dict() if self.alerts else None,
                "software": {n.name: asdict(n.software) for n in self.nodes if n.software}}
