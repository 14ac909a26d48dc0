"""The user-shaped parts of a certification run, in the order the runner calls them: the controller's view
of the nodes against their hardware, the whole-node jobs, the MPI job, and configuration consistency."""
from __future__ import annotations

from dataclasses import replace

from provision.certify.control import as_user, bisect, consistency, enforcement, node_definition, srun, user_jobs
from provision.certify.control.fleet import Fleet
from provision.certify.control.session import MPI_CHECK, Session, step
from provision.certify.control.slurm_checks import parse_fields

RANKS_PER_NODE = 2  # two ranks a node (when every node has 2 CPUs) also exercise the on-node transport
# Launches across the nodes after a failed one when every node starts MPI alone: Open MPI's start-up race
# (README, "Known issue"; the mpi role's settings avoid it) or any failure that does not repeat; a fail is then
# three failed launches in a row, the fault still there each time we look.
MPI_RELAUNCHES = 2
BISECT_FROM = 3  # nodes: a job across two that fails while each starts alone already names its pair


def read_view(run: Session, fleet: Fleet) -> None:
    """The controller's node definitions (scontrol show node), for the checks below."""
    outcome = fleet.run(run.controller, node_definition.CONTROLLER_COMMAND, 30)
    run.view = node_definition.parse_controller(outcome.stdout) if outcome.ok else {}


def definitions(run: Session, fleet: Fleet, answered: list[str]) -> None:
    """slurm.node_definition on every compute node whose pre-check came back (the controller must answer)."""
    if not fleet.reachable(run.controller):
        return
    for node in run.compute:
        text = run.precheck.get(node.name)
        if text is None:
            continue
        probe = run.probes.get(node.name) if node.name in answered else None
        found, where = node_definition.gpus_found(probe, parse_fields(text).get("gpu_device_files"))
        run.checks.append(node_definition.judge(node.name, run.view.get(node.name), node_definition.parse_node(text),
                                                found, where))


def user_job(run: Session, fleet: Fleet, answered: list[str]) -> list[str]:
    """slurm.user_job on every node that took the probe, as certify's user; returns where it passed (every node
    that took the probe when the spec names no user: the checks then run as root)."""
    if not run.user or not answered:
        return answered
    one = as_user.step(answered, run.user, run.job("user"), reservation_env(run))
    run.progress(f"a job of {run.user} on {len(answered)} nodes: uid, home and /tmp")
    output, _, _ = step(run, fleet, one)
    found = as_user.checks(one, output)
    run.checks += found
    return as_user.passed(found)


def whole_nodes(run: Session, fleet: Fleet, answered: list[str]) -> None:
    """slurm.node_resources: each node asked for whole, as users size their jobs."""
    for one in map(run.as_user, user_jobs.whole_node_steps(answered, run.view, run.job("whole-node"))):
        run.progress(f"whole-node job on {len(one.nodes)} nodes ({one.extra[1]}, {one.extra[2]})")
        output, _, _ = step(run, fleet, one)
        run.checks += user_jobs.whole_node_checks(one, output)


def enforcement_checks(run: Session, fleet: Fleet, usable: list[str]) -> None:
    """slurm.enforce_memory and slurm.enforce_procs where Slurm confines jobs (n/a, saying why, where it does not)."""
    if not usable:
        return
    read = fleet.run(run.controller, enforcement.CONFIG_COMMAND, 30)
    if not read.ok:
        run.checks += enforcement.unknown(usable, read.error or read.stderr.strip()[-200:] or f"exit {read.rc}")
        return
    config = enforcement.parse_config(read.stdout)
    if not config.confined:
        run.checks += enforcement.not_applicable(usable, config)
        return
    run.progress(f"enforcement: a job over its --mem and a process that leaves its job, on {len(usable)} nodes")
    memory = run.as_user(enforcement.memory_step(usable, run.job("enforce-mem")))
    output, _, _ = step(run, fleet, memory)
    run.checks += enforcement.memory_checks(memory, output, config)
    leave = run.as_user(enforcement.leave_step(usable, run.job("enforce-procs")))
    output, _, _ = step(run, fleet, leave)
    pids = enforcement.left_pids(leave, output)
    answers = fleet.run_many({node: enforcement.survivor_command(pid) for node, pid in pids.items()}, timeout=30)
    run.checks += enforcement.procs_checks(leave, pids, {n: o.stdout for n, o in answers.items()})


