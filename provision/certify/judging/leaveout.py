"""Fleet statistics of every value but a few: the median and MAD of the links that do not touch one node.

The network matrix judges each node against the links that do not touch it (judging.netmatrix). Done naively that
is a sort of every link per node: N x P log P, minutes at 4,000 nodes. Here the values are sorted once and each
node's few values are taken out by counting (`select`), so a node costs a few binary searches. The deviations from
a median are sorted once per distinct median, and the medians left after taking out a node's values are a handful
(a node's values move the median by a few ranks at most), so the MAD costs the same. The figures are exactly those
of judge.fleet_stats over the remaining values.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from provision.certify.judging.judge import FleetStats


class LeaveOut:
    """The values of a fleet, sorted once; `stats(without)` is fleet_stats of the rest."""

    def __init__(self, values: Sequence[float]) -> None:
        self.values = sorted(values)
        self._deviations: dict[float, list[float]] = {}

    def __len__(self) -> int:
        return len(self.values)

    def stats(self, without: Sequence[float]) -> FleetStats:
        """Median and MAD of the values with each of `without` taken out once (each must be among them)."""
        removed = sorted(without)
        mid = _median(self.values, removed)
        deviations = self._deviations.get(mid)
        if deviations is None:
            deviations = self._deviations[mid] = sorted(abs(v - mid) for v in self.values)
        mad = _median(deviations, sorted(abs(v - mid) for v in removed))
        return FleetStats(len(self.values) - len(removed), mid, mad)


def _median(ordered: list[float], removed: list[float]) -> float:
    """statistics.median of `ordered` with `removed` taken out (both sorted); the rest must not be empty."""
    n = len(ordered) - len(removed)
    if n <= 0:
        raise ValueError("no value left")
    low = select(ordered, removed, (n - 1) // 2)
    return low if n % 2 else (low + select(ordered, removed, n // 2)) / 2


def select(ordered: list[float], removed: list[float], rank: int) -> float:
    """The value of 0-based `rank` among `ordered` without `removed` (the first occurrences of each removed value)."""
    lo, hi = 0, len(ordered) - 1
    while lo < hi:  # the first index whose kept values up to it number rank + 1
        mid = (lo + hi) // 2
        if _kept_through(ordered, removed, mid) >= rank + 1:
            hi = mid
        else:
            lo = mid + 1
    return ordered[lo]


def _kept_through(ordered: list[float], removed: list[float], index: int) -> int:
    """How many of ordered[0..index] are kept."""
    value = ordered[index]
    below = bisect_left(removed, value)  # removed values lower than this one: all taken out before it
    equal = bisect_right(removed, value) - below  # taken out from the first occurrences of this value
    taken = below + min(equal, index - bisect_left(ordered, value) + 1)
    return index + 1 - taken
