"""Every certify run of a cluster, read back from the report.json files of its reports folder.

One RunSummary per run folder: when, level, verdict, counts, wall time, scope and a few headline figures (the
median of a check id's values, the ids named in HEADLINES, their units from the catalogue). Reports of any 1.x schema
are read (one without a scope was a full run); a folder whose report.json is missing or cannot be read becomes a
note, never an error. A partial run (some nodes against peers in service) is a run of those nodes: the index lists it
as such, and the cluster's trends leave it out (trend.py).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from statistics import median
from typing import Any

from provision.certify import catalogue
from provision.certify.records import RunScope
from provision.certify.report.summary import is_number

REPORT_FILE, PAGE_FILE = "report.json", "report.html"
# (check id, what its median across the run means) in the order the index shows them
HEADLINES: tuple[tuple[str, str], ...] = (
    ("gpu.gemm_bf16", "median per-GPU BF16 GEMM"),
    ("nccl.node_busbw", "median per-node NCCL bus bandwidth"),
    ("nccl.cluster_busbw", "cluster NCCL bus bandwidth"),
    ("net.pairwise_bw", "median pairwise network bandwidth"),
    ("fs.write_bw", "median filesystem write bandwidth"),
)
WALL_TIME = ("wall_s", "certify wall time", "s")


@dataclass(frozen=True)
class Headline:
    """One headline figure: its key (a check id or "wall_s"), label and unit."""

    key: str
    label: str
    unit: str


@dataclass(frozen=True)
class RunSummary:
    """One run folder's report, as the index lists it."""

    folder: str
    cluster: str
    started_at: str
    level: str
    verdict: str
    counts: dict[str, int]
    wall_s: float | None
    figures: dict[str, float | None]  # Headline.key -> value (None when the run has none)
    has_page: bool  # report.html is there to link to
    scope: RunScope = RunScope()  # full, or the nodes a partial run certified and its peers

    @property
    def partial(self) -> bool:
        """A run of some nodes, not of the cluster."""
        return self.scope.partial


@dataclass(frozen=True)
class Runs:
    """The runs, newest first, and a note per folder that could not be read."""

    runs: tuple[RunSummary, ...]
    notes: tuple[str, ...]


def headlines() -> tuple[Headline, ...]:
    """The figures the index follows, units from the catalogue."""
    out = []
    for check, label in HEADLINES:
        entry = catalogue.lookup(check)
        out.append(Headline(check, label, (entry.unit if entry else None) or ""))
    return tuple(out) + (Headline(*WALL_TIME),)


def read_runs(reports_dir: Path) -> Runs:
    """Every `<folder>/report.json` under the reports folder, newest first."""
    runs, notes = [], []
    folders = sorted(p for p in reports_dir.iterdir() if p.is_dir()) if reports_dir.is_dir() else []
    for folder in folders:
        try:
            runs.append(summarise(folder.name, _load(folder / REPORT_FILE), (folder / PAGE_FILE).is_file()))
        except (OSError, ValueError, TypeError, KeyError) as exc:
            notes.append(f"{folder.name}: {REPORT_FILE} could not be read ({_reason(exc)})")
    runs.sort(key=lambda r: (r.started_at, r.folder), reverse=True)
    return Runs(tuple(runs), tuple(notes))


def summarise(folder: str, document: dict[str, Any], has_page: bool) -> RunSummary:
    """A run's line from its report document; KeyError or TypeError when it lacks the header fields."""
    if not isinstance(document, dict) or not str(document.get("schema_version", "")).startswith("1."):
        raise ValueError("not a certify report of schema 1.x")
    values = _values_by_check(document)
    wall = wall_seconds(document.get("started_at"), document.get("finished_at"))
    figures: dict[str, float | None] = {k: (median(values[k]) if values.get(k) else None) for k, _ in HEADLINES}
    figures[WALL_TIME[0]] = wall
    counts = {v: int(document["counts"].get(v, 0)) for v in ("pass", "warn", "fail", "na")}
    scope = RunScope.from_dict(document.get("scope"))
    return RunSummary(folder, str(document["cluster"]), str(document["started_at"]), str(document["level"]),
                      str(document["verdict"]), counts, wall, figures, has_page, scope)


def wall_seconds(started: object, finished: object) -> float | None:
    """Seconds between two ISO 8601 times; None when either is not one."""
    try:
        return max((datetime.fromisoformat(str(finished)) - datetime.fromisoformat(str(started))).total_seconds(), 0.0)
    except ValueError:
        return None


def _values_by_check(document: dict[str, Any]) -> dict[str, list[float]]:
    """The numeric values of the headline checks, node checks and cluster-wide ones alike."""
    wanted = {k for k, _ in HEADLINES}
    checks = [c for n in document.get("nodes") or [] for c in n.get("checks") or []]
    checks += document.get("checks") or []
    out: dict[str, list[float]] = {}
    for check in checks:
        if check.get("check") in wanted and is_number(check.get("value")):
            out.setdefault(check["check"], []).append(float(check["value"]))
    return out


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    if isinstance(exc, KeyError):
        return f"no {exc.args[0]!r}"
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