def mpi(run: Session, fleet: Fleet, answered: list[str]) -> None:
    """mpi.start and mpi.allreduce: one MPI job across every compute node that took the probe; when it keeps failing
    while every node starts alone, mpi.bisect and mpi.pair: bisection names the pair at fault."""
    if not answered:
        return
    cpus = [run.view[n].cpus for n in answered if n in run.view and run.view[n].cpus]
    per_node = RANKS_PER_NODE if cpus and min(cpus) >= RANKS_PER_NODE else 1
    one = run.as_user(user_jobs.mpi_step(answered, per_node, MPI_CHECK, run.job("mpi"), reservation_env(run)))
    run.progress(f"MPI job: {len(answered) * per_node} ranks on {len(answered)} nodes (srun --mpi=pmix)")
    output, _, seconds = step(run, fleet, one)
    alone, first_failure, between = None, None, False
    if user_jobs.mpi_failed(one, output):
        run.progress("MPI job failed: running it on each node alone to find where MPI cannot start")
        alone = _each_alone(run, fleet, one)
        if user_jobs.started_alone(one, alone):
            first_failure = user_jobs.failure_summary(one, output)
            output, seconds, between = _relaunch(run, fleet, one, output, seconds)
    checks = user_jobs.mpi_checks(one, output, seconds, alone, first_failure)
    if between and len(one.nodes) >= BISECT_FROM:
        checks = user_jobs.bisect_checks(_bisect(run, fleet, one), checks)
    run.checks += checks


def _relaunch(run: Session, fleet: Fleet, one: srun.Step, output: srun.StepOutput,
              seconds: float) -> tuple[srun.StepOutput, float, bool]:
    """Launch the job across the nodes again, up to MPI_RELAUNCHES times, until one passes; the last launch's output
    and time, and whether every launch failed."""
    for attempt in range(1, MPI_RELAUNCHES + 1):
        run.progress(f"every node starts MPI alone: launching the job across the nodes again ({attempt} of "
                     f"{MPI_RELAUNCHES})")
        output, _, seconds = step(run, fleet, one)
        if not user_jobs.mpi_failed(one, output):
            return output, seconds, False
    return output, seconds, True


def _bisect(run: Session, fleet: Fleet, one: srun.Step) -> bisect.Bisection:
    """Bisection with the MPI job itself on subsets of the nodes (the two halves of a split at once)."""
    run.progress(f"every node starts MPI alone and the job across {len(one.nodes)} nodes keeps failing: bisecting "
                 "to find the pair at fault")

    def launch(nodes: tuple[str, ...]) -> str | None:
        subset = replace(one, nodes=nodes, job_name=run.job("mpi-bisect"))
        output, _, _ = step(run, fleet, subset)
        failed = user_jobs.mpi_failed(subset, output)
        run.progress(f"bisection: MPI job on {', '.join(nodes)}: {'fail' if failed else 'pass'}")
        return user_jobs.failure_summary(subset, output, reasons=1) if failed else None

    found = bisect.bisect(one.nodes, launch, concurrent=True)
    run.progress(f"bisection: {user_jobs.located(found)} ({found.jobs} jobs)")
    return found


def reservation_env(run: Session) -> tuple[tuple[str, str], ...]:
    """SLURM_RESERVATION for MPI steps: each node's run alone is submitted from the node, not the controller (whose
    commands have it), and a node held in the reservation takes no job outside it."""
    reservation = run.options.reservation
    return (("SLURM_RESERVATION", reservation),) if reservation else ()


def _each_alone(run: Session, fleet: Fleet, one: srun.Step) -> dict[str, srun.StepOutput]:
    """The MPI check on each node by itself, all at once (each node submits its own one-node job)."""
    singles = {node: user_jobs.alone_step(one, node) for node in one.nodes if fleet.reachable(node)}
    outcomes = fleet.run_many({node: s.shell() for node, s in singles.items()},
                              timeout=one.timeout_s + srun.KILL_AFTER_S + 15)
    return {node: srun.parse(o.rc, o.stdout, o.stderr) for node, o in outcomes.items()}


def configuration(run: Session) -> None:
    """config.files and config.packages on every node that answered the pre-check; a partial run's peers are part of
    their group's reference for config.packages, and get no check themselves."""
    configs = {name: consistency.parse(text) for name, text in run.precheck.items()}
    if not configs:
        return
    groups = {n.name: n.group for n in [*run.cluster.nodes, *run.peers]}
    run.checks += consistency.file_checks(configs, run.controller)
    peers = {name: found for name, text in run.peer_precheck.items()  # a reference, not judged
             if (found := consistency.parse(text)).packages}
    run.checks += [c for c in consistency.package_checks({**peers, **configs}, groups) if c.node in configs]
