"""Chart geometry for the HTML report, computed here so the template only writes SVG elements.

Bar charts: one bar per node for a measured check (the node's worst value across its GPUs), the floor drawn as
a line; for a cluster of up to LARGE_CLUSTER nodes. A larger one gets a distribution instead (distribution.py),
and the pairwise matrix is drawn by heatmap.py.
"""
from __future__ import annotations

from dataclasses import dataclass

from provision.certify import catalogue
from provision.certify.probe.records import CheckResult, worst
from provision.certify.records import ClusterReport

BAR_METRICS: tuple[tuple[str, str], ...] = catalogue.charts()  # (check id, title), from the check catalogue
WIDTH, BAR_AREA_H, LABEL_H, LEFT = 640, 180, 60, 70
LARGE_CLUSTER = 64  # above this many nodes: distributions and a bucketed heatmap instead of a mark per node


@dataclass(frozen=True)
class Bar:
    """One bar: position, size, what it shows."""

    x: float
    y: float
    width: float
    height: float
    node: str
    value: float
    verdict: str
    tooltip: str


@dataclass(frozen=True)
class BarChart:
    """A titled bar chart with an optional floor line."""

    check: str
    title: str
    unit: str
    width: int
    height: int
    bars: tuple[Bar, ...]
    max_value: float
    floor_y: float | None
    floor_value: float | None


def bar_charts(report: ClusterReport) -> list[BarChart]:
    """A chart for every bar metric that has numeric values."""
    charts = []
    for check, title in BAR_METRICS:
        per_node = measured(report, check)
        if per_node:
            charts.append(_bar_chart(check, title, per_node))
    return charts


def measured(report: ClusterReport, check: str) -> dict[str, list[CheckResult]]:
    """Node name -> the node's results of a check that carry a numeric value (nodes without any left out)."""
    per_node: dict[str, list[CheckResult]] = {}
    for node in report.nodes:
        mine = [c for c in node.checks if c.check == check and isinstance(c.value, (int, float))]
        if mine:
            per_node[node.name] = mine
    return per_node


def _bar_chart(check: str, title: str, per_node: dict[str, list[CheckResult]]) -> BarChart:
    lowest = {node: min(checks, key=lambda c: c.value) for node, checks in per_node.items()}
    floors = [c.threshold for checks in per_node.values() for c in checks if isinstance(c.threshold, (int, float))]
    floor = min(floors) if floors else None
    top = max([c.value for c in lowest.values()] + ([floor] if floor else [])) * 1.1 or 1.0
    slot = (WIDTH - LEFT - 10) / len(lowest)
    bars = []
    for i, (node, result) in enumerate(lowest.items()):
        height = BAR_AREA_H * result.value / top
        verdict = worst(c.verdict for c in per_node[node])
        tip = f"{node}: {result.value:g} {result.unit or ''} (worst of {len(per_node[node])}; {verdict})"
        bars.append(Bar(LEFT + i * slot + slot * 0.15, 10 + BAR_AREA_H - height, slot * 0.7, height, node,
                        result.value, verdict, tip))
    unit = next(iter(lowest.values())).unit or ""
    floor_y = 10 + BAR_AREA_H - BAR_AREA_H * floor / top if floor else None
    return BarChart(check, title, unit, WIDTH, 10 + BAR_AREA_H + LABEL_H, tuple(bars), top, floor_y, floor)


