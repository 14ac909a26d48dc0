"""Jobs shaped like the ones users submit, placed through Slurm and judged from what their tasks print.

- slurm.node_resources (compute nodes): one job per set of identical nodes asks for each node whole, as a user
  sizing a job to the hardware would: `--exclusive`, every CPU (`-c`) and most of the memory (`--mem`). The
  task reports the CPUs Slurm gave it. A node that cannot take it within IMMEDIATE_S (user jobs hold it) warns.
- mpi.start (compute nodes) and mpi.allreduce (the cluster): one MPI job across every compute node, started
  the way users start theirs (`srun --mpi=pmix`), runs the certify role's mpi-check: allreduces of known
  values with every element of the result verified. Its wall time and the 8 MiB allreduce time are reported.
  A rank that dies aborts the whole job (PMIx tears the step down), so every node looks failed: when the job
  fails, each node runs the check alone (`alone_step`) and mpi.start is judged from that run, naming the
  nodes where MPI cannot start. If every node starts alone, the job across the nodes is launched again, up to
  user_steps.MPI_RELAUNCHES times: failing every time fails mpi.allreduce (the fault is between the nodes); a
  pass warns, naming the first failure (an intermittent start-up failure users' jobs meet too, e.g. Open MPI's
  start-up race).
- mpi.bisect (the cluster) and mpi.pair (the two nodes at fault): when the relaunches fail too and every node starts
  alone, bisection (control/bisect.py) runs the job on halves of the nodes and across them until it names the pair
  whose job alone fails; mpi.bisect lists the jobs it ran, in order, and mpi.allreduce names the pair. Every launch
  has MPI_TIMEOUT_S: a bound derived from the runs alone (20 s + 2 x the slowest alone x nodes) failed two healthy
  halves of 8 sandbox nodes that ran at once on a loaded machine (bench/bisection.py).
- A broken path between two nodes must fail a launch in seconds. Slurm's PMIx plugin retries an exchange between
  the two nodes' slurmstepd until its timeout (PMIxTimeout, 300 s by default), longer than MPI_TIMEOUT_S, so every
  failing launch waited out the step's whole limit. Every MPI step sets the plugin's timeout for itself
  (SLURM_PMIX_TIMEOUT, `pmix_timeout`): 15 s plus a tenth of a second per node, since the data a fence gathers grows
  with the nodes. A healthy exchange takes far less: on 8 sandbox nodes with three CPU-bound processes on the 2-core
  machine (load 13), every job of 8 nodes and every pair of 4-node halves at once passed under a 15 s timeout, each
  in 4-9 s of wall time. Open MPI's TCP transport, the other place a broken path waits, is bounded by mpi-check
  itself (it gives up an exchange that stalls while the others completed; the certify role's mpi_check.c). A cut
  pair's launch then fails in 16-32 s instead of 180 s.

Pure: steps are srun.Step records; the judgement reads srun.StepOutput.
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from provision import hostlist
from provision.certify.control.bisect import Bisection
from provision.certify.control.node_definition import Definition
from provision.certify.control.slurm_checks import parse_fields
from provision.certify.control.srun import STOPPED, Step, StepOutput
from provision.certify.probe.records import CheckResult

MEMORY_FRACTION = 0.9  # "most of its memory": what a user asking for the node would request
IMMEDIATE_S = 60  # how long the whole-node job waits for the nodes before they count as busy
WHOLE_NODE_TIMEOUT_S = IMMEDIATE_S + 60
MPI_TIMEOUT_S = 180
PMIX_TIMEOUT_BASE_S = 15  # SLURM_PMIX_TIMEOUT of an MPI step, plus PMIX_TIMEOUT_PER_NODE_S a node (module doc)
PMIX_TIMEOUT_PER_NODE_S = 0.1
MPI_MARK = "mpi "
_CONSEQUENCES = (": CANCELLED AT", ": Killed")  # srun's words for tasks ended because another task failed
_BUSY = ("Immediate execution impossible", "Unable to allocate resources: Resource temporarily unavailable",
         "Unable to allocate resources: Requested nodes are busy")


def whole_node_steps(nodes: Sequence[str], view: Mapping[str, Definition], job_name: str) -> list[Step]:
    """One step per set of nodes with equal CPUs and RealMemory (a job asks for one size)."""
    buckets: dict[tuple[int, int], list[str]] = defaultdict(list)
    for node in nodes:
        found = view.get(node)
        if found and found.cpus and found.memory_mb:
            buckets[(found.cpus, found.memory_mb)].append(node)
    report = "echo job_cpus=${SLURM_CPUS_ON_NODE:-}; echo job_cpus_per_task=${SLURM_CPUS_PER_TASK:-}"
    return [Step(tuple(names), f"sh -c '{report}'", job_name, WHOLE_NODE_TIMEOUT_S,
                 extra=("--exclusive", f"--cpus-per-task={cpus}", f"--mem={int(memory * MEMORY_FRACTION)}M",
                        f"--immediate={IMMEDIATE_S}"))
            for (cpus, memory), names in buckets.items()]


def whole_node_checks(step: Step, output: StepOutput) -> list[CheckResult]:
    """slurm.node_resources for each node of one whole-node step."""
    cpus = int(next(a for a in step.extra if a.startswith("--cpus-per-task=")).split("=")[1])
    memory = next(a for a in step.extra if a.startswith("--mem=")).split("=")[1]
    asked = f"--exclusive -c {cpus} --mem={memory}"
    missing = output.missing(step.nodes)
    refused = busy(output)
    out = []
    for node in step.nodes:
        base = dict(node=node, threshold=f"{cpus} CPUs", unit="CPUs", source=f"srun {asked}")
        if node in missing:
            verdict = "warn" if refused else "fail"
            why = (f"the node was not free within {IMMEDIATE_S} s (jobs hold it); not judged" if refused else
                   f"the job asking for the whole node did not run: {missing[node]}")
            out.append(CheckResult("slurm.node_resources", verdict, **base, detail=why))
            continue
        fields = parse_fields(output.texts[node])
        got = fields.get("job_cpus_per_task") or fields.get("job_cpus") or ""
        ok = got.isdigit() and int(got) == cpus
        out.append(CheckResult("slurm.node_resources", "pass" if ok else "fail", **base,
                               value=int(got) if got.isdigit() else None,
                               detail=f"ran with {asked}" if ok else
                               f"the task got {got or 'no'} CPUs of the {cpus} asked: check the node's definition"))
    return out


def mpi_step(nodes: Sequence[str], ranks_per_node: int, binary: str, job_name: str,
             env: tuple[tuple[str, str], ...] = (), extra: tuple[str, ...] = ()) -> Step:
    """The MPI check on every compute node, started by srun over PMIx; `env` names the reservation when the run has
    one (each node's run alone is submitted from the node itself, not from the controller).

    A rank that exits with an error ends the step at once: the other ranks would otherwise wait in MPI_Init for it
    until the timeout (three minutes for a node whose MPI library is missing). Who failed is then judged from each
    node's run alone."""
    pmix = (("SLURM_PMIX_TIMEOUT", str(pmix_timeout(len(nodes)))),)
    return Step(tuple(nodes), binary, job_name, MPI_TIMEOUT_S, ntasks_per_node=ranks_per_node, env=(*env, *pmix),
                extra=("--mpi=pmix", *extra), kill_on_bad_exit=True)


def pmix_timeout(nodes: int) -> int:
    """Seconds Slurm's PMIx plugin gives one exchange between the nodes of an MPI step of `nodes` nodes before it
    fails the step (module doc), kept well inside the step's own limit."""
    return min(PMIX_TIMEOUT_BASE_S + math.ceil(PMIX_TIMEOUT_PER_NODE_S * nodes), MPI_TIMEOUT_S // 2)


def busy(output: StepOutput) -> bool:
    """Whether a step with --immediate was refused because its nodes were busy."""
    return any(marker in line for line in output.general for marker in _BUSY)


@dataclass(frozen=True)
class Rank:
    """One rank's line: `mpi rank=R size=N host=H errors=E small_us=T large_ms=T bytes=B`."""

    rank: int
    size: int
    errors: int
    small_us: float
    large_ms: float
    bytes: int


_RANK_LINE = re.compile(r"^mpi rank=(\d+) size=(\d+) host=\S+ errors=(\d+) small_us=([\d.]+) large_ms=([\d.]+) "
                        r"bytes=(\d+)\s*$")


def parse_ranks(text: str) -> list[Rank]:
    """Every rank line in one node's output."""
    ranks = []
    for line in text.splitlines():
        match = _RANK_LINE.match(line.strip())
        if match:
            r, size, errors, small, large, size_b = match.groups()
            ranks.append(Rank(int(r), int(size), int(errors), float(small), float(large), int(size_b)))
    return ranks


def alone_step(step: Step, node: str) -> Step:
    """The same MPI check on one node only (to find where MPI cannot start)."""
    return replace(step, nodes=(node,))


def mpi_failed(step: Step, output: StepOutput) -> bool:
    """Whether the job across the nodes missed a rank or got a wrong sum."""
    ranks = [r for node in step.nodes for r in parse_ranks(output.texts.get(node, ""))]
    expected = len(step.nodes) * step.ntasks_per_node
    return len(ranks) != expected or any(r.errors or r.size != expected for r in ranks)


def started_alone(step: Step, alone: Mapping[str, StepOutput]) -> bool:
    """Whether every node of the step ran the MPI check correctly on its own."""
    return all(node in alone and not mpi_failed(alone_step(step, node), alone[node]) for node in step.nodes)


def failure_summary(step: Step, output: StepOutput, reasons: int = 3) -> str:
    """How a failed job across the nodes ended, in one line (srun's reasons, the first few; a task killed because
    another failed comes after the reasons that say why)."""
    found = [f"{n}: {r}" for n, r in output.errors.items()] + output.general
    found.sort(key=lambda reason: any(marker in reason for marker in _CONSEQUENCES))
    if output.timed_out:  # what srun says of its killed tasks would hide why: it did not finish
        found = [f"did not finish within {step.timeout_s} s", *(f for f in found if f != STOPPED)]
    return "; ".join(found[:reasons]) or "ranks missing or wrong"


def mpi_checks(step: Step, output: StepOutput, seconds: float, alone: Mapping[str, StepOutput] | None = None,
               first_failure: str | None = None) -> list[CheckResult]:
    """mpi.start per node and mpi.allreduce for the cluster from the MPI job across the nodes, with mpi.start
    judged from each node's run alone when there was one (after the job across the nodes failed).

    `first_failure`: the job was relaunched after failing that way; `output` is the relaunch, and a pass of it
    is a warning."""
    expected = len(step.nodes) * step.ntasks_per_node
    missing = output.missing(step.nodes)
    per_node, all_ranks = [], []
    for node in step.nodes:
        ranks = parse_ranks(output.texts.get(node, ""))
        all_ranks += ranks
        if alone is not None and node in alone:
            single = alone[node]
            per_node.append(_start_check(node, parse_ranks(single.texts.get(node, "")), step.ntasks_per_node,
                                         step.ntasks_per_node, single.missing([node]).get(node), "alone"))
        else:
            per_node.append(_start_check(node, ranks, step.ntasks_per_node, expected, missing.get(node)))
    started = [c.node for c in per_node if c.verdict == "pass"]
    cluster = _allreduce_check(step, all_ranks, expected, seconds, output, started if alone else None)
    if first_failure and cluster.verdict == "pass":
        cluster = replace(cluster, verdict="warn",
                          detail=f"the first launch failed ({first_failure}) and a later one passed: an intermittent "
                                 f"MPI start-up failure that users' jobs meet too; {cluster.detail}")
    return per_node + [cluster]


def _start_check(node: str, ranks: list[Rank], per_node: int, expected: int, why: str | None,
                 where: str = "in the job across the nodes") -> CheckResult:
    base = dict(node=node, threshold=f"{per_node} ranks, correct sums",
                source="srun --mpi=pmix mpi-check" + (" alone on the node" if where == "alone" else ""))
    if len(ranks) < per_node:
        reason = why or "no rank line from this node"
        return CheckResult("mpi.start", "fail", **base, value=len(ranks), detail=f"MPI did not start here: {reason}"
                           "; check the MPI library and Slurm's pmix plugin (`provision deploy --tags slurm,mpi`)")
    wrong = [r for r in ranks if r.errors or r.size != expected]
    if wrong:
        return CheckResult("mpi.start", "fail", **base, value=len(ranks),
                           detail=f"rank {wrong[0].rank}: {wrong[0].errors} wrong elements, world size "
                                  f"{wrong[0].size} of {expected}")
    return CheckResult("mpi.start", "pass", **base, value=len(ranks), unit="ranks")


def _allreduce_check(step: Step, ranks: list[Rank], expected: int, seconds: float, output: StepOutput,
                     started_alone: list[str] | None) -> CheckResult:
    base = dict(unit="s", source="srun --mpi=pmix mpi-check (allreduce of known values, every element checked)",
                threshold=f"{expected} ranks, 0 wrong elements")
    good = [r for r in ranks if not r.errors and r.size == expected]
    if len(good) != expected or len(ranks) != expected:
        reasons = [f"{n}: {r}" for n, r in output.errors.items()] + output.general
        alone = ""
        if started_alone is not None:
            broken = [n for n in step.nodes if n not in started_alone]
            alone = (f"; alone, MPI does not start on {', '.join(broken)}" if broken else
                     "; every node starts MPI alone: the fault is between the nodes (network, firewall, "
                     "MPI transport)")
        return CheckResult("mpi.allreduce", "fail", **base, value=round(seconds, 2),
                           detail=f"{len(good)} of {expected} ranks returned the right sums"
                                  + (f" ({'; '.join(reasons[:3])})" if reasons else "") + alone)
    rank0 = min(ranks, key=lambda r: r.rank)
    rate = rank0.bytes / (rank0.large_ms / 1e3) / 1e9 if rank0.large_ms else 0.0
    return CheckResult("mpi.allreduce", "pass", **base, value=round(seconds, 2),
                       detail=f"{expected} ranks on {len(step.nodes)} nodes in {seconds:.2f} s (srun wall time); "
                              f"{rank0.bytes // 2**20} MiB allreduce {rank0.large_ms:.1f} ms ({rate:.2f} GB/s "
                              f"algbw), 8-byte allreduce {rank0.small_us:.0f} us")


BISECT_SOURCE = "srun --mpi=pmix mpi-check on halves of the nodes and across them (bisection)"


def bisect_checks(found: Bisection, checks: Sequence[CheckResult]) -> list[CheckResult]:
    """`checks` (the MPI checks) with mpi.allreduce naming where bisection found the fault, then mpi.bisect, and
    mpi.pair on each node of a located pair."""
    verdict = located(found)
    amended = [replace(c, detail=f"{c.detail}; bisection: {verdict}") if c.check == "mpi.allreduce" else c
               for c in checks]
    pair = "<->".join(found.culprit) if found.localised else None  # the subject of a pair, as net.pairwise_bw's
    cluster = CheckResult("mpi.bisect", "fail", subject=pair, value=found.jobs,
                          unit="jobs", threshold="a job on every subset of the nodes passes", source=BISECT_SOURCE,
                          detail=f"{verdict}; {found.jobs} jobs on {len(found.path)} subsets: {path_text(found)}")
    if not found.localised:
        return [*amended, cluster]
    return [*amended, cluster, *(pair_check(node, found) for node in found.culprit)]


def located(found: Bisection) -> str:
    """Where the fault is, in one sentence."""
    if found.localised and len(found.culprit) == 2:
        a, b = found.culprit
        return (f"the fault is between {a} and {b}: a job on the two of them alone fails while each starts MPI alone "
                f"and every job of the search that held only one of them passed")
    return (f"not localised to a pair: the smallest set of nodes whose job fails is "
            f"{hostlist.compress(found.culprit)} (a fault that needs more nodes, or one that comes and goes)")


def pair_check(node: str, found: Bisection) -> CheckResult:
    """mpi.pair on one node of the located pair, naming its peer."""
    peer = next(n for n in found.culprit if n != node)
    return CheckResult("mpi.pair", "fail", node=node, subject=f"{node}<->{peer}", unit=None,
                       threshold="a job with every other node passes", source=BISECT_SOURCE,
                       detail=f"MPI fails between this node and {peer} (a job on the two of them alone fails; each "
                              f"starts alone): check the network between them (routes, firewall, MTU); mpi.bisect "
                              f"lists the jobs that found it")


def path_text(found: Bisection) -> str:
    """The jobs bisection ran, in order: `1. half compute[01-04]: pass; 2. ...` (a subset that failed ran twice)."""
    return "; ".join(f"{i}. {t.purpose} {hostlist.compress(t.nodes)}: {t.outcome}"
                     for i, t in enumerate(found.path, 1))
