"""Pairwise node-to-node bandwidth: the N x N matrix, a verdict per link, and where a slow link lies.

A node whose links are, as a whole, well below the links that do not touch it (leave-one-out
comparison) is the culprit: its NIC, cable or configuration. Links are then judged against their
floor and against the links between healthy nodes, so one bad node cannot drag the reference down.
A slow link between otherwise healthy nodes is reported as that pair.

A verdict of "fail" means a fault still there when we look again: the runner measures every doubtful pair again,
both directions (`measure_again`), and each direction is judged by the better of its two figures. A link or node
that fails on the first figure and not on the better one is a warning naming both figures, never a fail.

The pairs need not be all of them: at quick and standard the runner measures a ring and a few random matchings
(certify.control.schedule), each node with a few distinct peers. Everything here works on the pairs measured: a
node is judged by all of its pairs, against the links that do not touch it (the same leave-one-out, computed by
judging.leaveout so that 4,000 nodes take seconds); a node whose links are all slow is named, and its peers, whose
other pairs are fast, are not. Unscheduled cells of the matrix are None, and the record says how they were chosen.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import median

from provision.certify.judging import confirm
from provision.certify.judging.judge import DROP_FAIL, DROP_WARN, Z_WARN, Sample, fleet_stats, judge_value
from provision.certify.judging.leaveout import LeaveOut
from provision.certify.judging.thresholds import Threshold
from provision.certify.probe.records import CheckResult
from provision.certify.records import NetMatrix, NetSampling


@dataclass(frozen=True)
class PairResult:
    """One measured direction between two nodes (Gb/s), or why it could not be measured."""

    src: str
    dst: str
    value_gbps: float | None
    tool: str = "ib_write_bw"
    error: str | None = None
    retested: bool = False  # measured again because the first figure was doubtful
    again_gbps: float | None = None  # the second figure (None: the second measurement failed too)

    @property
    def best_gbps(self) -> float | None:
        """The figure the link is judged by: the better of the two when it was measured again."""
        figures = [v for v in (self.value_gbps, self.again_gbps) if v is not None]
        return max(figures) if figures else None

    @property
    def key(self) -> frozenset[str]:
        """The unordered pair of nodes (both directions share it)."""
        return frozenset((self.src, self.dst))

    @property
    def subject(self) -> str:
        """How the report names the link."""
        return f"{self.src}->{self.dst}"

    def touches(self, node: str) -> bool:
        """Whether the node is one end of the link."""
        return node in (self.src, self.dst)


def build(nodes: list[str], pairs: list[PairResult], sampling: NetSampling | None = None) -> NetMatrix:
    """The matrix in node order; unmeasured, unscheduled or failed cells are None."""
    index = {name: i for i, name in enumerate(nodes)}
    cells: list[list[float | None]] = [[None] * len(nodes) for _ in nodes]
    for pair in pairs:
        if pair.src in index and pair.dst in index:
            cells[index[pair.src]][index[pair.dst]] = pair.best_gbps
    return NetMatrix(tuple(nodes), tuple(tuple(row) for row in cells), "Gb/s", pairs[0].tool if pairs else "",
                     sampling)


def judge_network(nodes: list[str], pairs: list[PairResult],
                  floor: Threshold | None) -> tuple[list[CheckResult], list[CheckResult]]:
    """(`net.pairwise_bw` per link, cluster-wide; `net.node_bw` per node), each link by its better figure."""
    judged = [replace(p, value_gbps=p.best_gbps) for p in pairs]
    pair_checks, node_checks = _judge(nodes, judged, floor)
    if not any(p.retested for p in pairs):
        return pair_checks, node_checks
    first_pairs, first_nodes = _judge(nodes, pairs, floor)  # the first figures alone, for the record
    pair_checks = [_confirmed(p, best, first) for p, best, first in zip(pairs, pair_checks, first_pairs)]
    node_checks = [_node_confirmed(best, first) for best, first in zip(node_checks, first_nodes)]
    return pair_checks, node_checks


def measure_again(nodes: list[str], pairs: list[PairResult], per_node: int = 8) -> list[tuple[str, str]]:
    """The unordered pairs to measure again (both directions), from the first figures: each link that is unmeasured
    or below the fleet (warn or fail), and the links of each node whose links as a whole are low, the worst
    `per_node` of each node at most. A pair below an absolute floor with the whole fleet alike is not here: the
    fleet agrees, measuring again would not change the verdict."""
    pair_checks, _ = _judge(nodes, pairs, None)
    doubtful = {p.key for p, c in zip(pairs, pair_checks) if c.verdict != "pass"}
    for node in suspects(nodes, pairs):
        doubtful |= {p.key for p in pairs if p.touches(node)}
    counts: dict[str, int] = {}
    chosen = []
    for pair in sorted(pairs, key=lambda p: p.value_gbps or 0.0):  # the worst first
        if pair.key not in doubtful or any(counts.get(n, 0) >= per_node for n in pair.key):
            continue
        doubtful.discard(pair.key)
        for n in pair.key:
            counts[n] = counts.get(n, 0) + 1
        chosen.append((pair.src, pair.dst))
    return chosen


def with_retests(pairs: list[PairResult], again: list[PairResult]) -> list[PairResult]:
    """The first figures with each direction measured again set beside them (its error kept when both failed)."""
    retests = {(p.src, p.dst): p for p in again}
    return [_retested(p, retests[(p.src, p.dst)]) if (p.src, p.dst) in retests else p for p in pairs]


def _retested(first: PairResult, again: PairResult) -> PairResult:
    error = first.error if again.value_gbps is not None or first.value_gbps is not None else \
        f"{first.error}; measured again: {again.error}"
    return replace(first, retested=True, again_gbps=again.value_gbps, error=error)


def _judge(nodes: list[str], pairs: list[PairResult],
           floor: Threshold | None) -> tuple[list[CheckResult], list[CheckResult]]:
    measured = [p for p in pairs if p.value_gbps is not None]
    drops, suspects = _culprits(nodes, measured)
    reference = [p.value_gbps for p in measured if not any(p.touches(s) for s in suspects)]
    stats = fleet_stats(reference or [p.value_gbps for p in measured]) if measured else None
    pair_checks = [_judge_pair(p, floor, stats, suspects) for p in pairs]
    links = _links(nodes, pairs)
    return pair_checks, [_node_check(n, [(pairs[i], pair_checks[i]) for i in links[n]], drops[n], suspects)
                         for n in nodes]


def _links(nodes: Sequence[str], pairs: Sequence[PairResult]) -> dict[str, list[int]]:
    """Per node, the indexes of the pairs that touch it."""
    out: dict[str, list[int]] = {n: [] for n in nodes}
    for i, pair in enumerate(pairs):
        for end in (pair.src, pair.dst):
            if end in out:
                out[end].append(i)
    return out


def _confirmed(pair: PairResult, best: CheckResult, first: CheckResult) -> CheckResult:
    """The link's verdict from its better figure, saying what the first figure was when it was measured again."""
    if not pair.retested:
        return best
    return confirm.named(best, first, f"{_figure(pair.value_gbps)} then {_figure(pair.again_gbps)} Gb/s measured again")


