"""Trend lines for the runs index: a headline figure across runs, oldest to newest, as SVG coordinates.

Computed here so the template only writes a polyline and a circle per point; runs without the figure are
skipped, and a figure no run has gets no chart. Partial runs (a grow, a release, a rolling batch: a few nodes
against peers) are left out: their figures and their few seconds are not the cluster's.
"""
from __future__ import annotations

from dataclasses import dataclass

from provision.certify.report.runs import Headline, RunSummary

WIDTH, HEIGHT, PAD = 260, 70, 8


@dataclass(frozen=True)
class Point:
    """One run's value at its place on the chart."""

    x: float
    y: float
    value: float
    folder: str


@dataclass(frozen=True)
class Trend:
    """One headline figure across runs: its points (oldest first), the range and the last value."""

    headline: Headline
    points: tuple[Point, ...]
    lowest: float
    highest: float

    @property
    def polyline(self) -> str:
        """The `points` attribute of the SVG polyline."""
        return " ".join(f"{p.x:.1f},{p.y:.1f}" for p in self.points)

    @property
    def latest(self) -> float:
        """The newest run's value."""
        return self.points[-1].value


def trends(runs: tuple[RunSummary, ...], headlines: tuple[Headline, ...]) -> list[Trend]:
    """A trend per headline some full run has; `runs` newest first, as the index lists them."""
    oldest_first = [r for r in reversed(runs) if not r.partial]
    out = []
    for headline in headlines:
        found = [(r.folder, r.figures.get(headline.key)) for r in oldest_first]
        values = [(folder, float(v)) for folder, v in found if v is not None]
        if values:
            out.append(_trend(headline, values))
    return out


def _trend(headline: Headline, values: list[tuple[str, float]]) -> Trend:
    low, high = min(v for _, v in values), max(v for _, v in values)
    step = (WIDTH - 2 * PAD) / max(len(values) - 1, 1)
    span = high - low

    def y(value: float) -> float:
        return HEIGHT / 2 if span == 0 else HEIGHT - PAD - (value - low) / span * (HEIGHT - 2 * PAD)

    x0 = WIDTH / 2 if len(values) == 1 else PAD
    points = tuple(Point(round(x0 + i * step, 1), round(y(v), 1), v, folder) for i, (folder, v) in enumerate(values))
    return Trend(headline, points, low, high)
