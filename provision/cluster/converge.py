"""The steps `up` adds when the spec of a running cluster changed (provision.cluster.change says what changed):

1. after the nodes stage, the state records the nodes the cluster has: the spec's, plus those it removes until they
   are gone (`record_nodes`);
2. nodes joining a deployed cluster are named in the inventory (`slurm_hold_nodes`), so the slurm role puts them in
   a maintenance reservation before their slurmd first registers: no user job can start there (`with_hold`);
3. nodes the spec removes are drained, their jobs waited for (or cancelled with --force), slurmd stopped; the
   deploy then renders the cluster-wide files without them and only then the provider removes them (`drain`,
   `remove`);
4. certify runs on the held nodes inside the reservation, a partial run that measures them against a few nodes in
   service too; passing nodes are released into service, failing ones stay held with the failed checks in the report
   (`certify_held`).

Each step is recorded in the state before the next, so an interrupted change is finished by the next `up`.
"""
from __future__ import annotations

from collections.abc import Callable

from provision import hostlist, inventory
from provision.certify.control.run import CertifyOptions, CertifyRun, certify as run_certify
from provision.cluster import change
from provision.node import hardware
from provision.records import ClusterInfo, NodeInfo, Progress
from provision.slurm import admin
from provision.spec.model import ClusterSpec
from provision.state import ClusterState

HELD = "held"  # state document: the nodes held out of service until certify passes on them
HOLD_VAR = "slurm_hold_nodes"  # the slurm role's input (playbooks/roles/slurm/defaults/main.yml)


def record_nodes(state: ClusterState, cluster: ClusterInfo, before: list[NodeInfo] | None) -> None:
    """The nodes the cluster has now: the spec's, and those it no longer names that are not removed yet."""
    names = {n.name for n in cluster.nodes}
    change.save_applied(state, list(cluster.nodes) + [n for n in before or [] if n.name not in names])


def leaving(state: ClusterState, cluster: ClusterInfo) -> list[NodeInfo]:
    """Recorded nodes the spec no longer names (to drain and remove)."""
    names = {n.name for n in cluster.nodes}
    return [n for n in change.load_applied(state) or [] if n.name not in names]


def held(state: ClusterState, cluster: ClusterInfo) -> list[str]:
    """The spec's nodes held out of service until certify passes on them."""
    names = {n.name for n in cluster.nodes}
    return [n for n in (state.read(HELD) or {}).get("nodes", []) if n in names]


def remember_held(state: ClusterState, nodes: list[str]) -> None:
    """Record nodes as held (the next `up` or `certify --release` certifies and releases them)."""
    state.write(HELD, {"nodes": sorted(set((state.read(HELD) or {}).get("nodes", [])) | set(nodes))})


def with_hold(state: ClusterState, cluster: ClusterInfo) -> ClusterInfo:
    """The cluster with the nodes to hold in its inventory vars: compute nodes joining a deployed cluster, and those
    held before and not yet released. A first deploy holds nothing (the whole cluster is certified)."""
    deployed = state.stage_nodes("deploy")
    joining = [] if deployed is None else [n.name for n in cluster.with_role("compute") if n.name not in deployed]
    hold = sorted(set(held(state, cluster)) | set(joining))
    state.write(HELD, {"nodes": hold})
    if not hold:
        return cluster
    return cluster.model_copy(update={"vars": {**cluster.vars, HOLD_VAR: ",".join(hold)}})


def drain(cluster: ClusterInfo, nodes: list[NodeInfo], timeout_s: float, force: bool, progress: Progress) -> None:
    """Drain the leaving nodes and wait for their jobs (slurm.admin), then stop slurmd on them."""
    names = [n.name for n in nodes]
    progress(f"removing {hostlist.compress(names)}: draining first")
    runner = admin.controller_runner(cluster)
    in_slurm = [n for n in names if n in _slurm_nodes(runner)]
    if in_slurm:
        admin.drain_for_removal(runner, in_slurm, timeout_s, force, progress)
    admin.stop_slurmd(cluster, nodes, progress)


