"""The network of a partial certification: each certified node judged by its pairs with the others, in aggregate.

A partial run measures the pairs of its level's schedule among the controller, the certified nodes and their peers
(certify.control.peers, certify.control.schedule: every pair up to 9 nodes at quick, 13 at standard, a ring and random
matchings beyond, so a certified node may meet only some of the nodes in service).
The pairs that touch no certified node are the reference: how links between nodes already in service look, for the
leave-one-out comparison (netmatrix); they get no check, since a peer is measured, never judged. A certified node's
partners are the nodes it has a pair with, and it is judged by them as a whole:
- its links as a whole well below the reference (netmatrix's leave-one-out): it fails, as in a full run;
- a partner whose own links are low with every node (the same comparison blames the partner) does not count;
- of the other partners, half or more with a failed pair: it fails, the fault is on its side;
- fewer than half: it does not fail. Its net.node_bw names the partners it failed with, and those pairs become
  warnings that say the node was judged in aggregate: one bad peer must not keep a good new node out of service.
Pure: pair results and checks in, checks out.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from provision.certify.judging.netmatrix import PairResult
from provision.certify.probe.records import CheckResult


def judge_network(targets: Sequence[str], pairs: Sequence[PairResult], pair_checks: Sequence[CheckResult],
                  node_checks: Sequence[CheckResult], suspects: set[str]) -> tuple[list[CheckResult],
                                                                                   list[CheckResult]]:
    """(net.pairwise_bw of the pairs that touch a certified node, net.node_bw of each certified node), from
    netmatrix.judge_network's checks over every node of the run (same order as `pairs`)."""
    mine = set(targets)
    kept = [(p, c) for p, c in zip(pairs, pair_checks) if p.src in mine or p.dst in mine]
    bases = {c.node: c for c in node_checks}
    nodes = [_aggregate(t, [(p, c) for p, c in kept if p.touches(t)], bases[t], suspects)
             for t in targets if t in bases]
    failed = {c.node for c in nodes if c.verdict == "fail"}
    return [_pair(p, c, mine, failed) for p, c in kept], nodes


def partner(pair: PairResult, node: str) -> str:
    """The other end of a pair."""
    return pair.dst if pair.src == node else pair.src


def _aggregate(node: str, links: list[tuple[PairResult, CheckResult]], base: CheckResult,
               suspects: set[str]) -> CheckResult:
    """The node's net.node_bw, with its pairs judged together."""
    partners = sorted({partner(p, node) for p, _ in links})
    failed = sorted({partner(p, node) for p, c in links if c.verdict == "fail"})
    if not failed or base.verdict == "fail":
        return base
    blamed = [n for n in failed if n in suspects]
    counted = [n for n in failed if n not in suspects]
    if counted and 2 * len(counted) >= len(partners):
        return replace(base, verdict="fail", detail=_join(
            f"failed pairs with {', '.join(counted)}: {len(counted)} of its {len(partners)} partners, judged by its "
            "pairs in aggregate (half or more failing puts the fault on this node's side)", base.detail))
    good = [n for n in partners if n not in failed]
    why = f"({', '.join(blamed)}'s links are low with every node)" if blamed else "(the other pairs pass)"
    return replace(base, detail=_join(
        f"judged by its pairs in aggregate: passes with {', '.join(good) or 'no partner'}; the failed pairs with "
        f"{', '.join(failed)} count against {'them' if len(failed) > 1 else 'that node'} {why}", base.detail))


def _pair(pair: PairResult, check: CheckResult, targets: set[str], failed: set[str]) -> CheckResult:
    """A failed pair of a certified node that passes in aggregate warns instead of failing the run."""
    ends = {pair.src, pair.dst} & targets
    if check.verdict != "fail" or ends & failed:
        return check
    judged = ", ".join(sorted(ends))
    return replace(check, verdict="warn", detail=_join(check.detail, f"not failed: {judged} passes by its pairs in "
                                                                     "aggregate (see its net.node_bw)"))


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
