"""certify's network matrix at 64, 1,000 and 4,000 nodes, simulated: the real scheduler and judging, fake figures.

Run: .venv/bin/python bench/certify_scale.py [--nodes 64 1000 4000] [--levels quick standard] [--seed N]

No cluster and no SSH. Per fleet size and level, the schedule is drawn by control.schedule (as certify draws it),
every direction of every pair gets a figure from a simulated fleet (iperf3 at LINK_GBPS with NOISE relative
spread; one node, the middle one, at SLOW_FRACTION of it on all its links), the doubtful pairs are measured again
through network.with_second_look (fresh figures), and judging.netmatrix.judge_network judges them, as in a run.
Printed per row: the rounds (first look + second look), the pairs and directions measured, the modelled wall time,
the judging's CPU time, the peak Python memory of the whole row (tracemalloc, a second pass) and whether the slow
node, and no other, was named. `full` is not simulated past 64 nodes: its rounds and modelled time come from the
circle method's count (N-1 rounds, N(N-1)/2 pairs).

The time model: a round measures its pairs at once, each pair its two directions one after the other, so a round
costs 2 x (IPERF3_SECONDS + DIRECTION_OVERHEAD_S). DIRECTION_OVERHEAD_S (0.25 s) is the client's start over the
open SSH session, the TCP connect and the JSON; an assumption, not measured here, and the one that puts the
all-pairs matrix at 1,000 nodes at the issue's 40 minutes (999 rounds x 2.5 s). The servers' start and stop
(one command over every node, in parallel) are left out: the same at every level.
"""
from __future__ import annotations

import argparse
import random
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass

from provision.certify.control import network, schedule
from provision.certify.judging import netmatrix
from provision.certify.judging.netmatrix import PairResult

LINK_GBPS = 94.0  # iperf3 over 100 GbE
NOISE = 0.015  # relative spread of one measurement
SLOW_FRACTION = 0.6  # the slow node's links
DIRECTION_OVERHEAD_S = 0.25
Rounds = list[list[tuple[str, str]]]


@dataclass(frozen=True)
class Row:
    """One fleet size at one level."""

    nodes: int
    level: str
    kind: str
    seed: int | None
    rounds: int
    again_rounds: int
    pairs: int
    directions: int
    judge_cpu_s: float | None = None
    peak_mib: float | None = None
    named: str = "not simulated"

    @property
    def modelled_s(self) -> float:
        """Wall time of the matrix by the model in the module's docstring."""
        return (self.rounds + self.again_rounds) * 2 * (network.IPERF3_SECONDS + DIRECTION_OVERHEAD_S)


class Fabric:
    """Fake figures: every link LINK_GBPS with NOISE, the slow node's links at SLOW_FRACTION of it."""

    def __init__(self, slow: str, seed: int) -> None:
        self.slow, self.rng = slow, random.Random(seed)
        self.rounds = 0

    def measure(self, rounds: Rounds) -> list[PairResult]:
        """Both directions of every pair of every round, as network.measure_iperf3 returns them."""
        self.rounds += len(rounds)
        return [self._one(src, dst) for pairs in rounds for a, b in pairs for src, dst in ((a, b), (b, a))]

    def _one(self, src: str, dst: str) -> PairResult:
        scale = SLOW_FRACTION if self.slow in (src, dst) else 1.0
        return PairResult(src, dst, round(LINK_GBPS * scale * self.rng.gauss(1.0, NOISE), 4), "iperf3")


def simulate(n: int, level: str, seed: int) -> Row:
    """One row: schedule, measure, second look, judge (timed), then again under tracemalloc for the peak."""
    row, judge_s = _run(n, level, seed, time.process_time)
    tracemalloc.start()
    _run(n, level, seed, time.process_time)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return Row(**{**row.__dict__, "judge_cpu_s": judge_s, "peak_mib": peak})


def _run(n: int, level: str, seed: int, clock: Callable[[], float]) -> tuple[Row, float]:
    nodes = [f"gpu{i:04d}" for i in range(n)]
    slow = nodes[n // 2]
    plan = schedule.plan(nodes, level, seed)
    fabric = Fabric(slow, seed)
    first = fabric.measure(plan.as_lists())
    pairs = network.with_second_look(nodes, first, fabric.measure)
    started = clock()
    _, node_checks = netmatrix.judge_network(nodes, pairs, None)
    judged = clock() - started
    named = sorted(c.node for c in node_checks if c.verdict == "fail")
    warned = sum(c.verdict == "warn" for c in node_checks)
    verdict = ("yes" if named == [slow] else f"NO: failed {', '.join(named) or 'none'}") + f", {warned} warn"
    return Row(n, level, plan.kind, plan.seed, len(plan.rounds), fabric.rounds - len(plan.rounds), plan.pairs,
               len(first), named=verdict), judged


def full_row(n: int) -> Row:
    """The all-pairs matrix by count alone."""
    pairs = n * (n - 1) // 2
    return Row(n, "full", schedule.ALL_PAIRS, None, n - 1 + n % 2, 0, pairs, 2 * pairs)


def table(rows: list[Row]) -> str:
    """The rows as a fixed-width table."""
    head = (f"{'nodes':>5} {'level':<8} {'schedule':<9} {'seed':>15} {'rounds':>6} {'again':>5} {'pairs':>8} "
            f"{'dirs':>9} {'modelled':>9} {'judge cpu':>9} {'peak MiB':>8}  slow node named")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r.nodes:>5} {r.level:<8} {r.kind:<9} {_opt(r.seed, 'd'):>15} {r.rounds:>6} "
                     f"{r.again_rounds:>5} {r.pairs:>8} {r.directions:>9} {_duration(r.modelled_s):>9} "
                     f"{_opt(r.judge_cpu_s, '.2f', ' s'):>9} {_opt(r.peak_mib, '.1f'):>8}  {r.named}")
    return "\n".join(lines)


def _opt(value: float | None, spec: str, unit: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{unit}"


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def main() -> None:
    """Every size at every level; prints the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[64, 1000, 4000])
    parser.add_argument("--levels", nargs="+", default=["quick", "standard"], choices=sorted(schedule.MATCHINGS))
    parser.add_argument("--seed", type=int, default=None, help="draw the schedules and figures from this seed")
    args = parser.parse_args()
    seed = schedule.new_seed() if args.seed is None else args.seed
    started = time.process_time()
    rows = []
    for n in args.nodes:
        rows += [simulate(n, level, seed) for level in args.levels]
        rows.append(simulate(n, "full", seed) if n <= 64 else full_row(n))
    print(table(rows))
    print(f"seed {seed}; {time.process_time() - started:.1f} s CPU in all; a round = 2 x ({network.IPERF3_SECONDS} s "
          f"iperf3 + {DIRECTION_OVERHEAD_S} s), the servers' start and stop left out")


if __name__ == "__main__":
    main()
