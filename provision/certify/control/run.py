"""Certify a running cluster: every check, from the control node, over SSH to the nodes and through Slurm.

Order of one run (quick on 4 sandbox nodes: about 15 s):
1. SSH to every node at once (node.reachable); the controller makes a munge credential.
2. Per node, one SSH command: write the node's expectation, report slurmd, decode the credential
   (munge.credential, slurm.slurmd), the digests of the cluster-wide files and the stack's package versions
   (config.files against the controller, config.packages within the group) and, on compute nodes, what
   `slurmd -C` reads from the hardware; on the controller: scontrol ping, sinfo (slurm.controller,
   slurm.node_state) and `scontrol show node` (slurm.node_definition: the controller's view against the node's).
3. ONE srun across every compute node that can take a step runs the probe (one task per node), then a
   second one the filesystem cross-check; a node left out or whose task failed gets slurm.srun failed
   with the reason (srun's error line, or why it was left out). Between them, the nodes whose GPU benchmark
   figures fail run the benchmarks again (control/bench_again.py; none on a cluster without GPUs).
4. Jobs shaped like users': each node asked for whole (--exclusive, every CPU, most of the memory:
   slurm.node_resources), then one MPI job across every compute node through `srun --mpi=pmix` whose
   allreduces are verified (mpi.start per node, mpi.allreduce with its time); when it keeps failing while every
   node starts alone, bisection on halves of the nodes names the pair at fault (mpi.bisect, mpi.pair).
5. sbatch across the same nodes (slurm.sbatch, waited for in sacct) while the pairwise network matrix
   runs (net.pairwise_bw, net.node_bw: one srun step per round between compute nodes, control/iperf3_rounds.py; an
   iperf3 daemon over SSH on the controller and any node that takes no step); GPU gres jobs (all of a node's GPUs,
   then one) and, at standard and full, nccl-tests.
6. Clean up (iperf3 daemons by PID, scratch folders), assemble, write the reports, optionally drain.

The controller-only node is no Slurm compute node: the probe (GPU, filesystem) and slurm.slurmd do
not apply to it; it takes part in node.reachable, munge.credential (as the reference), config.files (as the
reference), slurm.controller and the network matrix.

A partial run (`CertifyOptions.nodes`: a grow, `certify --release`, a rolling batch) judges the controller and those
nodes only, and measures them against up to MAX_PEERS compute nodes in service (control/peers.py): the network
matrix and the package comparison take the peers in, the MPI job spans them (control/peer_mpi.py), and each certified
node is judged by its pairs in aggregate (judging/partial.py). The report's scope names the nodes and the peers.
"""
from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime

from provision.certify import bundle
from provision.certify.control import (bench_again, consistency, gpu_jobs, network, node_definition, peer_mpi, peers,
                                       schedule, slurm_checks, srun, user_steps)
from provision.certify.control.drain import drain
from provision.certify.control.fleet import Fleet
from provision.certify.control.session import GPUBENCH, PREFIX, PROBE, Session, expectation_for, now_iso, step
from provision.certify.judging.assemble import assemble, parse_probe_output
from provision.certify.probe.document import ProbeDocument
from provision.certify.probe.expect import LEVELS
from provision.certify.probe.records import CheckResult
from provision.certify.records import ClusterReport, RunScope
from provision.certify.report import ReportPaths, write_to_state
from provision.certify.report.metrics import publish as publish_metrics
from provision.cluster.lock import cluster_lock
from provision.errors import CertifyError, UsageError
from provision.records import ClusterInfo, NodeInfo, Progress, silent
from provision.spec import digest
from provision.spec.model import ClusterSpec
from provision.state import ClusterState

FS_SIZE_MIB = {"quick": 16, "standard": 256, "full": 1024}
PROBE_TIMEOUT_S = {"quick": 120, "standard": 1800, "full": 3 * 3600}
VERIFY_TIMEOUT_S = 300
SACCT_WAIT_S = 60.0
SANDBOX_BITRATE = "1G"  # sandbox links are veth pairs: their raw speed is the host's CPU, not a link


