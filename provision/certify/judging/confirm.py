"""A GPU benchmark figure that fails is measured again before the fail stands.

After the probe, the runner judges the first figures (`to_measure_again`); the nodes where a benchmark check failed
(below its floor or below the fleet) run the benchmarks again, alone (the probe's --bench-again, one srun over those
nodes only). Each figure measured again is then judged by the better of its two figures (`better`), the fleet
included: a passing figure the second time shows the GPU can do it, and a one-off slow run (a noisy neighbour, a
clock ramp, a page-cache miss) is not a fault of the node. A check that fails on the first figure and not on the
better one is a warning naming both figures ("not confirmed: X then Y TFLOP/s measured again"); one that fails on
both says so ("confirmed: X then Y ..."). Every figure here is higher-is-better.

Pure: the runner's part is certify.control.bench_again.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from provision.certify.probe.records import CheckResult, Measurement

MEASURED_AGAIN = ("gpu.gemm_bf16", "gpu.copy_bw", "gpu.h2d_bw", "gpu.d2h_bw")  # the probe's benchmark figures


@dataclass(frozen=True)
class Figures:
    """One figure's two measurements; `again` None: the second measurement gave no figure."""

    first: float
    again: float | None

    @property
    def best(self) -> float:
        """The figure judged: the better of the two."""
        return self.first if self.again is None else max(self.first, self.again)

    def text(self, unit: str | None) -> str:
        """"X then Y UNIT measured again"."""
        again = "no figure" if self.again is None else f"{self.again:g}"
        return f"{self.first:g} then {again}{f' {unit}' if unit else ''} measured again"


def to_measure_again(results: Iterable[CheckResult]) -> list[str]:
    """The nodes (sorted) where a benchmark figure failed its first judging."""
    return sorted({r.node for r in results if r.check in MEASURED_AGAIN and r.verdict == "fail" and r.node})


def better(measurements: Sequence[Measurement],
           again: Mapping[str, Sequence[Measurement]]) -> tuple[list[Measurement], list[Figures | None]]:
    """The measurements in order, each benchmark figure of a node measured again replaced by the better of its two
    figures; beside each, its Figures (None where it was not measured again). `again`: node -> its second
    measurements (a node without any second figure, because its second run failed, keeps its first)."""
    seconds = {(m.node, m.metric, m.subject): m.value for ms in again.values() for m in ms}
    best: list[Measurement] = []
    figures: list[Figures | None] = []
    for m in measurements:
        if m.node not in again or m.metric not in MEASURED_AGAIN:
            best.append(m)
            figures.append(None)
            continue
        pair = Figures(m.value, seconds.get((m.node, m.metric, m.subject)))
        best.append(replace(m, value=pair.best))
        figures.append(pair)
    return best, figures


def confirmed(best: CheckResult, first: CheckResult, figures: Figures | None) -> CheckResult:
    """A check's verdict from its better figure, naming both figures where it was measured again: a fail seen on the
    first figure only is a warning ("not confirmed"), one seen on the better figure too is a fail ("confirmed")."""
    if figures is None:
        return best
    return named(best, first, figures.text(best.unit))


def named(best: CheckResult, first: CheckResult, text: str) -> CheckResult:
    """The verdict of a figure measured twice (`text`: "X then Y UNIT measured again"): a fail on the better figure
    says "confirmed", a fail on the first one only is a warning ("not confirmed"), anything else names both figures."""
    if best.verdict == "fail":
        return replace(best, detail=f"confirmed: {text}; {best.detail}")
    if first.verdict == "fail":
        return replace(best, verdict="warn", detail=f"not confirmed: {text} ({first.detail})")
    return replace(best, detail="; ".join(filter(None, [text, best.detail])))
