"""nccl-tests output (all_reduce_perf and friends): the rank table, the size sweep, the summary.

Handles both table layouts: the current one (`root` column, `#wrong` counts) and the older one
(`error` column with the max relative error), lines prefixed by mpirun (`[1,0]<stdout>:`) or
`srun --label` (`0: `), and NCCL INFO lines mixed in.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_PREFIX = re.compile(r"^\s*(?:\[\d+,\d+\]<std(?:out|err)>:|\d+:\s)?\s*")
_RANK = re.compile(r"#\s*Rank\s+(?P<rank>\d+)(?:\s+Group\s+\d+)?\s+Pid\s+\d+\s+on\s+(?P<host>\S+)\s+device\s+"
                   r"(?P<device>\d+)\s+\[(?P<bus>[^\]]+)\]\s+(?P<name>.+?)\s*$")
_AVG = re.compile(r"#\s*Avg bus bandwidth\s*:\s*(?P<bw>[0-9.eE+-]+)")
_OOB = re.compile(r"#\s*Out of bounds values\s*:\s*(?P<n>\d+)")


@dataclass(frozen=True)
class Half:
    """One side (out-of-place or in-place) of a row."""

    time_us: float | None
    algbw: float | None  # GB/s
    busbw: float | None  # GB/s
    wrong: int | None  # data errors (new layout); None in the old layout
    max_error: float | None  # max relative error (old layout); None in the new layout


@dataclass(frozen=True)
class Row:
    """One message size of the sweep."""

    size_bytes: int
    count: int
    dtype: str
    redop: str
    root: int | None
    out_of_place: Half
    in_place: Half


@dataclass(frozen=True)
class Rank:
    """One rank of the "Using devices" table."""

    rank: int
    host: str
    device: int
    bus: str
    name: str


@dataclass(frozen=True)
class NcclRun:
    """A parsed run: ranks, rows in sweep order, the printed summary."""

    ranks: tuple[Rank, ...]
    rows: tuple[Row, ...]
    avg_busbw: float | None
    out_of_bounds: int | None

    @property
    def largest(self) -> Row:
        """The row with the largest message size."""
        return max(self.rows, key=lambda r: r.size_bytes)

    def busbw_at_largest(self) -> float:
        """Out-of-place busbw at the largest size, the figure judged against floors (GB/s)."""
        return self.largest.out_of_place.busbw or 0.0

    @property
    def wrong(self) -> int:
        """Data errors summed over every row and both sides (0 in the old layout)."""
        return sum((h.wrong or 0) for r in self.rows for h in (r.out_of_place, r.in_place))

    @property
    def hosts(self) -> tuple[str, ...]:
        """Distinct hosts in rank order."""
        return tuple(dict.fromkeys(r.host for r in self.ranks))


def _num(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:  # "N/A" for tests without an in-place variant
        return None


def _half(tokens: list[str], old: bool) -> Half:
    time, algbw, busbw, last = (_num(t) for t in tokens)
    if old:
        return Half(time, algbw, busbw, None, last)
    return Half(time, algbw, busbw, int(last) if last is not None else None, None)


def _row(tokens: list[str], has_root: bool, old: bool) -> Row | None:
    width = 4 + (1 if has_root else 0)
    if len(tokens) != width + 8 or not tokens[0].isdigit() or not tokens[1].isdigit():
        return None
    root = int(tokens[4]) if has_root else None
    return Row(int(tokens[0]), int(tokens[1]), tokens[2], tokens[3], root,
               _half(tokens[width:width + 4], old), _half(tokens[width + 4:width + 8], old))


def parse(text: str) -> NcclRun:
    """Parse one run; ValueError if the output holds no result table (the run failed or was cut short)."""
    ranks: list[Rank] = []
    rows: list[Row] = []
    avg = oob = None
    has_root, old = True, False
    for raw in text.splitlines():
        line = _PREFIX.sub("", raw, count=1).rstrip()
        if line.startswith("#"):
            if "redop" in line and "busbw" in line:
                has_root, old = " root " in f" {line} ", "#wrong" not in line
            elif match := _RANK.match(line):
                ranks.append(Rank(int(match["rank"]), match["host"], int(match["device"]), match["bus"],
                                  match["name"]))
            elif match := _AVG.match(line):
                avg = float(match["bw"])
            elif match := _OOB.match(line):
                oob = int(match["n"])
            continue
        row = _row(line.split(), has_root, old)
        if row is not None:
            rows.append(row)
    if not rows:
        raise ValueError("no nccl-tests result rows found; the run failed or its output was cut short")
    return NcclRun(tuple(ranks), tuple(rows), avg, oob)
