"""MPI in a partial certification: the certified nodes' own job (mpi.start, mpi.allreduce, as in a full run), then
mpi.peers: one job across the certified nodes and their peers, started as users start theirs (`srun --mpi=pmix`).

Slurm places a job inside one reservation or outside all of them. The certified nodes are held in the hold
reservation (MAINT) and the peers are outside it, so a job asking for both is refused ("Requested node configuration
is not available"). Slurm's FLEX reservation flag lets a job that asks for the reservation use nodes outside it as
well, while every other job stays off the held nodes: the run sets FLEX on the reservation for the job with the
peers and takes it off after (when it set it). So no MPI launcher of our own is needed; the peers' CPUs are
allocated like any job's. The job takes one rank a node (one idle CPU of a peer in service; the paths between the
nodes are what it proves, the on-node transport is the certified nodes' own job's) and waits for the peers at most
PEER_WAIT_S (--immediate): a peer that became busy does not hold the run up.

Judging, per certified node (a peer gets no check):
- the job passes: mpi.peers passes on every certified node;
- it fails: each certified node runs the job with each peer alone (two nodes, one rank each) and is judged by those
  runs in aggregate. A peer it fails with is run with a peer that worked: failing there too, the fault is the
  peer's own and does not count. Failing with half of the other peers or more fails the node (the fault is on its
  side: network, firewall, MPI versions); with fewer, or only with peers at fault, warns, naming them; with none
  warns (the job across all of them failed once and every pair passes);
- no peer could take part (none in service, none with an idle CPU, busy, the reservation could not reach out): n/a,
  saying why.
"""
from __future__ import annotations

import shlex
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace

from provision.certify.control import srun, user_jobs, user_steps
from provision.certify.control.fleet import Fleet
from provision.certify.control.session import MPI_CHECK, Session, step
from provision.certify.probe.records import CheckResult
from provision.certify.records import names

CHECK = "mpi.peers"
PEER_WAIT_S = 20  # --immediate: how long the job waits for the peers' CPUs before it goes on without them
SOURCE = "srun --mpi=pmix mpi-check across the certified nodes and peers in service, one rank a node"
THRESHOLD = "runs with more than half of the peers"


def mpi(run: Session, fleet: Fleet, answered: list[str]) -> None:
    """The certified nodes' own MPI job, then mpi.peers on those where MPI started."""
    user_steps.mpi(run, fleet, answered)
    started = [c.node for c in run.checks if c.check == "mpi.start" and c.verdict == "pass" and c.node in answered]
    run.checks += with_peers(run, fleet, started)


def with_peers(run: Session, fleet: Fleet, targets: list[str]) -> list[CheckResult]:
    """mpi.peers for each certified node (n/a, saying why, when no peer could take part)."""
    if not targets:
        return []
    peers = plan_peers(run.peer_idle)
    if not peers:
        return not_run(targets, "no peer in service" if not run.peer_idle else "no peer had an idle CPU")
    with flexible(run, fleet) as refused:
        if refused:
            return not_run(targets, refused)
        one = run.as_user(user_jobs.mpi_step(targets + peers, 1, MPI_CHECK, run.job("mpi-peers"),
                                             user_steps.reservation_env(run), (f"--immediate={PEER_WAIT_S}",)))
        run.progress(f"MPI job with the peers: {names(targets)} and {names(peers)}, one rank a node")
        output, _, seconds = step(run, fleet, one)
        if user_jobs.busy(output):
            return not_run(targets, f"the peers were busy for {PEER_WAIT_S} s")
        if not user_jobs.mpi_failed(one, output):
            return [passed(t, peers, seconds) for t in targets]
        run.progress("MPI job with the peers failed: running each certified node with each peer alone")
        works = {(t, p): _pair(run, fleet, one, t, p) for t in targets for p in peers}
        blamed = _blamed(run, fleet, one, works, peers)
    failure = user_jobs.failure_summary(one, output)
    return [judge(t, {p: works[(t, p)] for p in peers}, blamed, failure) for t in targets]


def _pair(run: Session, fleet: Fleet, one: srun.Step, first: str, second: str) -> bool | None:
    """Whether the job runs on two nodes, one rank each (None: a node was busy)."""
    pair = replace(one, nodes=(first, second))
    output, _, _ = step(run, fleet, pair)
    return None if user_jobs.busy(output) else not user_jobs.mpi_failed(pair, output)