@dataclass(frozen=True)
class CertifyOptions:
    """How deep to go and what to do with failed nodes."""

    level: str = "quick"
    drain_failed: bool = False
    iperf3_bitrate: str | None = None  # pace iperf3 (e.g. "1G"); None: full speed, or SANDBOX_BITRATE on the sandbox
    iperf3_seconds: int = network.IPERF3_SECONDS
    nccl_tests: str = gpu_jobs.NCCL_TESTS_BIN
    reservation: str | None = None  # run every Slurm job inside this reservation (nodes held until certified)
    nodes: tuple[str, ...] = ()  # certify only these compute nodes (a partial run), measured against peers in service
    max_peers: int = peers.MAX_PEERS  # how many peers a partial run measures against, at most
    network_seed: int | None = None  # draw the sampled network pairs of a past run again (its report's seed)

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise UsageError(f"--level: '{self.level}' is not a level", hint=f"use one of {', '.join(LEVELS)}")


@dataclass
class CertifyRun:
    """A finished certification: the report, where it was written, which nodes were drained."""

    report: ClusterReport
    paths: ReportPaths | None = None
    drained: dict[str, str] = field(default_factory=dict)  # node -> drain reason
    drain_errors: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what went wrong beside the verdict (its metrics not written)

    @property
    def ok(self) -> bool:
        """No check failed."""
        return self.report.verdict != "fail"

    @property
    def failed_nodes(self) -> list[str]:
        """Nodes with a failed check, in node order."""
        return [n.name for n in self.report.nodes if n.verdict == "fail"]

    @property
    def seconds(self) -> float:
        """Wall time from the report's timestamps."""
        return (datetime.fromisoformat(self.report.finished_at)
                - datetime.fromisoformat(self.report.started_at)).total_seconds()


def certify(spec: ClusterSpec, cluster: ClusterInfo, options: CertifyOptions = CertifyOptions(),
            progress: Progress = silent) -> CertifyRun:
    """Run every check, write report.json/.xml/.html under the state's reports folder, drain if asked."""
    if not cluster.nodes or all(n.state in ("planned", "absent") for n in cluster.nodes):
        raise CertifyError(f"cluster {cluster.name} has no running nodes", hint="bring it up first: provision up SPEC")
    state = ClusterState.for_spec(spec)
    draining = cluster_lock(state, "certify --drain-failed", progress) if options.drain_failed else nullcontext()
    with draining:  # draining changes the cluster: one such command at a time (provision.cluster.lock)
        report = collect(spec, cluster, options, progress)
        run = CertifyRun(report, write_to_state(report, state))
        if options.drain_failed:
            run.drained, run.drain_errors = drain(cluster, report, progress)
    note = publish_metrics(spec, cluster, state, report)  # a note at worst: the verdict stays
    if note:
        run.notes.append(note)
    return run


def collect(spec: ClusterSpec, cluster: ClusterInfo, options: CertifyOptions,
            progress: Progress = silent) -> ClusterReport:
    """Measure everything and assemble the report (nothing written). With `options.nodes`, a partial run: the
    controller and those nodes are judged, measured against a few peers in service (certify.control.peers)."""
    judged = certified(cluster, options.nodes)
    run = Session(spec, judged, options, progress)
    started = now_iso()
    with Fleet(cluster, slurm_reservation=options.reservation) as fleet:
        progress(f"certify {options.level}: connecting to {len(judged.nodes)} nodes")
        unreachable = fleet.connect(judged.nodes)
        run.checks += [slurm_checks.reachable_check(n.name, unreachable.get(n.name)) for n in judged.nodes]
        try:
            if options.nodes and fleet.reachable(run.controller):
                peers.join(run, fleet, cluster, options.max_peers)
            elif options.nodes:
                run.scope = RunScope("partial", tuple(options.nodes), (), "no peer: the controller is unreachable")
            eligible = _prechecks(run, fleet)
            answered = _probe(run, fleet, eligible)
            bench_again.measure_again(run, fleet, answered)  # a failed GPU benchmark figure is measured again
            user_steps.definitions(run, fleet, answered)
            _fs_verify(run, fleet, answered)
            usable = user_steps.user_job(run, fleet, answered)  # where certify's user runs: the user-shaped steps
            user_steps.whole_nodes(run, fleet, usable)
            user_steps.enforcement_checks(run, fleet, usable)
            (peer_mpi.mpi if run.scope.partial else user_steps.mpi)(run, fleet, usable)
            _sbatch_and_network(run, fleet, usable)
            _gpu_jobs(run, fleet, usable)
        finally:
            _cleanup(run, fleet)
    return assemble(cluster=cluster.name, level=options.level, nodes=judged.nodes, probes=run.probes,
                    started_at=started, finished_at=now_iso(), fs_verify=run.fs_verify, nccl=run.nccl,
                    pairs=run.pairs, extra_checks=run.checks, probed=[n.name for n in run.compute],
                    spec_digest=digest.of_spec(spec), scope=run.scope, again=run.again,
                    sampling=run.sampling)