def _slurm_nodes(runner: admin.Runner) -> set[str]:
    """The nodes slurmctld knows now."""
    result = runner("sinfo -h -N -o %N")
    return {line.strip() for line in result.stdout.splitlines() if line.strip()} if result.rc == 0 else set()


def remove(state: ClusterState, retire: Callable[[list[str], Progress], list[str]], cluster: ClusterInfo,
           nodes: list[NodeInfo], progress: Progress) -> list[str]:
    """Once Slurm no longer has them: the provider removes the nodes (`retire`), and the state forgets them."""
    names = [n.name for n in nodes]
    removed = retire(names, progress)
    hardware.forget(state, names)
    state.forget_stage_nodes(names)
    change.save_applied(state, cluster.nodes)
    progress(f"removed {hostlist.compress(names)} ({len(removed)} objects)")
    return removed


def release(state: ClusterState, cluster: ClusterInfo, passed: list[str], progress: Progress) -> list[str]:
    """Release nodes that passed certify from the hold reservation; the nodes still held (recorded)."""
    keep = admin.release(admin.controller_runner(cluster), passed, progress)
    still = [n for n in held(state, cluster) if n not in passed or n in keep]
    state.write(HELD, {"nodes": still})
    return still


CERTIFY_REASON = "certify:"  # how certify's --drain-failed reasons start (certify.control.slurm_checks.drain_reason)


def certify_held(spec: ClusterSpec, cluster: ClusterInfo, nodes: list[str], options: CertifyOptions,
                 progress: Progress) -> CertifyRun:
    """Certify the held nodes (a partial run: with the controller, measured against a few compute nodes in service,
    certify.control.peers), Slurm jobs inside the hold reservation: those that pass are released into service, those
    that fail stay held and drained with their failed check ids as the reason (a node that failed before is resumed
    inside the reservation first, so certify can run there again)."""
    runner = admin.controller_runner(cluster)
    admin.resume_drained(runner, nodes, CERTIFY_REASON, progress)
    progress(f"certifying {hostlist.compress(nodes)} before they take user jobs")
    options = CertifyOptions(level=options.level, reservation=admin.HOLD_RESERVATION, drain_failed=True,
                             nodes=tuple(nodes))
    record = run_certify(spec, cluster, options, progress)
    failed = set(record.failed_nodes)
    passed = [n for n in nodes if n not in failed] if record.ok or failed else []  # a cluster-wide failure: none
    state = ClusterState.for_spec(spec)
    release(state, cluster, passed, progress)
    rewrite_hold(spec, cluster, state)
    return record


def rewrite_hold(spec: ClusterSpec, cluster: ClusterInfo, state: ClusterState) -> None:
    """The rendered inventory names the nodes held now: those certify released leave `slurm_hold_nodes`, so a plain
    `ansible-playbook` run on it (README, Ansible) holds no node again that is in service."""
    if not (state.inventory_dir / "hosts.yml").is_file():
        return
    others = {name: value for name, value in cluster.vars.items() if name != HOLD_VAR}
    still = held(state, cluster)
    held_vars = {**others, HOLD_VAR: ",".join(still)} if still else others
    inventory.write(spec, cluster.model_copy(update={"vars": held_vars}), state.inventory_dir)


def held_now(spec: ClusterSpec, cluster: ClusterInfo) -> list[str]:
    """The spec's compute nodes held now: in the hold reservation (by `up`, a rolling deploy, or by hand), or recorded
    as held by an `up` that did not finish."""
    names = {n.name for n in cluster.with_role("compute")}
    live = admin.held_nodes(admin.controller_runner(cluster))
    return sorted((set(live) | set(held(ClusterState.for_spec(spec), cluster))) & names)


def certify_and_release(spec: ClusterSpec, cluster: ClusterInfo, options: CertifyOptions,
                        progress: Progress) -> CertifyRun | None:
    """`provision certify --release`: certify the held nodes and release those that pass; None when none is held."""
    nodes = held_now(spec, cluster)
    if not nodes:
        progress("no node is held (hold reservation " + admin.HOLD_RESERVATION + " is empty or absent)")
        return None
    remember_held(ClusterState.for_spec(spec), nodes)
    return certify_held(spec, cluster, nodes, options, progress)
