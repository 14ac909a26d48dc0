"""Pairwise node-to-node bandwidth: the N x N matrix, a verdict per link, and where a slow link lies.

A node whose links are, as a whole, well below the links that do not touch it (leave-one-out
comparison) is the culprit: its NIC, cable or configuration. Links are then judged against their
floor and against the links between healthy nodes, so one bad node cannot drag the reference down.
A slow link between otherwise healthy nodes is reported as that pair.
"""
from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from provision.certify.judging.judge import DROP_FAIL, DROP_WARN, Z_WARN, Sample, fleet_stats, judge_value
from provision.certify.judging.thresholds import Threshold
from provision.certify.probe.records import CheckResult
from provision.certify.records import NetMatrix


@dataclass(frozen=True)
class PairResult:
    """One measured direction between two nodes (Gb/s), or why it could not be measured."""

    src: str
    dst: str
    value_gbps: float | None
    tool: str = "ib_write_bw"
    error: str | None = None

    @property
    def subject(self) -> str:
        """How the report names the link."""
        return f"{self.src}->{self.dst}"

    def touches(self, node: str) -> bool:
        """Whether the node is one end of the link."""
        return node in (self.src, self.dst)


def build(nodes: list[str], pairs: list[PairResult]) -> NetMatrix:
    """The matrix in node order; unmeasured or failed cells are None."""
    index = {name: i for i, name in enumerate(nodes)}
    cells: list[list[float | None]] = [[None] * len(nodes) for _ in nodes]
    for pair in pairs:
        if pair.src in index and pair.dst in index:
            cells[index[pair.src]][index[pair.dst]] = pair.value_gbps
    return NetMatrix(tuple(nodes), tuple(tuple(row) for row in cells), "Gb/s", pairs[0].tool if pairs else "")


def judge_network(nodes: list[str], pairs: list[PairResult],
                  floor: Threshold | None) -> tuple[list[CheckResult], list[CheckResult]]:
    """(`net.pairwise_bw` per link, cluster-wide; `net.node_bw` per node)."""
    measured = [p for p in pairs if p.value_gbps is not None]
    drops = {n: _node_drop(n, measured) for n in nodes}
    suspects = {n for n, d in drops.items() if d and d[0] >= DROP_WARN and d[1] <= Z_WARN}
    reference = [p.value_gbps for p in measured if not any(p.touches(s) for s in suspects)]
    stats = fleet_stats(reference or [p.value_gbps for p in measured]) if measured else None
    pair_checks = [_judge_pair(p, floor, stats, suspects) for p in pairs]
    return pair_checks, [_node_check(n, pairs, pair_checks, drops[n], suspects) for n in nodes]


def _node_drop(node: str, measured: list[PairResult]) -> tuple[float, float] | None:
    """(fractional drop, robust z) of the node's median link against the links not touching it."""
    mine = [p.value_gbps for p in measured if p.touches(node)]
    others = [p.value_gbps for p in measured if not p.touches(node)]
    if len(mine) < 2 or not others:
        return None
    stats = fleet_stats(others)
    if stats.median <= 0:
        return None
    own = median(mine)
    return (stats.median - own) / stats.median, stats.z(own)


def _judge_pair(pair: PairResult, floor: Threshold | None, stats, suspects: set[str]) -> CheckResult:
    if pair.value_gbps is None:
        return CheckResult("net.pairwise_bw", "fail", subject=pair.subject, unit="Gb/s",
                           threshold=floor.value if floor else None, source=pair.tool,
                           detail=f"not measured: {pair.error or 'no result'}")
    blamed = sorted(s for s in suspects if pair.touches(s))
    note = f"attributed to node {', '.join(blamed)}" if blamed else ""
    sample = Sample("net.pairwise_bw", pair.src, pair.value_gbps, "Gb/s", pair.tool, pair.subject, floor, note)
    return CheckResult(**{**judge_value(sample, stats).to_dict(), "node": None})


def _node_check(node: str, pairs: list[PairResult], pair_checks: list[CheckResult],
                drop: tuple[float, float] | None, suspects: set[str]) -> CheckResult:
    links = [(p, c) for p, c in zip(pairs, pair_checks) if p.touches(node)]
    mine = [c for _, c in links]
    values = [c.value for c in mine if isinstance(c.value, (int, float))]
    base = dict(node=node, value=round(median(values), 2) if values else None, unit="Gb/s",
                threshold="links like the rest", source="pairwise matrix, leave-one-out median")
    if not mine:
        return CheckResult("net.node_bw", "na", node=node, detail="no pairwise measurement")
    if node in suspects:
        verdict = "fail" if drop[0] >= DROP_FAIL else "warn"
        return CheckResult("net.node_bw", verdict, **base,
                           detail=f"this node's links are {drop[0]:.0%} below the links between other nodes: "
                                  "check its NIC, cable, firmware and configuration")
    slow = [c for p, c in links if c.verdict != "pass" and not any(p.touches(s) for s in suspects)]
    if slow:
        peers = sorted({end for c in slow for end in c.subject.split("->")} - {node})
        return CheckResult("net.node_bw", "warn", **base,
                           detail=f"slow link(s) with {', '.join(peers)}, not localised to this node")
    return CheckResult("net.node_bw", "pass", **base)
