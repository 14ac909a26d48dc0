"""Bisection: which node or pair of nodes makes a job across a node set fail, when each node alone passes.

The search splits the failing set in halves and runs the job on both (they share no node, so they may run at the
same time). A half that fails holds the fault: the search goes on inside it. When both halves pass, the fault is
across them: one half stays whole while the other is narrowed (A_i with all of B) down to the node a whose
presence makes the job fail, then B is narrowed the same way against a alone ({a} with B_i) down to b. The pair
(a, b) is run alone at the end unless the narrowing already ran it: the verdict names a pair only where a job on
exactly those two nodes failed. A fault that needs three nodes or more is not a pair: the result is then "not
localised" and names the smallest failing set that ran.

A launch can fail by chance (Open MPI's start-up race, see user_steps.MPI_RELAUNCHES): a subset that fails is launched
once more and counts as failing only when it fails again; a subset that passes counts as passing. A pass that the
narrowing infers (the other side of a subset that passed) is never launched: for a fault between two nodes of N the
search runs at most 2 ceil(log2 N) + 1 subsets, each launched once or twice.

Pure: the job is a callable that runs it on some nodes and says why it failed (None: it passed).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

Nodes = tuple[str, ...]
Launch = Callable[[Nodes], str | None]  # runs the job on these nodes: why it failed, or None when it passed


@dataclass(frozen=True)
class Trial:
    """One subset the search ran: its nodes, why it ran them, and how its launches ended."""

    nodes: Nodes
    purpose: str  # "half", "across" or "pair"
    failures: tuple[str, ...] = ()  # why each failed launch failed, in order (two: a confirmed failure)

    @property
    def failed(self) -> bool:
        """Failed twice in a row: a failure that counts."""
        return len(self.failures) >= 2

    @property
    def launches(self) -> int:
        """Jobs this subset took: one, or two when the first failed."""
        return 1 if not self.failures else 2

    @property
    def outcome(self) -> str:
        """pass, fail, or "pass (failed once: ...)" for a failure that did not repeat."""
        if self.failed:
            return f"fail ({self.failures[-1]})"
        return f"pass (the first launch failed: {self.failures[0]})" if self.failures else "pass"


@dataclass(frozen=True)
class Bisection:
    """Where the search ended and the way it took there."""

    nodes: Nodes  # the failing set it searched
    culprit: Nodes  # the pair (or node) at fault when localised, else the smallest failing set that ran
    localised: bool
    path: tuple[Trial, ...]

    @property
    def jobs(self) -> int:
        """Every launch of the search, relaunches included."""
        return sum(t.launches for t in self.path)


@dataclass
class _Search:
    """One search: the launcher and what it has run so far."""

    launch: Launch
    concurrent: bool
    path: list[Trial] = field(default_factory=list)

    def trial(self, nodes: Nodes, purpose: str) -> Trial:
        """Run the job on `nodes`; a failure is launched again before it counts."""
        failures: list[str] = []
        for _ in range(2):
            why = self.launch(nodes)
            if why is None:
                break
            failures.append(why)
        return Trial(nodes, purpose, tuple(failures))

    def halves(self, first: Nodes, second: Nodes) -> tuple[bool, bool]:
        """Whether each half fails; a half of one node passes without a job (each node alone passed)."""
        todo = [h for h in (first, second) if len(h) > 1]
        if self.concurrent and len(todo) == 2:
            with ThreadPoolExecutor(max_workers=2) as pool:
                done = list(pool.map(lambda h: self.trial(h, "half"), todo))
        else:
            done = [self.trial(h, "half") for h in todo]
        self.path += done
        failed = {t.nodes for t in done if t.failed}
        return first in failed, second in failed

    def failing(self, nodes: Nodes, purpose: str) -> bool:
        """Run one subset and record it; whether it failed."""
        self.path.append(self.trial(nodes, purpose))
        return self.path[-1].failed

    def within(self, nodes: Nodes) -> Nodes:
        """The pair at fault inside a failing set whose nodes each pass alone (the set itself when it has two)."""
        if len(nodes) <= 2:
            return nodes
        first, second = split(nodes)
        first_fails, second_fails = self.halves(first, second)
        if first_fails or second_fails:
            return self.within(first if first_fails else second)
        a = self.narrow(first, second)
        b = self.narrow(second, (a,))
        return ordered(nodes, (a, b))

    def narrow(self, candidates: Nodes, fixed: Nodes) -> str:
        """The node of `candidates` that fails with `fixed` (the job on both sets fails): bisect the candidates,
        keeping the part that still fails with every node of `fixed`."""
        while len(candidates) > 1:
            left, right = split(candidates)
            candidates = left if self.failing(ordered_union(left, fixed), "across") else right
        return candidates[0]

    def confirmed(self, nodes: Nodes) -> bool:
        """Whether a subset of exactly these nodes has failed twice already."""
        return any(t.failed and set(t.nodes) == set(nodes) for t in self.path)

    def smallest_failure(self, whole: Nodes) -> Nodes:
        """The smallest subset that failed (the whole set when none did)."""
        failed = [t.nodes for t in self.path if t.failed]
        return min(failed, key=len) if failed else whole


def bisect(nodes: Sequence[str], launch: Launch, concurrent: bool = False) -> Bisection:
    """Find the pair of `nodes` whose job fails, given that the job on all of them fails and on each alone passes.
    `concurrent`: run the two halves of a split at the same time."""
    whole = tuple(nodes)
    search = _Search(launch, concurrent)
    found = search.within(whole)
    if len(found) == 2 and found != whole and not search.confirmed(found):
        search.failing(found, "pair")
    localised = len(found) <= 2 and (found == whole or search.confirmed(found))
    culprit = found if localised else search.smallest_failure(whole)
    return Bisection(whole, culprit, localised, tuple(search.path))


def split(nodes: Nodes) -> tuple[Nodes, Nodes]:
    """Two halves, the first one the larger when the count is odd."""
    middle = (len(nodes) + 1) // 2
    return nodes[:middle], nodes[middle:]


def ordered_union(part: Nodes, fixed: Nodes) -> Nodes:
    """Both sets as one job's nodes, without repeats."""
    return part + tuple(n for n in fixed if n not in part)


def ordered(whole: Nodes, some: Nodes) -> Nodes:
    """`some` in the order `whole` lists them."""
    return tuple(n for n in whole if n in some)
