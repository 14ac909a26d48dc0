"""What the HTML report says before any passing row: the failures and warnings, and each check id in one line.

A 1,000-node run holds about a million checks (200 per node and one per ordered pair of the network matrix),
so the page lists every problem but sums the passing checks up by check id; report.json keeps them all.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from statistics import median

from provision.certify.probe.records import CheckResult
from provision.certify.records import ClusterReport

PROBLEM_ORDER = ("fail", "warn")
MAX_PROBLEM_ROWS = 5000  # beyond this many failures and warnings the page names how many more report.json has


@dataclass(frozen=True)
class Problems:
    """Every failed check, then every warned one (up to MAX_PROBLEM_ROWS), and how many did not fit."""

    rows: tuple[CheckResult, ...]
    failed: int
    warned: int
    left_out: int


@dataclass(frozen=True)
class CheckSummary:
    """One check id across the run: verdict counts, the spread of its numeric values, its reference."""

    check: str
    unit: str
    counts: dict[str, int]
    lowest: float | None
    middle: float | None
    highest: float | None
    reference: float | None
    verdict: str

    @property
    def lowest_percent(self) -> float | None:
        """The lowest value as a percentage of the reference, when both are numbers."""
        return percent(self.lowest, self.reference)


def is_number(value: object) -> bool:
    """A real number (not a bool, which Python counts as an int)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def percent(value: object, reference: object) -> float | None:
    """Value as a percentage of the reference; None unless both are numbers and the reference is not zero."""
    if not (is_number(value) and is_number(reference)) or reference == 0:
        return None
    return 100.0 * float(value) / float(reference)


def wall_seconds(report: ClusterReport) -> float | None:
    """Seconds from the run's start to its finish; None when either time is not ISO 8601."""
    try:
        spread = datetime.fromisoformat(report.finished_at) - datetime.fromisoformat(report.started_at)
    except (TypeError, ValueError):
        return None
    return max(spread.total_seconds(), 0.0)


def problems(report: ClusterReport, limit: int = MAX_PROBLEM_ROWS) -> Problems:
    """Failures first, then warnings, each in report order (node by node, then cluster-wide)."""
    every = report.all_checks()
    by_verdict = {v: [c for c in every if c.verdict == v] for v in PROBLEM_ORDER}
    ordered = by_verdict["fail"] + by_verdict["warn"]
    return Problems(tuple(ordered[:limit]), len(by_verdict["fail"]), len(by_verdict["warn"]),
                    max(len(ordered) - limit, 0))


def by_check(report: ClusterReport) -> list[CheckSummary]:
    """One summary per check id, in the order the ids first appear."""
    groups: dict[str, list[CheckResult]] = {}
    for check in report.all_checks():
        groups.setdefault(check.check, []).append(check)
    return [_summarise(check, results) for check, results in groups.items()]


def _summarise(check: str, results: list[CheckResult]) -> CheckSummary:
    counts = {v: 0 for v in ("fail", "warn", "pass", "na")}
    for result in results:
        counts[result.verdict] += 1
    values = sorted(float(r.value) for r in results if is_number(r.value))
    references = [float(r.threshold) for r in results if is_number(r.threshold)]
    verdict = next((v for v in ("fail", "warn", "pass") if counts[v]), "na")
    unit = next((r.unit for r in results if r.unit), "")
    return CheckSummary(check, unit, counts, values[0] if values else None, median(values) if values else None,
                        values[-1] if values else None, min(references) if references else None, verdict)


@dataclass(frozen=True)
class NodeLine:
    """One row of the node table: the node's verdict and how many of its checks ended with each verdict."""

    name: str
    gpu_model: str | None
    verdict: str
    counts: dict[str, int]


def node_lines(report: ClusterReport) -> list[NodeLine]:
    """A line per node, in report order."""
    out = []
    for node in report.nodes:
        counts = {v: 0 for v in ("fail", "warn", "pass", "na")}
        for check in node.checks:
            counts[check.verdict] += 1
        out.append(NodeLine(node.name, node.gpu_model, node.verdict, counts))
    return out


def listed_cluster_checks(report: ClusterReport, per_id: int) -> tuple[list[CheckResult], list[str]]:
    """Cluster-wide checks to list row by row, and the ids left to the summary (more than `per_id` results)."""
    counts: dict[str, int] = {}
    for check in report.checks:
        counts[check.check] = counts.get(check.check, 0) + 1
    summarised = [check for check, n in counts.items() if n > per_id]
    return [c for c in report.checks if counts[c.check] <= per_id], summarised