def certified(cluster: ClusterInfo, nodes: tuple[str, ...]) -> ClusterInfo:
    """The nodes a run judges: every node, or (a partial run) the controller and the named compute nodes."""
    if not nodes:
        return cluster
    unknown = sorted(set(nodes) - {n.name for n in cluster.with_role("compute")})
    if unknown:
        raise UsageError(f"cannot certify {', '.join(unknown)}: not a compute node of cluster {cluster.name}",
                         hint="name compute nodes the spec has")
    return cluster.model_copy(update={"nodes": tuple(n for n in cluster.nodes
                                                     if n.name in nodes or n.has_role("controller"))})


def _expectation(run: Session, node: NodeInfo) -> str:
    expect = expectation_for(node, run.spec, run_id=run.run_id, fs_size_mib=FS_SIZE_MIB[run.options.level])
    return json.dumps(expect.to_dict(), separators=(",", ":"))


def _prechecks(run: Session, fleet: Fleet) -> list[str]:
    """Munge, slurmd and node states; returns the compute nodes a step can be placed on."""
    ctl = run.controller
    made = fleet.run(ctl, "munge -n", 15)
    credential = made.stdout.strip() if made.ok and made.stdout.startswith("MUNGE:") else None
    reachable = [n for n in run.cluster.nodes if fleet.reachable(n.name)]
    digest_file = f"{PREFIX}/probe/{bundle.DIGEST_FILE}"
    outcomes = fleet.run_many({n.name: slurm_checks.precheck_command(run.run_id, _expectation(run, n), credential,
                                                                     n.has_role("compute"), digest_file)
                               + "\n" + consistency.command()
                               + ("\n" + node_definition.NODE_COMMAND if n.has_role("compute") else "")
                               for n in reachable}, timeout=30)
    run.precheck = {name: o.stdout for name, o in outcomes.items() if o.rc is not None}
    fields = {name: slurm_checks.parse_fields(text) for name, text in run.precheck.items()}
    user_steps.configuration(run)
    user_steps.read_view(run, fleet)
    state = fleet.run(ctl, slurm_checks.state_command(), 30)
    ping, states = slurm_checks.parse_states(state.stdout) if state.rc is not None else ("", {})
    if fleet.reachable(ctl):
        run.checks.append(slurm_checks.controller_check(ctl, ping, state.error or state.stderr.strip()))
        run.checks += slurm_checks.munge_checks(credential, ctl, made.error or made.stderr.strip(), fields)
    eligible = []
    expected = bundle.digest()
    for node in run.compute:
        reasons = _blockers(run, fleet, node.name, fields, states, expected, outcomes)
        if reasons:
            run.probes[node.name] = ProbeDocument.failed("not run: " + "; ".join(reasons), node.name)
        else:
            eligible.append(node.name)
    return eligible


def _blockers(run: Session, fleet: Fleet, node: str, fields: dict[str, dict[str, str]],
              states: dict[str, tuple[str, str]], expected_digest: str, outcomes: dict) -> list[str]:
    """Record the node's slurmd, probe and Slurm-state checks; return why no step can run on it (empty: it can)."""
    ctl = run.controller
    reasons = []
    if not fleet.reachable(node):
        reasons.append(f"node unreachable ({fleet.unreachable.get(node)})")
    elif node in fields:
        slurmd = slurm_checks.slurmd_check(node, fields[node])
        probe = slurm_checks.probe_check(node, fields[node], expected_digest)
        run.checks += [slurmd, probe]
        if slurmd.verdict == "fail":
            reasons.append("slurmd is not running")
        if probe.verdict == "fail":
            reasons.append("the probe is missing or out of date")
    else:
        reasons.append(f"the node stopped answering ({outcomes[node].error})")
    if fleet.reachable(ctl):
        held = run.options.reservation is not None
        run.checks.append(slurm_checks.node_state_check(node, states.get(node), held=held))
        if not slurm_checks.runnable(states.get(node), held=held):
            reasons.append(f"Slurm lists it as {(states.get(node) or ('unknown',))[0]}")
    else:
        reasons.append(f"the controller {ctl} is unreachable")
    munge = next((c for c in run.checks if c.check == "munge.credential" and c.node == node), None)
    if munge is not None and munge.verdict == "fail":
        reasons.append("its munge key does not match the controller's")
    return reasons


