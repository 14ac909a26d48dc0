"""The cluster lifecycle as library calls: plan, up (resumable stages), status, down."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from provision import hardware, inventory
from provision.preflight import DEFAULT_CONCURRENCY, run_preflight
from provision.preflight.records import PreflightReport
from provision.lock import cluster_lock
from provision.providers import registry
from provision.providers.base import Plan, Provider, Teardown
from provision.records import ClusterInfo, Progress, silent
from provision.spec.model import ClusterSpec
from provision.spec.topology import planned_nodes
from provision.state import ClusterState

STAGES = ("nodes", "inventory", "preflight", "deploy", "certify")


def get_provider(spec: ClusterSpec) -> Provider:
    """The spec's provider, bound to the cluster's state directory."""
    return registry.implementation(spec.provider.type)(spec, ClusterState.for_spec(spec))


def planned_cluster(spec: ClusterSpec) -> ClusterInfo:
    """The cluster as the spec describes it, before any node exists."""
    provider = get_provider(spec)
    key = spec.ssh.key_path.expanduser() if spec.ssh.key_path else provider.state.ssh_key_path
    return ClusterInfo(name=spec.name, provider=spec.provider.type, nodes=tuple(planned_nodes(spec)),
                       ssh_user=spec.provider.ssh_user(spec.ssh.user), ssh_key_path=key,
                       known_hosts_path=provider.state.known_hosts_path, sandbox=spec.provider.simulated)


def current_cluster(spec: ClusterSpec) -> ClusterInfo:
    """The live cluster if it was created, else the planned one."""
    provider = get_provider(spec)
    return provider.describe() if provider.state.exists() else planned_cluster(spec)


def preflight(spec: ClusterSpec, cluster: ClusterInfo | None = None, accept_new_host_keys: bool = False,
              concurrency: int = DEFAULT_CONCURRENCY) -> PreflightReport:
    """Check every node over SSH and record what hardware each one has (Slurm's node definitions use it)."""
    cluster = cluster or current_cluster(spec)
    state = get_provider(spec).state
    with cluster_lock(state, "preflight"):  # it records the nodes' hardware in the cluster's state
        report = run_preflight(cluster, accept_new_host_keys, concurrency)
        hardware.record(state, report.hardware())
    return report


def plan(spec: ClusterSpec) -> Plan:
    """What `up` would create; no side effects."""
    return get_provider(spec).plan()


@dataclass
class UpOptions:
    """Which stages `up` runs, and how."""

    redo: tuple[str, ...] = ()  # stages to run again even if done
    skip: tuple[str, ...] = ()  # stages not to run at all


@dataclass
class UpResult:
    """What `up` did, stage by stage."""

    cluster: ClusterInfo
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    outcomes: dict[str, object] = field(default_factory=dict)


StageRunner = Callable[[ClusterSpec, ClusterInfo, Progress], object]


def _ensure_nodes(spec: ClusterSpec, provider: Provider, progress: Progress) -> ClusterInfo:
    """Create the nodes (the provider is idempotent, so this always runs) and write the inventory."""
    provider.check_environment()
    cluster = provider.create(progress)
    provider.state.mark_stage("nodes")
    inventory.write(spec, cluster, provider.state.inventory_dir)
    provider.state.mark_stage("inventory")
    return cluster


def up(spec: ClusterSpec, later_stages: dict[str, StageRunner], options: UpOptions = UpOptions(),
       progress: Progress = silent) -> UpResult:
    """Bring the cluster up under its lock; each later stage that finished before is not redone unless asked."""
    provider = get_provider(spec)
    with cluster_lock(provider.state, "up", progress):
        return _up(spec, provider, later_stages, options, progress)


def _up(spec: ClusterSpec, provider: Provider, later_stages: dict[str, StageRunner], options: UpOptions,
        progress: Progress) -> UpResult:
    """The stages of `up`, in order."""
    for stage in options.redo:
        provider.state.mark_stage(stage, done=False)
    cluster = _ensure_nodes(spec, provider, progress)
    result = UpResult(cluster, ran=["nodes", "inventory"])
    for stage, runner in later_stages.items():
        if stage in options.skip or provider.state.stage_done(stage):
            result.skipped.append(stage)
            continue
        progress(f"stage {stage}")
        result.outcomes[stage] = runner(spec, cluster, progress)
        provider.state.mark_stage(stage)
        result.ran.append(stage)
    return result


def down(spec: ClusterSpec, progress: Progress = silent, *, orphans: bool = False) -> Teardown:
    """Remove everything the provider made (under the cluster's lock); the stages are forgotten so `up` redoes them."""
    provider = get_provider(spec)
    with cluster_lock(provider.state, "down", progress):
        teardown = provider.destroy(progress, orphans=orphans)
        if provider.state.exists():
            provider.state.remove("stages")
    return teardown


def status(spec: ClusterSpec) -> ClusterInfo:
    """The cluster's nodes and their live state."""
    return current_cluster(spec)
