"""Two-sided judgement of measurements: an absolute floor, and the fleet (median and MAD per group).

A value below its floor fails. Within the group (same GPU model and metric), a robust z-score
(x - median) / (1.4826 MAD) flags a value that is far below its peers even when it clears the floor:
z <= -3.5 with a drop of at least 5 % warns, z <= -5 with a drop of at least 10 % fails (the
Together AI practice of suspect/severe bands; SuperBench flags drops over 10 %). The spread has a
floor of 2 % of the median, derived from those bands: DROP_FAIL / |Z_FAIL| = 10 % / 5. In a fleet tighter than
that, a z of -5 then needs the same 10 % drop as the drop band, and a z of -3.5 needs 7 %: a fleet that agrees to
the third decimal (a paced link, identical GPUs) does not turn a few percent of noise into a fail.
A value less than 5 % above the floor warns (azurehpc-health-checks' warn band). A floor derived for this
run (scaled for NICs, line rate or lanes) shows its derivation in the detail; the table's floors are listed,
with theirs, in the report's threshold table.
"""
from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from provision.certify.judging.thresholds import TABLE, Threshold
from provision.certify.probe.records import CheckResult, worst

MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution x this = its standard deviation
Z_WARN, DROP_WARN = -3.5, 0.05
Z_FAIL, DROP_FAIL = -5.0, 0.10
MIN_SPREAD = DROP_FAIL / -Z_FAIL  # spread never below 2 % of the median (see above)
FLOOR_WARN_BAND = 1.05
MIN_FLEET = 3  # fewer peers than this: no fleet-relative test


@dataclass(frozen=True)
class Sample:
    """One value to judge, and the group whose peers it is compared with."""

    check: str
    node: str
    value: float
    unit: str
    group: str  # e.g. "H100-SXM"; peers share check and group
    subject: str | None = None
    floor: Threshold | None = None
    detail: str = ""


@dataclass(frozen=True)
class FleetStats:
    """Median and median absolute deviation of a group."""

    n: int
    median: float
    mad: float

    @property
    def spread(self) -> float:
        """Robust standard deviation, never below MIN_SPREAD of the median."""
        return max(MAD_TO_SIGMA * self.mad, MIN_SPREAD * abs(self.median), 1e-12)

    def z(self, value: float) -> float:
        """Robust z-score of a value."""
        return (value - self.median) / self.spread


def fleet_stats(values: list[float]) -> FleetStats:
    """Median and MAD of a non-empty list."""
    mid = median(values)
    return FleetStats(len(values), mid, median(abs(v - mid) for v in values))


def judge_value(sample: Sample, stats: FleetStats | None) -> CheckResult:
    """Floor, floor warn band and fleet test for one sample; the worst of them wins."""
    verdicts, reasons = ["pass"], []
    floor = sample.floor
    if floor is not None:
        if sample.value < floor.value:
            verdicts.append("fail")
            reasons.append(f"below the floor {floor.value:g} {floor.unit}")
        elif sample.value < floor.value * FLOOR_WARN_BAND:
            verdicts.append("warn")
            reasons.append(f"within {round((FLOOR_WARN_BAND - 1) * 100)} % of the floor")
    if stats is not None and stats.n >= MIN_FLEET and stats.median > 0:
        z = stats.z(sample.value)
        drop = (stats.median - sample.value) / stats.median
        if z <= Z_FAIL and drop >= DROP_FAIL:
            verdicts.append("fail")
        elif z <= Z_WARN and drop >= DROP_WARN:
            verdicts.append("warn")
        if z <= Z_WARN and drop >= DROP_WARN:
            reasons.append(f"fleet outlier: {drop:.0%} below the {sample.group} median {stats.median:.4g} "
                           f"(robust z {z:.1f}, n={stats.n})")
    source = floor.source if floor else "no published floor; fleet-relative test only"
    derived = f"floor {floor.value:g} {floor.unit} = {floor.derivation}" if floor and floor not in TABLE else ""
    detail = "; ".join(filter(None, [*reasons, sample.detail, derived]))
    return CheckResult(check=sample.check, verdict=worst(verdicts), node=sample.node, subject=sample.subject,
                       value=round(sample.value, 3), unit=sample.unit, threshold=floor.value if floor else None,
                       source=source, detail=detail)


def judge(samples: list[Sample]) -> list[CheckResult]:
    """Judge every sample against its floor and its peers (same check and group), in input order."""
    groups: dict[tuple[str, str], list[float]] = {}
    for s in samples:
        groups.setdefault((s.check, s.group), []).append(s.value)
    stats = {key: fleet_stats(values) for key, values in groups.items()}
    return [judge_value(s, stats[(s.check, s.group)]) for s in samples]
