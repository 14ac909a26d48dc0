"""The cluster lifecycle as library calls: plan, up (resumable stages), preflight, deploy, certify, status, down.

Everything the CLI does goes through here, and a Python session can do the same without it:

    from pathlib import Path

    from provision.cluster import lifecycle
    from provision.spec.loader import load_spec

    spec = load_spec(Path("cluster.yaml"))
    result = lifecycle.up(spec)                           # UpResult: the cluster and each stage's record
    run = lifecycle.certify(spec)                         # CertifyRun: the report and where it was written
    teardown = lifecycle.down(spec)                       # Teardown: what was removed, what is left

`up` runs STAGES in order; each is a library call that returns a typed record. A caller watches through one
`UpView` (status lines, live deploy progress, each record as its stage ends); a failed stage raises after its
record was shown, and the next `up` resumes there.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from provision import hostlist, inventory, monitoring
from provision.certify.control.run import CertifyOptions, CertifyRun, certify as run_certify
from provision.cluster import binding, change, clusters, converge, rolling
from provision.cluster.lock import cluster_lock
from provision.deploy import engine
from provision.deploy.events import OnUpdate, PlayProgress
from provision.deploy.records import DeployResult
from provision.errors import CertifyError, DeployError, PreflightError, ProvisionError, UsageError
from provision.limits import clip
from provision.node import hardware
from provision.preflight import DEFAULT_CONCURRENCY, run_preflight
from provision.preflight.records import PreflightReport
from provision.providers import registry
from provision.providers.base import Plan, Provider, Teardown
from provision.records import ClusterInfo, NodeInfo, Progress, silent
from provision.remote.commands import CommandResult, pick_node, run_on
from provision.settings import applied, planned as planned_settings
from provision.slurm import admin
from provision.spec.model import ClusterSpec
from provision.spec.topology import planned_nodes
from provision.state import ClusterState
from provision.status.gather import gather as gather_status
from provision.status.people import PeopleView, read as read_people
from provision.status.records import ClusterStatus

STAGES = ("nodes", "preflight", "inventory", "deploy", "certify")  # the order `up` runs them in
ALWAYS = ("nodes", "inventory")  # run on every `up`: creating is idempotent, the inventory follows the nodes


def provider_names() -> tuple[str, ...]:
    """The providers a spec may name (provider.type)."""
    return registry.names()


def get_provider(spec: ClusterSpec) -> Provider:
    """The spec's provider, bound to the cluster's state directory."""
    return registry.implementation(spec.provider.type)(spec, ClusterState.for_spec(spec))


def planned_cluster(spec: ClusterSpec) -> ClusterInfo:
    """The cluster as the spec describes it, on what its provider chose and recorded (a sandbox's subnet), with no
    live check."""
    return get_provider(spec).planned()


def current_cluster(spec: ClusterSpec) -> ClusterInfo:
    """The live cluster if it was created, else the planned one."""
    provider = get_provider(spec)
    return provider.describe() if provider.state.exists() else planned_cluster(spec)


def plan(spec: ClusterSpec) -> Plan:
    """What `up` would create; no side effects."""
    return get_provider(spec).plan()


def plan_change(spec: ClusterSpec) -> change.ChangePlan:
    """What `up` would change on the running cluster: nodes to add, remove or change, the settings that change on
    each node (and what that restarts), the unified diff of the cluster-wide files, and on priced providers the hourly
    cost before and after; no side effects."""
    provider = get_provider(spec)
    old = change.load_applied(provider.state)
    recorded = applied.load(provider.state) if old is not None else None
    planned = planned_settings.planned_cluster(provider.planned(), old, recorded)
    nodes = change.diff_nodes(old, list(planned.nodes))
    result = change.ChangePlan(running=old is not None, hourly_after=provider.hourly_cost(list(planned.nodes)))
    if old is not None:
        compared = planned_settings.compare(spec, planned, recorded)
        result.settings = compared.changes
        result.settings_recorded = recorded is not None or provider.state.stage_nodes("deploy") is None
        nodes = change.with_settings(nodes, compared.changes)
        before = planned.model_copy(update={"nodes": tuple(old)})
        result.files = change.diff_files(before, planned, hardware.load(provider.state),
                                         (recorded or compared.now).common, compared.now.common)
        result.hourly_before = provider.hourly_cost(old)
    result.nodes = change.unfinished(nodes, provider.state.stage_nodes("deploy"),
                                     converge.held(provider.state, planned))
    return result


def status(spec: ClusterSpec) -> ClusterStatus:
    """The cluster now, per node, and the alerts Prometheus has active (provision.status)."""
    return gather_status(cluster := current_cluster(spec), ClusterState.for_spec(spec).reports_dir,
                         spec.health.enabled, monitoring.prometheus_url(spec, cluster))


def people(spec: ClusterSpec) -> PeopleView:
    """Who has access as the running cluster has it: each person's account and its source, state, Slurm accounts and
    QoS; the spec's people first, users then accounting.users (provision.status.people)."""
    certify = spec.certify.user.name if spec.certify.user else None
    return read_people(current_cluster(spec), spec.people_names(), certify)


def write_inventory(spec: ClusterSpec, out_dir: Path) -> list[Path]:
    """Render the Ansible inventory of the cluster as it is now into a directory; the files written."""
    return inventory.write(spec, current_cluster(spec), out_dir)


def run_command(spec: ClusterSpec, node: str | None, command: str) -> CommandResult:
    """Run a command on a node (default: the controller) over SSH with the cluster's key, host key verified."""
    cluster = current_cluster(spec)
    return run_on(cluster, pick_node(cluster, node), command)


def preflight(spec: ClusterSpec, cluster: ClusterInfo | None = None, accept_new_host_keys: bool = False,
              concurrency: int = DEFAULT_CONCURRENCY) -> PreflightReport:
    """Check every node over SSH and record what hardware each one has (Slurm's node definitions use it)."""
    cluster = cluster or current_cluster(spec)
    state = ClusterState.for_spec(spec)
    with cluster_lock(state, "preflight"):  # it records the nodes' hardware in the cluster's state
        report = run_preflight(cluster, accept_new_host_keys, concurrency,
                               slurm_source=spec.software.slurm.source)
        hardware.record(state, report.hardware())
    return report


def deploy(spec: ClusterSpec, options: engine.DeployOptions = engine.DeployOptions(),
           on_update: OnUpdate | None = None, *, source: Path | None = None) -> DeployResult:
    """Run the roles on the cluster as it is now (the inventory rendered first); failed hosts are in the result.
    `source`: the spec file, kept as the cluster's spec copy and bound file unless this is a --check."""
    result = engine.deploy(spec, current_cluster(spec), options, on_update)
    if source is not None and not options.check:
        clusters.remember_spec(spec, source)
    return result


def certify(spec: ClusterSpec, options: CertifyOptions = CertifyOptions(), progress: Progress = silent) -> CertifyRun:
    """Measure the running cluster and write its reports; a failed check is in the result, never raised."""
    return run_certify(spec, current_cluster(spec), options, progress)


def deploy_rolling(spec: ClusterSpec, options: rolling.RollOptions, on_update: OnUpdate | None = None,
                   progress: Progress = silent, *, source: Path | None = None) -> rolling.RollResult:
    """Apply the roles to the running cluster a batch at a time (provision.cluster.rolling); `source` as for
    deploy()."""
    result = rolling.roll(spec, current_cluster(spec), options, on_update, progress)
    if source is not None:
        clusters.remember_spec(spec, source)
    return result


def certify_release(spec: ClusterSpec, options: CertifyOptions = CertifyOptions(),
                    progress: Progress = silent) -> CertifyRun | None:
    """Certify the nodes held out of service (hold reservation) and release those that pass; None when none is held."""
    with cluster_lock(ClusterState.for_spec(spec), "certify --release", progress):
        return converge.certify_and_release(spec, current_cluster(spec), options, progress)


def down(spec: ClusterSpec, progress: Progress = silent, *, orphans: bool = False) -> Teardown:
    """Remove everything the provider made (under the cluster's lock); the stages are forgotten so `up` redoes them."""
    provider = get_provider(spec)
    with cluster_lock(provider.state, "down", progress):
        teardown = provider.destroy(progress, orphans=orphans)
        if provider.state.exists():
            for document in ("stages", change.APPLIED, converge.HELD, applied.DOCUMENT):
                provider.state.remove(document)
    return teardown


# -- up ------------------------------------------------------------------------------------------------------


class UpView:
    """How a caller watches `up`; every method does nothing here, a view overrides what it shows."""

    def line(self, text: str) -> None:
        """One status line."""

    def notice(self, text: str) -> None:
        """A line the user must see even when status lines are off (a spec file other than the bound one)."""
        self.line(text)

    def stage_started(self, stage: str) -> None:
        """A stage begins (a later stage only when it is not skipped)."""

    def deploy_progress(self, progress: PlayProgress) -> None:
        """The deploy stage's live state: play, task, each host's latest result."""

    def stage_finished(self, stage: str, record: object | None) -> None:
        """A stage ended with its record (None when it raised); if the record is a failure, `up` raises next."""


@dataclass
class UpOptions:
    """Which stages `up` runs, and how."""

    redo: tuple[str, ...] = ()  # stages to run again even if done
    skip: tuple[str, ...] = ()  # stages not to run at all (preflight, certify)
    drain_timeout_s: float = admin.DEFAULT_DRAIN_TIMEOUT_S  # how long nodes to remove may finish their jobs
    force: bool = False  # cancel the jobs still running on nodes to remove at the drain timeout
    source: Path | None = None  # the spec file: a copy is kept in the state, so the cluster's name finds it
    rebind: bool = False  # apply `source` though the cluster was last applied from another file (cluster.binding)


@dataclass
class UpResult:
    """What `up` did, stage by stage: the cluster, the stages run and skipped, and each stage's record."""

    cluster: ClusterInfo
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    outcomes: dict[str, object] = field(default_factory=dict)


@dataclass
class _Run:
    """One `up` in progress: what every stage needs."""

    spec: ClusterSpec
    provider: Provider
    view: UpView
    todo: tuple[str, ...]  # the stages this `up` runs
    options: UpOptions = field(default_factory=UpOptions)
    cluster: ClusterInfo | None = None
    before: list[NodeInfo] | None = None  # the nodes the cluster had (None: never created)

    @property
    def state(self) -> ClusterState:
        return self.provider.state


def _nodes(run: _Run) -> ClusterInfo:
    """Create the nodes the spec adds (the provider is idempotent, so this runs on every `up`); nodes the spec
    removes stay until the deploy stage has drained them and taken them out of Slurm."""
    run.provider.check_environment()
    if run.options.source is not None:  # only now: an `up` refused before this point leaves no cluster to list
        clusters.remember_spec(run.spec, run.options.source)
    run.cluster = run.provider.create(run.view.line)
    converge.record_nodes(run.state, run.cluster, run.before)
    return run.cluster


def _preflight(run: _Run) -> PreflightReport:
    """Check the nodes not checked before (every node on a new cluster; the controller always: clocks are judged
    against it) and record their hardware."""
    done = run.state.stage_nodes("preflight") or set()
    todo = run.cluster.model_copy(update={"nodes": tuple(n for n in run.cluster.nodes
                                                         if n.name not in done or n.has_role("controller"))})
    report = preflight(run.spec, todo)
    if not report.failed_nodes:
        run.view.line(f"preflight passed on {len(report.nodes)} nodes in {report.elapsed_s:.1f} s")
    return report


def _inventory(run: _Run) -> list[Path]:
    """Render the inventory once, after preflight recorded the hardware Slurm's node definitions come from (a deploy
    about to run reads what is still missing, as `provision deploy` does); nodes joining a deployed cluster are
    named in it so the slurm role holds them out of service until certify passes."""
    run.cluster = converge.with_hold(run.state, run.cluster)
    return engine.write_inventory(run.spec, run.cluster, run.state, read_hardware="deploy" in run.todo)


def _deploy(run: _Run) -> DeployResult:
    """Drain the nodes the spec removes, run the roles on the spec's nodes, then remove the drained nodes."""
    leaving = converge.leaving(run.state, run.cluster)
    if leaving:
        converge.drain(run.cluster, leaving, run.options.drain_timeout_s, run.options.force, run.view.line)
    result = engine.deploy(run.spec, run.cluster, engine.DeployOptions(render_inventory=False),
                           run.view.deploy_progress)
    if leaving and result.ok:
        converge.remove(run.state, run.provider.retire, run.cluster, leaving, run.view.line)
    return result


def _certify(run: _Run) -> CertifyRun:
    """Certify at the spec's level (quick by default): nodes that joined a deployed cluster first, inside their hold
    reservation (passing ones are released into service); then the whole cluster if it was never certified (a first
    `up`, or one run with --skip-certify: held nodes in maintenance would fail a whole-cluster run)."""
    options = CertifyOptions(level=run.spec.certify.level)
    held = converge.held(run.state, run.cluster)
    if held:
        record = converge.certify_held(run.spec, run.cluster, held, options, run.view.line)
        if not record.ok or run.state.stage_nodes("certify") is not None:
            return record
    return run_certify(run.spec, run.cluster, options, run.view.line)


STAGE_CALLS = {"nodes": _nodes, "preflight": _preflight, "inventory": _inventory, "deploy": _deploy,
               "certify": _certify}


def failure(stage: str, record: object) -> ProvisionError | None:
    """The error that stops `up` when a stage's record is a failure (the stage is then not marked done)."""
    if isinstance(record, PreflightReport) and record.failed_nodes:
        return PreflightError(f"preflight failed on {', '.join(record.failed_nodes)}",
                              hint="fix the nodes, or pass --skip-preflight")
    if isinstance(record, DeployResult) and not record.ok:
        return DeployError(f"deploy failed on {', '.join(record.failed_hosts) or 'the run'}",
                           hint=f"fix it, then `provision up` resumes (artifacts: {record.artifacts_dir})")
    if isinstance(record, CertifyRun) and not record.ok:
        where = record.paths.html if record.paths else "the report"
        return CertifyError(f"certification failed on {', '.join(record.failed_nodes) or 'the cluster'}",
                            hint=f"see {where}; fix the nodes, then `provision up` certifies again "
                                 "(or `provision certify SPEC`)")
    return None


def up(spec: ClusterSpec, options: UpOptions = UpOptions(), view: UpView | None = None) -> UpResult:
    """Bring the cluster up under its lock, stage by stage, or converge a running one on a changed spec; a stage
    finished before for exactly the spec's nodes is not redone unless asked, and the deploy runs again whenever the
    settings it would apply differ from what the last one applied."""
    _refuse_unknown_stages(options.redo)
    provider, view = get_provider(spec), view or UpView()
    with cluster_lock(provider.state, "up", view.line):
        before = change.load_applied(provider.state)
        planned = [n.name for n in planned_nodes(spec)]
        if options.source is not None:
            binding.enforce(spec, options.source, "up", options.rebind, view.notice)
        _refuse_impossible_change(before, spec)
        for stage in options.redo if provider.state.exists() else ():
            provider.state.mark_stage(stage, done=False)
        why = _why_deploy(provider, spec, planned)
        skipped = [s for s in STAGES if s not in ALWAYS and (s in options.skip or _covered(provider.state, s, planned)
                                                              and not (s == "deploy" and why))]
        if why and "deploy" not in skipped:
            view.line(f"deploy: {why}")
        run = _Run(spec, provider, view, todo=tuple(s for s in STAGES if s not in skipped), options=options,
                   before=before)
        outcomes = {stage: _stage(run, stage) for stage in run.todo}
        return UpResult(run.cluster, ran=list(outcomes), skipped=skipped, outcomes=outcomes)


def _why_deploy(provider: Provider, spec: ClusterSpec, planned: list[str]) -> str | None:
    """Why a deployed cluster deploys again: nodes join or leave, or settings change (None: nothing to apply)."""
    deployed = provider.state.stage_nodes("deploy")
    if deployed is None:
        return None
    joining, leaving = [n for n in planned if n not in deployed], sorted(deployed - set(planned))
    moves = [f"{hostlist.compress(names)} {verb}" for names, verb in ((joining, "join"), (leaving, "leave")) if names]
    settings = planned_settings.pending(spec, provider.state, provider.planned)
    return "; ".join(moves + ([settings] if settings else [])) or None


def _covered(state: ClusterState, stage: str, planned: list[str]) -> bool:
    """Whether a stage finished before for these nodes (a state from before node tracking: finished). The deploy must
    have covered exactly them (the cluster-wide files follow the node set); preflight and certify every one of them
    (a node removed needs neither)."""
    if not state.stage_done(stage):
        return False
    covered = state.stage_nodes(stage)
    if covered is None:
        return True
    return covered == set(planned) if stage == "deploy" else set(planned) <= covered


def _refuse_unknown_stages(names: tuple[str, ...]) -> None:
    """A stage to redo must be one of STAGES (UsageError, exit 2, before anything is touched)."""
    unknown = [name for name in names if name not in STAGES]
    if unknown:
        raise UsageError(f"--redo {', '.join(clip(name) for name in unknown)}: `up` has no such stage",
                         hint=f"name one of {', '.join(STAGES)}")


def _refuse_impossible_change(before: list[NodeInfo] | None, spec: ClusterSpec) -> None:
    """Removing the controller or every compute node of a running cluster is refused before anything changes."""
    new = planned_nodes(spec)
    why = change.refusal(change.diff_nodes(before, new), before, new)
    if why:
        raise UsageError(why, hint="restore the node in the spec (or `provision down` and build a new cluster)")


def _stage(run: _Run, stage: str) -> object:
    """Run one stage, show its record, stop on a failure, else record the stage as done."""
    if stage not in ALWAYS:
        run.view.line(f"stage {stage}")
    run.view.stage_started(stage)
    record = None
    try:
        record = STAGE_CALLS[stage](run)
    finally:
        run.view.stage_finished(stage, record)  # None: the stage raised
    error = failure(stage, record)
    if error is not None:
        raise error
    run.state.mark_stage(stage, nodes=[n.name for n in planned_nodes(run.spec)])
    return record
