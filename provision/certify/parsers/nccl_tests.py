"""nccl-tests output (all_reduce_perf and friends): the rank table, the size sweep, the summary.

The table is read through its header line, so every layout nccl-tests has printed is understood:
- key columns `size count type [redop] [root]` (old all_gather has neither redop nor root, old
  broadcast only root, old alltoall a redop header over an empty cell);
- per side `time algbw busbw` then `#wrong` (a count of wrong elements, 2.13 and later) or `error`
  (the maximum relative error, older), optionally followed by the per-iteration columns
  (`i_min i_max i_p99 i_cv%`), and a trailing timestamp (`-S 1`);
- summary and header lines with or without their `#` (pasted output loses it).
Rows without a header (an excerpt) are placed by their token count. Launcher labels are removed:
OpenMPI `[1,0]<stdout>:`, `srun --label` `0: `, and MPICH/Hydra `[0] `, which Hydra writes again at
every write the program makes, so it can stand in the middle of a row. NCCL INFO/WARN lines are skipped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from provision.certify.probe.parse_errors import failure, guarded

_OPENMPI = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:")
_SLURM = re.compile(r"^\d+:(?: |$)")
_HYDRA = re.compile(r"\[\d+\] ")
_NCCL_LOG = re.compile(r"^\S+:\d+:\d+ \[\d+\] (?:NCCL (?:INFO|WARN|TRACE)|\S+:\d+ NCCL WARN)|^NCCL version ")
_RANK = re.compile(r"^Rank\s+(?P<rank>\d+)(?:\s+Group\s+\d+)?(?:\s+Pid\s+\d+)?\s+on\s+(?P<host>\S+)\s+device\s+"
                   r"(?P<device>\d+)\s+\[(?P<bus>[^\]]+)\]\s+(?P<name>.+?)\s*$")
_AVG = re.compile(r"^Avg bus bandwidth\s*:\s*(?P<bw>\S+)")
_OOB = re.compile(r"^Out of bounds values\s*:\s*(?P<n>\d+)")
_PROGRAM = re.compile(r"^Collective test (?:concluded|starting):\s*(?P<name>\S+)")
_TIMESTAMP = re.compile(r"^(?:\d{4}-\d{2}-\d{2}|\d{2}:\d{2}:\d{2}(?:\.\d+)?)$")
_KEYS = ("size", "count", "type", "redop", "root")
_TIME = ("time", "cputime")
_REDOPS = {"sum", "prod", "max", "min", "avg", "none", "mulsum", "premulsum"}


@dataclass(frozen=True)
class Half:
    """One side (out-of-place or in-place) of a row."""

    time_us: float | None
    algbw: float | None  # GB/s
    busbw: float | None  # GB/s
    wrong: int | None  # data errors (2.13+ layout); None in the old layout or when not checked
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
    separate_runs: int = 1  # >1: each process ran its own test (nccl-tests built without MPI under a launcher)
    program: str | None = None  # "all_reduce_perf" when the output names it

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


@dataclass(frozen=True)
class _Layout:
    """Where the values sit in a row, read from the header line."""

    keys: tuple[str, ...]  # key column names, e.g. ("size", "count", "type", "redop", "root")
    side: int  # columns per side: 4, or 8 with per-iteration timing
    old: bool  # `error` (max relative error) instead of `#wrong`


def _layout(tokens: list[str]) -> _Layout | None:
    """The layout a header line announces, None when the line is no header."""
    starts = [i for i, t in enumerate(tokens) if t in _TIME]
    if len(starts) < 2 or tokens[:2] != ["size", "count"] or "busbw" not in tokens:
        return None
    keys = tuple(t for t in tokens[:starts[0]] if t in _KEYS)
    side = starts[1] - starts[0]
    return _Layout(keys, side, tokens[starts[0] + 3] == "error") if side >= 4 else None


def _guess(tokens: list[str]) -> _Layout | None:
    """The layout of a row met before any header (an excerpt), from its token count and values."""
    extra = len(tokens) - 11
    if extra == 0:
        keys: tuple[str, ...] = _KEYS[:3]
    elif extra == 1:
        keys = _KEYS[:3] + (("redop",) if tokens[3] in _REDOPS else ("root",))
    elif extra == 2:
        keys = _KEYS
    else:
        return None
    wrong = tokens[len(keys) + 3]
    return _Layout(keys, 4, not wrong.lstrip("-").isdigit() and wrong != "N/A")


def _num(token: str) -> float | None:
    """A printed figure; None for N/A; ValueError for anything else."""
    return None if token == "N/A" else float(token.rstrip("*"))


def _half(tokens: list[str], old: bool) -> Half:
    time, algbw, busbw = (_num(t) for t in tokens[:3])
    last = tokens[3].rstrip("*")
    if old:
        return Half(time, algbw, busbw, None, _num(last))
    return Half(time, algbw, busbw, None if last == "N/A" else int(last), None)


def _row(tokens: list[str], layout: _Layout | None) -> Row | None:
    """A row of the sweep, or None when the tokens are not one."""
    while tokens and _TIMESTAMP.match(tokens[-1]):
        tokens = tokens[:-1]
    if len(tokens) < 11 or not tokens[0].isdigit() or not tokens[1].isdigit():
        return None
    layout = layout or _guess(tokens)
    if layout is None or len(tokens) < 3 + 2 * layout.side:
        return None
    keys, sides = tokens[:-2 * layout.side], tokens[-2 * layout.side:]
    optional = [k for k in layout.keys if k in ("redop", "root")]
    extra = len(keys) - 3
    if extra > len(optional):
        return None
    values = dict(zip(("size", "count", "type", *optional[len(optional) - extra:]), keys))
    try:
        halves = _half(sides[:layout.side], layout.old), _half(sides[layout.side:], layout.old)
        root = int(values["root"]) if "root" in values else None
    except ValueError:
        return None
    return Row(int(values["size"]), int(values["count"]), values["type"], values.get("redop", ""), root, *halves)


def _unlabel(raw: str) -> str:
    """The line without launcher labels and surrounding blanks."""
    line = raw.strip()
    if match := _OPENMPI.match(line) or _SLURM.match(line):
        line = line[match.end():].strip()
    return _HYDRA.sub("", line).strip() if _HYDRA.match(line) else line


def _clean(raw: str) -> str:
    """The line without launcher labels, blanks and the `#` of a comment or summary line."""
    line = _unlabel(raw)
    return line[1:].strip() if line.startswith("#") else line


def _known(raw: str) -> bool:
    """Whether a line is something all_reduce_perf or NCCL prints (to quote the first one that is not)."""
    line = _unlabel(raw)
    if line.startswith(("#", "(B)", "...")) or _NCCL_LOG.match(line):
        return True
    tokens = line.split()
    return bool(_RANK.match(line) or _AVG.match(line) or _OOB.match(line) or _layout(tokens)
                or line.startswith(("nThread", "Using devices", "out-of-place", "in-place")) or _row(tokens, None))


@guarded("nccl-tests")
def parse(text: str) -> NcclRun:
    """Parse one run; ParseError if the output holds no result table (the run failed or was cut short)."""
    ranks: list[Rank] = []
    rows: list[Row] = []
    avg = oob = program = None
    layout: _Layout | None = None
    starts = 0
    for raw in text.splitlines():
        line = _clean(raw)
        tokens = line.split()
        if header := _layout(tokens):
            layout = header
        elif line.startswith("nThread "):
            starts += 1
        elif match := _RANK.match(line):
            ranks.append(Rank(int(match["rank"]), match["host"], int(match["device"]), match["bus"], match["name"]))
        elif match := _AVG.match(line):
            avg = _float(match["bw"])
        elif match := _OOB.match(line):
            oob = int(match["n"])
        elif match := _PROGRAM.match(line):
            program = match["name"]
        elif (row := _row(tokens, layout)) is not None:
            rows.append(row)
    if not rows:
        raise failure("no nccl-tests result rows found; the run failed or its output was cut short",
                      text.splitlines(), _known)
    return NcclRun(tuple(ranks), tuple(rows), avg, oob, max(starts, _repeated_ranks(ranks)), program)


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _repeated_ranks(ranks: list[Rank]) -> int:
    """How many times rank 0 is listed: more than once means separate single-process runs."""
    return max(1, sum(1 for r in ranks if r.rank == 0))