def _blamed(run: Session, fleet: Fleet, one: srun.Step, works: Mapping[tuple[str, str], bool | None],
            peers: Sequence[str]) -> set[str]:
    """The peers a certified node failed with that also fail with a peer that worked: their own fault."""
    bad = [p for p in peers if any(ok is False for (_, q), ok in works.items() if q == p)]
    good = [p for p in peers if p not in bad and any(ok for (_, q), ok in works.items() if q == p)]
    if not bad or not good:
        return set()
    run.progress(f"running {names(bad)} with {good[0]}, a peer that works, to see whose fault it is")
    return {p for p in bad if _pair(run, fleet, one, p, good[0]) is False}


def judge(node: str, works: Mapping[str, bool | None], blamed: set[str], failure: str) -> CheckResult:
    """mpi.peers of one certified node from its runs with each peer, in aggregate; `blamed`: peers that fail with
    another peer too (not counted against the node)."""
    tried = {p: ok for p, ok in works.items() if ok is not None}
    bad = sorted(p for p, ok in tried.items() if not ok)
    counted = [p for p in bad if p not in blamed]
    good = [p for p in tried if tried[p]]
    base = dict(node=node, source=SOURCE, threshold=THRESHOLD, value=f"{len(good)}/{len(tried)} peers")
    if not tried:
        return CheckResult(CHECK, "na", node=node, source=SOURCE, detail="the peers were busy for the runs with "
                                                                          f"each of them (the job with all: {failure})")
    if counted and 2 * len(counted) >= len(tried):
        return CheckResult(CHECK, "fail", **base, detail=f"MPI fails with {', '.join(counted)} ({len(counted)} of "
                           f"{len(tried)} peers), judged by its runs with each peer: the fault is on this node's side "
                           f"(network, firewall, MPI versions); the job with all of them: {failure}")
    own = [p for p in bad if p in blamed]
    with_bad = f"fails with {', '.join(bad)} and " if bad else ""
    fault = f" ({', '.join(own)} {'fails' if len(own) == 1 else 'fail'} with another peer too: not this node's " \
            "fault)" if own else ""
    return CheckResult(CHECK, "warn", **base, detail=f"judged by its runs with each peer in aggregate: {with_bad}"
                                                     f"passes with {', '.join(good) or 'none'}{fault}; the job with "
                                                     f"all of them failed: {failure}")


def passed(node: str, peers: Sequence[str], seconds: float) -> CheckResult:
    """mpi.peers of a certified node when the job with every peer passed."""
    return CheckResult(CHECK, "pass", node=node, value=f"{len(peers)}/{len(peers)} peers", source=SOURCE,
                       threshold=THRESHOLD,
                       detail=f"allreduces correct across the certified nodes and {', '.join(peers)} "
                              f"({seconds:.1f} s, srun wall time)")


def not_run(nodes: Sequence[str], why: str) -> list[CheckResult]:
    """mpi.peers not applicable, and why."""
    return [CheckResult(CHECK, "na", node=n, source=SOURCE, detail=f"{why}: no MPI job with peers") for n in nodes]


def plan_peers(idle: Mapping[str, int]) -> list[str]:
    """The peers that can take the job's rank now (an idle CPU), best first."""
    return [p for p, cpus in idle.items() if cpus >= 1]


@contextmanager
def flexible(run: Session, fleet: Fleet) -> Iterator[str]:
    """While the block runs, jobs of the run's reservation may use nodes outside it (FLEX); yields why not ("" when
    they may, or when the run has no reservation)."""
    reservation = run.options.reservation
    if not reservation:
        yield ""
        return
    name = shlex.quote(reservation)
    shown = fleet.run(run.controller, f"scontrol -o show reservation {name}", 30)
    if shown.ok and "FLEX" in flags(shown.stdout):
        yield ""
        return
    added = fleet.run(run.controller, f"scontrol update ReservationName={name} Flags=FLEX", 30)
    if not added.ok:
        yield (f"the hold reservation could not reach the peers (scontrol update Flags=FLEX: "
               f"{(added.error or added.stderr or added.stdout).strip()[:120]})")
        return
    try:
        yield ""
    finally:
        fleet.run(run.controller, f"scontrol update ReservationName={name} Flags=-FLEX", 30)


def flags(text: str) -> list[str]:
    """The Flags= field of `scontrol -o show reservation`."""
    field = next((f for f in text.split() if f.startswith("Flags=")), "Flags=")
    return field.split("=", 1)[1].split(",")