def _probe(run: Session, fleet: Fleet, eligible: list[str]) -> list[str]:
    """The probe on every eligible node in one srun; returns the nodes whose document came back."""
    level = run.options.level
    compute = [n.name for n in run.compute]
    if not eligible:
        run.checks.append(slurm_checks.srun_all_check(compute, [], None))
        return []
    run.progress(f"probe ({level}) on {len(eligible)} nodes in one srun")
    command = (f"{PROBE} --level {level} --expect-json @{slurm_checks.expect_path(run.run_id)} "
               f"--gpubench {GPUBENCH}")
    output, _, seconds = step(run, fleet, srun.Step(tuple(eligible), command, run.job("probe"),
                                                     PROBE_TIMEOUT_S[level]))
    missing = output.missing(eligible)
    answered = []
    for node in eligible:
        if node in missing:
            run.probes[node] = ProbeDocument.failed(f"srun task failed: {missing[node]}", node)
            continue
        try:
            run.probes[node] = parse_probe_output(output.texts[node], node)
            answered.append(node)
        except CertifyError as exc:
            run.probes[node] = ProbeDocument.failed(str(exc), node)
    run.checks.append(slurm_checks.srun_all_check(compute, answered, seconds))
    return answered


def _fs_verify(run: Session, fleet: Fleet, answered: list[str]) -> None:
    """Second srun: every node reads every node's file of this run."""
    if run.spec.filesystem.type == "none" or not answered:
        return
    command = f"{PROBE} --fs-verify --expect-json @{slurm_checks.expect_path(run.run_id)}"
    output, _, _ = step(run, fleet, srun.Step(tuple(answered), command, run.job("fsverify"), VERIFY_TIMEOUT_S))
    run.fs_verify = {}
    for node in answered:
        try:
            run.fs_verify[node] = parse_probe_output(output.texts.get(node, ""), node)
        except CertifyError:
            continue  # assemble reports "no verification document" on that node


def _sbatch_and_network(run: Session, fleet: Fleet, answered: list[str]) -> None:
    """Submit the accounting job, measure the matrix while it runs, then wait for sacct."""
    result: dict[str, CheckResult] = {}
    waiter = None
    if answered:
        waiter = threading.Thread(target=lambda: result.update(check=_sbatch(run, fleet, answered)), daemon=True)
        waiter.start()
    else:
        result["check"] = slurm_checks.sbatch_check(None, None, "no compute node could take a job")
    _network(run, fleet, answered)
    if waiter is not None:
        waiter.join(SACCT_WAIT_S + 30)
    run.checks.append(result.get("check") or slurm_checks.sbatch_check(None, None, "the sbatch check did not finish"))


def _sbatch(run: Session, fleet: Fleet, nodes: list[str]) -> CheckResult:
    started = time.monotonic()
    submitted = fleet.run(run.controller, slurm_checks.sbatch_command(nodes, run.job("sbatch"), run.user), 30)
    job = submitted.stdout.strip().split(";")[0]
    if not submitted.ok or not job.isdigit():
        return slurm_checks.sbatch_check(None, None, submitted.error or submitted.stderr.strip())
    accounting = run.spec.software.slurm.accounting
    accounted = slurm_checks.Accounted(None, None)
    while time.monotonic() - started < SACCT_WAIT_S:
        polled = fleet.run(run.controller, slurm_checks.job_state_command(job, accounting), 15)
        accounted = slurm_checks.parse_job_state(polled.stdout, accounting)
        if accounted.done:
            break
        time.sleep(0.5)
    if not accounted.done:
        fleet.run(run.controller, f"scancel {job}", 15)
    return slurm_checks.sbatch_check(job, accounted, seconds=time.monotonic() - started, accounting=accounting)