def _node_confirmed(best: CheckResult, first: CheckResult) -> CheckResult:
    """A node that fails on the first figures and not on the better ones is a warning naming both medians."""
    if first.verdict != "fail" or best.verdict == "fail":
        return best
    return replace(best, verdict="warn", detail=f"not confirmed: its links' median {first.value} Gb/s at first, "
                                                f"{best.value} Gb/s measured again ({first.detail})")


def _figure(value: float | None) -> str:
    return "no figure" if value is None else f"{value:g}"


def suspects(nodes: list[str], pairs: list[PairResult]) -> set[str]:
    """The nodes whose links, as a whole, are well below the links that do not touch them (by their better
    figures)."""
    measured = [replace(p, value_gbps=p.best_gbps) for p in pairs if p.best_gbps is not None]
    return _culprits(nodes, measured)[1]


def _culprits(nodes: Sequence[str], measured: list[PairResult]) -> tuple[dict[str, tuple[float, float] | None],
                                                                         set[str]]:
    """(each node's drop, the suspects): every node against the links that do not touch it; then, with two suspects
    or more, each suspect again without its links to the other suspects. A node that met two slow nodes among its
    few sampled peers has half its links slow through no fault of its own: its links to the rest clear it, where a
    culprit's stay slow. A suspect with no link left to the rest stays one."""
    drops = _drops(nodes, measured)
    first = suspected(drops)
    if len(first) < 2:
        return drops, first
    rest = [p for p in measured if not (p.src in first and p.dst in first)]
    again = {n: d for n, d in _drops(sorted(first), rest).items() if d is not None}
    kept = {n for n in first if n not in again or suspected({n: again[n]})}
    return {**drops, **again}, kept


def suspected(drops: dict[str, tuple[float, float] | None]) -> set[str]:
    """The nodes whose drop (fraction, robust z) against the other links makes them the culprit."""
    return {n for n, d in drops.items() if d and d[0] >= DROP_WARN and d[1] <= Z_WARN}


def _drops(nodes: Sequence[str], measured: list[PairResult]) -> dict[str, tuple[float, float] | None]:
    """Per node, its drop against the links that do not touch it (every link sorted once, see leaveout)."""
    fleet = LeaveOut([p.value_gbps for p in measured])
    links = _links(nodes, measured)
    return {n: _node_drop([measured[i].value_gbps for i in links[n]], fleet) for n in nodes}


def _node_drop(mine: list[float], fleet: LeaveOut) -> tuple[float, float] | None:
    """(fractional drop, robust z) of a node's median link (`mine`: its links) against the links not touching it."""
    if len(mine) < 2 or len(fleet) <= len(mine):
        return None
    stats = fleet.stats(mine)
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
    return replace(judge_value(sample, stats), node=None)  # a link: cluster-wide


def _node_check(node: str, links: list[tuple[PairResult, CheckResult]],
                drop: tuple[float, float] | None, suspects: set[str]) -> CheckResult:
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
