"""Preflight results: a verdict per check per node, and for the whole cluster."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from provision.node.hardware import NodeHardware
from provision.node.platforms import NodeOS, describe

Verdict = Literal["pass", "warn", "fail", "n/a"]
_RANK = {"n/a": 0, "pass": 1, "warn": 2, "fail": 3}


def worst(verdicts: list[str]) -> str:
    """The most severe verdict of a list (pass when empty)."""
    return max(verdicts, key=_RANK.__getitem__, default="pass")


def os_of(facts: dict[str, str]) -> NodeOS:
    """The node's os-release fields as the fact probe printed them (probe.sh)."""
    return NodeOS(facts.get("os_id", ""), facts.get("os_version", ""), facts.get("os_name", ""),
                  facts.get("os_pretty", ""))


@dataclass
class Check:
    """One check on one node."""

    id: str
    verdict: Verdict
    detail: str


@dataclass
class NodeReport:
    """Everything preflight learned about one node."""

    name: str
    address: str | None
    checks: list[Check] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)
    clock_offset_s: float | None = None

    @property
    def verdict(self) -> str:
        """The node's worst check."""
        return worst([c.verdict for c in self.checks])

    @property
    def os(self) -> str:
        """The node's OS ("Debian 13 (trixie)", "Rocky Linux 9.4"); empty when it did not answer."""
        return describe(os_of(self.facts)) if self.facts else ""

    def check(self, check_id: str) -> Check | None:
        """A check by id, if it ran."""
        return next((c for c in self.checks if c.id == check_id), None)


@dataclass
class PreflightReport:
    """All nodes, and how long the whole run took."""

    nodes: list[NodeReport]
    elapsed_s: float

    @property
    def verdict(self) -> str:
        """The cluster's worst node."""
        return worst([n.verdict for n in self.nodes])

    @property
    def failed_nodes(self) -> list[str]:
        """Nodes with at least one failed check."""
        return [n.name for n in self.nodes if n.verdict == "fail"]

    def hardware(self) -> dict[str, NodeHardware]:
        """Each answering node's processors and memory, for the cluster's hardware record."""
        found = {n.name: NodeHardware.from_facts(n.facts) for n in self.nodes}
        return {name: hw for name, hw in found.items() if hw is not None}

    def as_dict(self) -> dict:
        """JSON form for --json (facts included; no key material is ever collected)."""
        return {"verdict": self.verdict, "elapsed_s": round(self.elapsed_s, 3),
                "nodes": [{**asdict(n), "os": n.os, "verdict": n.verdict} for n in self.nodes]}
