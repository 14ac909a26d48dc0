"""Which pairs of nodes the network matrix measures, in rounds of disjoint pairs (no node in two pairs of a round).

At `full` every pair meets once: the circle method, N-1 rounds (N even; N rounds when N is odd, one node sitting
out each round), so the network part grows with the fleet (about 40 minutes at 1,000 nodes).

At `quick` and `standard` the rounds do not grow with N. The schedule is a ring (node i with node i+1, the last
with the first: 2 rounds of disjoint pairs for even N, 3 for odd N) plus MATCHINGS[level] random perfect matchings
drawn from a seeded generator, each one round, none repeating a pair already met. Every node is thus in
2 + MATCHINGS pairs with distinct peers (an odd N has one node sit out each matching, never the same one twice
while another has not). Why 2 and 4: a node is judged by the median of all its directions against the links that
do not touch it (judging.netmatrix); with four peers (eight directions) one bad peer moves that median by a rank at
most, so a node is blamed only when most of its links are slow, and its peers, whose other pairs are fast, are not.
Standard doubles the matchings for a tighter median and more links between random parts of the fabric. The ring
keeps the measured graph connected whatever the draw.

The seed is fresh for every run (`new_seed`, from the OS's entropy) and recorded in the report (records.NetSampling)
so a run's pairs can be drawn again: `plan(nodes, level, seed)` with the same node order gives the same schedule.

A small fleet measures all pairs at every level (`takes_all_pairs`): while the sample would have each node meet half
of the others or more (N - 1 <= 2 x its 2 + MATCHINGS peers: 9 nodes at quick, 13 at standard), all pairs cost a few
rounds more (9 or 13 against 5 or 7) and give the judging every link; and the random matchings, which must avoid
the pairs met already, have too few left to choose from there.
"""
from __future__ import annotations

import random
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from provision.certify.records import NetSampling

Pair = tuple[str, str]
Round = list[Pair]

MATCHINGS = {"quick": 2, "standard": 4}  # random matchings on top of the ring; a level not here: every pair
REPAIR_PASSES = 50  # passes of swaps per draw of a matching, to take out the pairs met already
DRAWS = 20  # draws of a matching before its clashing pairs are dropped
ALL_PAIRS, SAMPLED = "all pairs", "sampled"


@dataclass(frozen=True)
class Schedule:
    """The rounds of a matrix, and how they were chosen (the seed replays a sampled one)."""

    rounds: tuple[tuple[Pair, ...], ...]
    kind: str = ALL_PAIRS
    seed: int | None = None
    matchings: int = 0

    @property
    def pairs(self) -> int:
        """How many unordered pairs are measured (each both directions)."""
        return sum(len(r) for r in self.rounds)

    def as_lists(self) -> list[Round]:
        """The rounds as lists, as the measuring functions take them."""
        return [list(r) for r in self.rounds]

    def record(self) -> NetSampling:
        """What the report says about the schedule."""
        return NetSampling(self.kind, self.seed, len(self.rounds), self.pairs, self.matchings)


def new_seed() -> int:
    """A fresh seed from the OS's entropy, small enough to type back."""
    return secrets.randbits(48)


def plan(nodes: Sequence[str], level: str, seed: int | None = None) -> Schedule:
    """The schedule for a level: every pair at `full` or for a few nodes, else the ring and random matchings."""
    matchings = MATCHINGS.get(level)
    if matchings is None or takes_all_pairs(len(nodes), matchings):
        return Schedule(tuple(tuple(r) for r in circle(nodes)))
    seed = new_seed() if seed is None else seed
    rounds = sampled(nodes, matchings, random.Random(seed))
    return Schedule(tuple(tuple(r) for r in rounds), SAMPLED, seed, matchings)


def takes_all_pairs(n: int, matchings: int) -> bool:
    """Whether n nodes are few enough that the sample would meet half of each node's peers or more."""
    return n - 1 <= 2 * (2 + matchings)


def circle(nodes: Sequence[str]) -> list[Round]:
    """Round-robin schedule: N-1 rounds (N even) of disjoint unordered pairs covering every pair once."""
    ring: list[str | None] = list(nodes)
    if len(ring) < 2:
        return []
    if len(ring) % 2:
        ring.append(None)  # a bye: whoever meets it sits the round out
    n = len(ring)
    out = []
    for _ in range(n - 1):
        pairs = [(ring[i], ring[n - 1 - i]) for i in range(n // 2)]
        out.append([(a, b) for a, b in pairs if a is not None and b is not None])
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return out


def ring(nodes: Sequence[str]) -> list[Round]:
    """Node i with node i+1 and the last with the first: 2 rounds for even N, 3 for odd N (the closing pair alone)."""
    n = len(nodes)
    if n < 3:
        return circle(nodes)
    edges = [(nodes[i], nodes[(i + 1) % n]) for i in range(n)]
    if n % 2 == 0:
        return [edges[0::2], edges[1::2]]
    return [edges[0:n - 1:2], edges[1:n - 1:2], edges[n - 1:]]


def sampled(nodes: Sequence[str], matchings: int, rng: random.Random) -> list[Round]:
    """The ring, then `matchings` random matchings that repeat no pair met before."""
    rounds = ring(nodes)
    met = {frozenset(p) for r in rounds for p in r}
    rested: set[str] = set()
    for _ in range(matchings):
        drawn = matching(nodes, met, rng, rested)
        met |= {frozenset(p) for p in drawn}
        rounds.append(drawn)
    return rounds


def matching(nodes: Sequence[str], met: set[frozenset[str]], rng: random.Random, rested: set[str]) -> Round:
    """A random perfect matching (one node sits out when N is odd: one that has not yet) with no pair in `met`:
    drawn, its clashes swapped away, drawn afresh up to DRAWS times; the best draw's clashing pairs are dropped (a
    small N might run out of choices: 14,400 plans of 10 to 33 nodes at both levels never did)."""
    order = list(nodes)
    rng.shuffle(order)
    if len(order) % 2:
        bye = next((n for n in order if n not in rested), order[0])
        order.remove(bye)
        rested.add(bye)
    best: Round = []
    for _ in range(DRAWS):
        kept = _repaired(order, met, rng)
        if len(kept) == len(order) // 2:
            return kept
        best = max(best, kept, key=len)
        rng.shuffle(order)
    return best


def _repaired(order: list[str], met: set[frozenset[str]], rng: random.Random) -> Round:
    """Consecutive nodes of `order` paired, the pairs in `met` swapped with others; those still in it left out."""
    pairs = [(order[i], order[i + 1]) for i in range(0, len(order), 2)]
    for _ in range(REPAIR_PASSES):
        clashes = [i for i, p in enumerate(pairs) if frozenset(p) in met]
        if not clashes:
            break
        for i in clashes:
            _swap(pairs, i, rng.randrange(len(pairs)), met)
    return [p for p in pairs if frozenset(p) not in met]


def _swap(pairs: list[Pair], i: int, j: int, met: set[frozenset[str]]) -> None:
    """(a, b) and (c, d) become (a, c) and (b, d) when neither was met."""
    (a, b), (c, d) = pairs[i], pairs[j]
    if i != j and frozenset((a, c)) not in met and frozenset((b, d)) not in met:
        pairs[i], pairs[j] = (a, c), (b, d)
