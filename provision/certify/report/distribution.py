"""A measured check across a large cluster: a histogram of the nodes' worst values, quantiles, outliers by name.

One bar per node stops being readable past a few dozen nodes, so above charts.LARGE_CLUSTER the page draws how
the nodes' values spread instead (the axis spans the values; the floor is drawn where it falls inside them and
always named under the chart; a bin is coloured by the worst verdict in it, a non-empty bin is never thinner
than MIN_BIN_H so a single outlier stays visible) and names the nodes that matter: every node the check warned
or failed on, then the lowest values, up to MAX_OUTLIERS.
"""
from __future__ import annotations

from dataclasses import dataclass

from provision.certify.probe.records import CheckResult, worst
from provision.certify.records import ClusterReport
from provision.certify.report.charts import BAR_METRICS, measured

WIDTH, AREA_H, LEFT, TOP, AXIS_H = 640, 160, 50, 10, 40
BINS, MIN_BIN_H = 40, 2.0
LOWEST_SHOWN, MAX_OUTLIERS = 5, 25
QUANTILES: tuple[tuple[str, float], ...] = (("min", 0.0), ("p1", 0.01), ("p5", 0.05), ("median", 0.5),
                                            ("p95", 0.95), ("max", 1.0))


@dataclass(frozen=True)
class NodeValue:
    """A node's worst value of the check and the worst verdict the check had on it."""

    node: str
    value: float
    verdict: str
    detail: str


@dataclass(frozen=True)
class HistBin:
    """One histogram bar: where it is drawn, the value range it covers, how many nodes fall in it."""

    x: float
    y: float
    width: float
    height: float
    low: float
    high: float
    count: int
    verdict: str


@dataclass(frozen=True)
class Distribution:
    """A check's histogram across nodes, its quantiles, its floor and the outliers named."""

    check: str
    title: str
    unit: str
    width: int
    height: int
    nodes: int
    bins: tuple[HistBin, ...]
    low: float
    high: float
    floor_x: float | None
    floor_value: float | None
    quantiles: tuple[tuple[str, float], ...]
    outliers: tuple[NodeValue, ...]
    more_outliers: int


def distributions(report: ClusterReport) -> list[Distribution]:
    """A distribution for every charted check that has numeric values."""
    out = []
    for check, title in BAR_METRICS:
        per_node = measured(report, check)
        if per_node:
            out.append(distribution(check, title, per_node))
    return out


def distribution(check: str, title: str, per_node: dict[str, list[CheckResult]]) -> Distribution:
    """Histogram, quantiles and outliers of the nodes' worst values (the lowest value across a node's GPUs)."""
    values = sorted((_node_value(node, results) for node, results in per_node.items()), key=lambda v: v.value)
    floors = [c.threshold for rs in per_node.values() for c in rs if isinstance(c.threshold, (int, float))]
    floor = float(min(floors)) if floors else None
    low = values[0].value
    high = max(values[-1].value, low + 1e-9)
    bins = _bins(values, low, high)
    floor_x = _x(floor, low, high) if floor is not None and low <= floor <= high else None
    outliers, more = _outliers(values)
    unit = next((c.unit for rs in per_node.values() for c in rs if c.unit), "") or ""
    return Distribution(check, title, unit, WIDTH, TOP + AREA_H + AXIS_H, len(values), bins, low, high, floor_x,
                        floor, _quantiles(values), outliers, more)


def _node_value(node: str, results: list[CheckResult]) -> NodeValue:
    lowest = min(results, key=lambda c: c.value)
    verdict = worst(c.verdict for c in results)
    flagged = next((c for c in results if c.verdict == verdict and c.verdict in ("fail", "warn")), lowest)
    where = f"{flagged.subject}: " if flagged.subject else ""
    return NodeValue(node, float(lowest.value), verdict, where + (flagged.detail or f"{flagged.value:g}"))


def _x(value: float, low: float, high: float) -> float:
    return LEFT + (WIDTH - LEFT - 10) * (value - low) / (high - low)


def _bins(values: list[NodeValue], low: float, high: float) -> tuple[HistBin, ...]:
    step = (high - low) / BINS
    members: list[list[NodeValue]] = [[] for _ in range(BINS)]
    for item in values:
        members[min(int((item.value - low) / step), BINS - 1)].append(item)
    tallest = max(len(m) for m in members)
    width = (WIDTH - LEFT - 10) / BINS
    out = []
    for i, inside in enumerate(members):
        if not inside:
            continue
        height = max(AREA_H * len(inside) / tallest, MIN_BIN_H)
        out.append(HistBin(LEFT + i * width, TOP + AREA_H - height, width - 1, height, low + i * step,
                           low + (i + 1) * step, len(inside), worst(v.verdict for v in inside)))
    return tuple(out)


def _quantiles(values: list[NodeValue]) -> tuple[tuple[str, float], ...]:
    last = len(values) - 1
    return tuple((name, values[round(q * last)].value) for name, q in QUANTILES)


def _outliers(values: list[NodeValue]) -> tuple[tuple[NodeValue, ...], int]:
    """Every node with a failure or warning (failures first), then the lowest others; capped at MAX_OUTLIERS."""
    flagged = [v for v in values if v.verdict == "fail"] + [v for v in values if v.verdict == "warn"]
    lowest = [v for v in values if v.verdict not in ("fail", "warn")][:LOWEST_SHOWN]
    chosen = flagged + lowest
    return tuple(chosen[:MAX_OUTLIERS]), max(len(chosen) - MAX_OUTLIERS, 0)
