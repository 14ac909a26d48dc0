"""The pairwise network matrix as a heatmap: a cell per ordered pair for a small cluster, buckets for a large one.

Colour is the fraction of the best link: red at or below HEAT_RED_AT of it, through yellow, to green. Above
charts.LARGE_CLUSTER nodes the matrix is cut into at most BUCKETS x BUCKETS blocks of consecutive nodes, each
coloured by its slowest link (so one bad link still shows), and the slowest links are listed by name.
"""
from __future__ import annotations

import heapq
from itertools import islice
from dataclasses import dataclass
from math import ceil
from statistics import median

from provision.certify.records import NetMatrix

CELL, HEAT_LEFT, HEAT_TOP = 36, 110, 110
BUCKETS, BUCKET_LEFT, BUCKET_TOP, BUCKET_AREA = 50, 170, 170, 600
SLOWEST_SHOWN = 10
HEAT_RED_AT = 0.7  # a link at 70 % of the best one or less is fully red
UNMEASURED = "#d9d9d9"


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


@dataclass(frozen=True)
class Group:
    """Consecutive nodes of the matrix that share a row and a column of buckets."""

    first: str
    last: str
    size: int

    @property
    def label(self) -> str:
        """"gpu0001..gpu0020", or the node's name for a group of one."""
        return self.first if self.size == 1 else f"{self.first}..{self.last}"


@dataclass(frozen=True)
class Block:
    """One bucket: every link from a group of senders to a group of receivers."""

    x: int
    y: int
    colour: str
    tooltip: str


@dataclass(frozen=True)
class Link:
    """One named link, for the list of the slowest and the unmeasured."""

    src: str
    dst: str
    value: float | None


@dataclass(frozen=True)
class BucketHeatmap:
    """The matrix of a large cluster in blocks, with every group labelled and the slowest links named."""

    groups: tuple[Group, ...]
    blocks: tuple[Block, ...]
    size: int
    cell: int
    unit: str
    tool: str
    best: float | None
    slowest: tuple[Link, ...]
    unmeasured: tuple[Link, ...]
    unmeasured_count: int
    left: int = BUCKET_LEFT
    top: int = BUCKET_TOP


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
            fill = UNMEASURED if value is None else colour(value / best if best else 0.0)
            label = "" if value is None else f"{value:.0f}"
            cells.append(Cell(HEAT_LEFT + j * CELL, HEAT_TOP + i * CELL, src, dst, value, fill, label))
    size = HEAT_LEFT + CELL * len(matrix.nodes) + 10
    return Heatmap(matrix.nodes, tuple(cells), size, matrix.unit, matrix.tool)


def colour(fraction: float) -> str:
    """Red (at or below HEAT_RED_AT of the best link) through yellow to green (as fast as the best link)."""
    f = min(max((fraction - HEAT_RED_AT) / (1 - HEAT_RED_AT), 0.0), 1.0)
    red = 255 if f < 0.5 else int(255 * (1 - f) * 2)
    green = int(255 * f * 2) if f < 0.5 else 200
    return f"#{red:02x}{green:02x}40"


def bucketed(matrix: NetMatrix | None, buckets: int = BUCKETS) -> BucketHeatmap | None:
    """The matrix cut into at most `buckets` groups a side; each block is coloured by its slowest link."""
    if matrix is None or not matrix.nodes:
        return None
    n = len(matrix.nodes)
    per = ceil(n / buckets)
    starts = list(range(0, n, per))
    groups = tuple(Group(matrix.nodes[s], matrix.nodes[min(s + per, n) - 1], min(per, n - s)) for s in starts)
    measured = [v for row in matrix.values for v in row if v is not None]
    best = max(measured) if measured else None
    cell = max(BUCKET_AREA // len(groups), 4)
    blocks = tuple(_block(matrix, groups, gi, gj, per, cell, best) for gi in range(len(groups))
                   for gj in range(len(groups)))
    gaps, gap_count = _unmeasured(matrix)
    return BucketHeatmap(groups, blocks, BUCKET_LEFT + cell * len(groups) + 10, cell, matrix.unit, matrix.tool,
                         best, _slowest(matrix), gaps, gap_count)


def _block(matrix: NetMatrix, groups: tuple[Group, ...], gi: int, gj: int, per: int, cell: int,
           best: float | None) -> Block:
    rows = range(gi * per, gi * per + groups[gi].size)
    cols = range(gj * per, gj * per + groups[gj].size)
    values = [matrix.values[i][j] for i in rows for j in cols if i != j]
    measured = [v for v in values if v is not None]
    where = f"{groups[gi].label} to {groups[gj].label}"
    if not measured:
        return Block(BUCKET_LEFT + gj * cell, BUCKET_TOP + gi * cell, UNMEASURED, f"{where}: not measured")
    low = min(measured)
    tip = (f"{where}: {len(measured)} links, slowest {low:.0f}, median {median(measured):.0f} {matrix.unit}"
           + (f", {len(values) - len(measured)} not measured" if len(values) > len(measured) else ""))
    return Block(BUCKET_LEFT + gj * cell, BUCKET_TOP + gi * cell, colour(low / best if best else 0.0), tip)


def _slowest(matrix: NetMatrix) -> tuple[Link, ...]:
    """The SLOWEST_SHOWN slowest measured links, slowest first."""
    links = ((v, i, j) for i, row in enumerate(matrix.values) for j, v in enumerate(row) if v is not None and i != j)
    return tuple(Link(matrix.nodes[i], matrix.nodes[j], v) for v, i, j in heapq.nsmallest(SLOWEST_SHOWN, links))


def _unmeasured(matrix: NetMatrix) -> tuple[tuple[Link, ...], int]:
    """The first SLOWEST_SHOWN ordered pairs of distinct nodes without a value, and how many there are (a sampled
    matrix leaves most cells empty: counted, not listed)."""
    gaps = ((i, j) for i, row in enumerate(matrix.values) for j, v in enumerate(row) if v is None and i != j)
    shown = tuple(Link(matrix.nodes[i], matrix.nodes[j], None) for i, j in islice(gaps, SLOWEST_SHOWN))
    return shown, len(shown) + sum(1 for _ in gaps)
