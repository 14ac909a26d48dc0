"""Chart geometry for the HTML report, computed here so the template only writes SVG elements.

Bar charts: one bar per node for a measured check (the node's worst value across its GPUs), the
floor drawn as a line. Heatmap: the pairwise bandwidth matrix, colour by fraction of the best link.
"""
from __future__ import annotations

from dataclasses import dataclass

from provision.certify import catalogue
from provision.certify.probe.records import CheckResult, worst
from provision.certify.records import ClusterReport, NetMatrix

BAR_METRICS: tuple[tuple[str, str], ...] = catalogue.charts()  # (check id, title), from the check catalogue
WIDTH, BAR_AREA_H, LABEL_H, LEFT = 640, 180, 60, 70
CELL, HEAT_LEFT, HEAT_TOP = 36, 110, 110


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


@dataclass(frozen=True)
class Cell:
    """One heatmap cell."""

    x: int
    y: int
    src: str
    dst: str
    value: float | None
    colour: str
    label: str


@dataclass(frozen=True)
class Heatmap:
    """The pairwise matrix as cells, with row/column labels."""

    nodes: tuple[str, ...]
    cells: tuple[Cell, ...]
    size: int
    unit: str
    tool: str
    left: int = HEAT_LEFT
    top: int = HEAT_TOP
    cell: int = CELL


def bar_charts(report: ClusterReport) -> list[BarChart]:
    """A chart for every bar metric that has numeric values."""
    charts = []
    for check, title in BAR_METRICS:
        per_node: dict[str, list[CheckResult]] = {}
        for node in report.nodes:
            mine = [c for c in node.checks if c.check == check and isinstance(c.value, (int, float))]
            if mine:
                per_node[node.name] = mine
        if per_node:
            charts.append(_bar_chart(check, title, per_node))
    return charts


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


def heatmap(matrix: NetMatrix | None) -> Heatmap | None:
    """Cells for every ordered pair; the diagonal and unmeasured cells are grey."""
    if matrix is None or not matrix.nodes:
        return None
    values = [v for row in matrix.values for v in row if v is not None]
    best = max(values) if values else 1.0
    cells = []
    for i, src in enumerate(matrix.nodes):
        for j, dst in enumerate(matrix.nodes):
            value = matrix.values[i][j]
            colour = "#d9d9d9" if value is None else _colour(value / best if best else 0.0)
            label = "" if value is None else f"{value:.0f}"
            cells.append(Cell(HEAT_LEFT + j * CELL, HEAT_TOP + i * CELL, src, dst, value, colour, label))
    size = HEAT_LEFT + CELL * len(matrix.nodes) + 10
    return Heatmap(matrix.nodes, tuple(cells), size, matrix.unit, matrix.tool)


HEAT_RED_AT = 0.7  # a link at 70 % of the best one or less is fully red


def _colour(fraction: float) -> str:
    """Red (at or below HEAT_RED_AT of the best link) through yellow to green (as fast as the best link)."""
    f = min(max((fraction - HEAT_RED_AT) / (1 - HEAT_RED_AT), 0.0), 1.0)
    red = 255 if f < 0.5 else int(255 * (1 - f) * 2)
    green = int(255 * f * 2) if f < 0.5 else 200
    return f"#{red:02x}{green:02x}40"