def _network(run: Session, fleet: Fleet, usable: list[str]) -> None:
    """Pairwise matrix over every reachable node (and a partial run's peers): ib_write_bw where all compute nodes
    have RDMA, else iperf3, whose pairs between `usable` compute nodes run as one srun step per round."""
    reachable = [n for n in [*run.cluster.nodes, *run.peers] if fleet.reachable(n.name)]
    compute = [n.name for n in run.compute if n.name in run.probes and run.probes[n.name].mode == "probe"]
    rdma, device = network.rdma_device(run.probes, compute)
    if rdma and len(compute) + len(run.peers) >= 2:
        addresses = {n.name: n.address or n.name for n in [*run.compute, *run.peers]
                     if n.name in compute or n in run.peers}
        plan = _plan(run, addresses, "ib_write_bw")
        run.pairs = network.measure_rdma(fleet, addresses, network.IbWriteBw(port=18515, device=device), plan)
        return
    if len(reachable) < 2:
        return
    addresses = {n.name: n.address or n.name for n in reachable}
    bitrate = run.options.iperf3_bitrate or (SANDBOX_BITRATE if run.cluster.sandbox else None)
    tool = network.Iperf3(port=random.randint(20000, 29999), seconds=run.options.iperf3_seconds, bitrate=bitrate)
    # asked again: a node drained since the pre-checks (a hung MPI task: "Kill task failed") would hold every round
    state = fleet.run(run.controller, slurm_checks.state_command(), 30)
    now = slurm_checks.runnable_nodes(usable, state.stdout if state.rc is not None else None,
                                      held=run.options.reservation is not None)
    slurm = network.SlurmRounds(frozenset(now) & set(addresses), lambda one: step(run, fleet, one)[0], run.job("net"))
    run.pairs = network.measure_iperf3(fleet, addresses, run.run_id, tool, _plan(run, addresses, "iperf3"), slurm)


def _plan(run: Session, addresses: Mapping[str, str], tool: str) -> schedule.Schedule:
    """The pairs the matrix measures at this level (control.schedule), recorded for the report."""
    plan = schedule.plan(list(addresses), run.options.level, run.options.network_seed)
    run.sampling = plan.record()
    seed = f", seed {plan.seed}" if plan.seed is not None else ""
    run.progress(f"{tool} matrix over {len(addresses)} nodes: {plan.kind}, {len(plan.rounds)} rounds{seed}")
    return plan


def _gpu_jobs(run: Session, fleet: Fleet, answered: list[str]) -> None:
    """gres check on GPU nodes (every level) and nccl-tests (standard, full); n/a lines otherwise."""
    level = run.options.level
    gpu_nodes = [n for n in run.compute if n.gpu_count and n.name in answered]
    has_gpus = any(n.gpu_count for n in run.compute)
    run.checks += gpu_jobs.not_applicable(level, has_gpus)
    if not gpu_nodes:
        return
    names = [n.name for n in gpu_nodes]
    for one in map(run.as_user, gpu_jobs.gres_steps(gpu_nodes, run.job("gres"))):
        output, _, _ = step(run, fleet, one)
        run.checks += gpu_jobs.gres_checks(one, output)
    single = run.as_user(gpu_jobs.gres_single_step(names, run.job("gres-single")))
    output, _, _ = step(run, fleet, single)
    run.checks += gpu_jobs.gres_checks(single, output, "slurm.gres_single")
    if level == "quick":
        return
    run.progress(f"nccl-tests all_reduce_perf on {len(names)} nodes")
    for one in map(run.as_user, gpu_jobs.node_nccl_steps(gpu_nodes, level, run.job("nccl-node"),
                                                          run.options.nccl_tests)):
        output, _, _ = step(run, fleet, one)
        run.nccl += gpu_jobs.node_nccl_jobs(output, list(one.nodes))
    gpus = min(n.gpu_count for n in gpu_nodes)  # one rank per GPU: every node takes the same number of ranks
    if len(names) >= 2:
        output, outcome, _ = step(run, fleet, run.as_user(gpu_jobs.cluster_nccl_step(
            names, gpus, level, run.job("nccl-all"), run.options.nccl_tests)))
        run.nccl.append(gpu_jobs.cluster_nccl_job(outcome.rc, outcome.stdout, output, names))


def _cleanup(run: Session, fleet: Fleet) -> None:
    """Remove this run's scratch folders on every node and its files on the shared filesystem."""
    writer = next((n for n, d in run.probes.items() if d.mode == "probe" and (d.fs or {}).get("path")), None)
    commands = {n: f"rm -rf {slurm_checks.run_dir(run.run_id)}" for n in fleet.clients}
    if writer and run.spec.filesystem.type != "none":
        folder = f"{run.spec.filesystem.mount_point}/.provision-certify/{run.run_id}"
        commands[writer] += f"; rm -rf {folder}"
    fleet.run_many(commands, timeout=60)
