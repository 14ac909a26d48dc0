"""`provision deploy --rolling N` (or N%): apply a change to a running cluster batch by batch.

The nodes that run no jobs (controller, login, storage-only) go first, in one step. Then each batch of compute nodes:
put in the hold reservation (no new user job starts there; running ones go on), wait for its jobs (up to the drain
timeout; `force` cancels them), run the roles on the batch only (a reboot a role needs happens here, a batch at a
time), certify the batch inside the reservation, release it. The roll stops at the first batch that fails: that
batch stays held, drained with the reason (the failed task, or the failed check ids), and the batches after it are
not touched. Out of service at any time: one batch.
"""
from __future__ import annotations

import math
import shlex
from dataclasses import asdict, dataclass, field

from provision import hostlist
from provision.certify.control.run import CertifyOptions
from provision.cluster import converge
from provision.cluster.lock import cluster_lock
from provision.deploy import engine
from provision.deploy.events import OnUpdate
from provision.deploy.records import DeployOptions, DeployResult
from provision.errors import UsageError
from provision.records import ClusterInfo, Progress, silent
from provision.slurm import admin
from provision.spec.model import ClusterSpec
from provision.state import ClusterState

REASON = "gpu-provision-rolling"  # drain reasons of a batch whose deploy failed start with it


@dataclass(frozen=True)
class RollOptions:
    """How the roll goes: batch size ("2" or "25%"), how long jobs may run on, what the deploys keep."""

    batch: str
    drain_timeout_s: float = admin.DEFAULT_DRAIN_TIMEOUT_S
    force: bool = False
    level: str = "quick"
    keep_runs: int = DeployOptions.keep_runs


@dataclass
class BatchOutcome:
    """What happened to one batch: how far it got and why it stopped there."""

    index: int
    nodes: list[str]
    ok: bool
    stage: str  # released | hold | deploy | certify
    detail: str = ""


@dataclass
class RollResult:
    """The whole roll: the batches as planned, what happened to each that was started, and those never touched."""

    batches: list[list[str]]
    outcomes: list[BatchOutcome] = field(default_factory=list)
    first_step: str = ""  # what the nodes without jobs reported (empty: fine)

    @property
    def ok(self) -> bool:
        """Every batch was applied, certified and released."""
        return not self.first_step and len(self.outcomes) == len(self.batches) and all(o.ok for o in self.outcomes)

    @property
    def untouched(self) -> list[str]:
        """Nodes of the batches the roll never started."""
        return [n for batch in self.batches[len(self.outcomes):] for n in batch]

    def as_dict(self) -> dict:
        """Plain dict for --json."""
        return {"ok": self.ok, "batches": self.batches, "first_step": self.first_step,
                "outcomes": [asdict(o) for o in self.outcomes], "untouched": self.untouched}


def batch_size(text: str, total: int) -> int:
    """"2" -> 2, "25%" -> a quarter of the nodes (at least 1); UsageError (exit 2) for anything else."""
    value = text.strip()
    percent = value.endswith("%")
    number = value[:-1] if percent else value
    if not (number.isascii() and number.isdigit()) or int(number) < 1 or (percent and int(number) > 100):
        raise UsageError(f"--rolling: '{text}' is not a batch size",
                         hint="give a node count such as 2, or a share of the compute nodes such as 25%")
    return max(1, math.floor(total * int(number) / 100)) if percent else int(number)


def plan_batches(nodes: list[str], size: int) -> list[list[str]]:
    """The nodes in order, `size` at a time."""
    return [nodes[i:i + size] for i in range(0, len(nodes), size)]


def roll(spec: ClusterSpec, cluster: ClusterInfo, options: RollOptions, on_update: OnUpdate | None = None,
         progress: Progress = silent) -> RollResult:
    """Apply the roles batch by batch under the cluster's lock; never raises for a failed batch (it is in the
    result)."""
    state = ClusterState.for_spec(spec)
    if state.stage_nodes("deploy") is None:
        raise UsageError(f"cluster {spec.name} was never deployed: --rolling changes a running cluster",
                         hint=f"bring it up first: provision up {spec.name}")
    compute = [n.name for n in cluster.with_role("compute")]
    result = RollResult(plan_batches(compute, batch_size(options.batch, len(compute))))
    with cluster_lock(state, "deploy --rolling", progress):
        engine.write_inventory(spec, cluster, state)
        others = [n.name for n in cluster.nodes if n.name not in compute]
        if others:
            first = _deploy(spec, cluster, others, options, on_update, batch=False)
            result.first_step = "" if first.ok else _deploy_failure(first)
            if result.first_step:
                return result
        runner = admin.controller_runner(cluster)
        for index, batch in enumerate(result.batches, 1):
            outcome = _one_batch(spec, cluster, runner, index, batch, options, on_update, progress)
            result.outcomes.append(outcome)
            if not outcome.ok:
                progress(f"batch {index} failed at {outcome.stage}: stopping; "
                         f"{hostlist.compress(result.untouched) or 'no node'} left as it was")
                break
        if result.ok:  # every node has what the inventory rendered at the start: the cluster's settings now
            engine.record_settings(state, cluster)
    return result


def hold_users(spec: ClusterSpec, cluster: ClusterInfo) -> str:
    """Who may run jobs in the hold reservation: root, the SSH user, and certify's own user (its jobs certify the
    batch; the limited deploy never reaches the controller's certify role, which admits it on a full one)."""
    certify = [spec.certify.user.name] if spec.certify.user else []
    return ",".join(dict.fromkeys(["root", cluster.ssh_user, *certify]))


def _one_batch(spec: ClusterSpec, cluster: ClusterInfo, runner: admin.Runner, index: int, batch: list[str],
               options: RollOptions, on_update: OnUpdate | None, progress: Progress) -> BatchOutcome:
    """Hold, wait, deploy, certify, release one batch."""
    names = hostlist.compress(batch)
    progress(f"batch {index}: holding {names} (no new jobs there) and waiting for their jobs")
    admin.hold(runner, batch, users=hold_users(spec, cluster))
    converge.remember_held(ClusterState.for_spec(spec), batch)
    try:
        admin.wait_for_jobs(runner, batch, options.drain_timeout_s, options.force, progress,
                                  unforced="the batch stays held, nothing was deployed")
    except admin.DrainTimeout as exc:
        return BatchOutcome(index, batch, False, "hold", str(exc))
    progress(f"batch {index}: applying the roles on {names}")
    deployed = _deploy(spec, cluster, batch, options, on_update)
    if not deployed.ok:
        detail = _deploy_failure(deployed)
        runner(f"scontrol update nodename={shlex.quote(names)} state=drain "
               f"reason={shlex.quote(f'{REASON}: batch {index}: {detail}'[:200])}")
        return BatchOutcome(index, batch, False, "deploy", detail)
    record = converge.certify_held(spec, cluster, batch, CertifyOptions(level=options.level), progress)
    if not record.ok:
        report = record.paths.json if record.paths else "not written"
        return BatchOutcome(index, batch, False, "certify",
                            f"certify failed on {hostlist.compress(record.failed_nodes or batch)} (report: {report})")
    return BatchOutcome(index, batch, True, "released")


def _deploy(spec: ClusterSpec, cluster: ClusterInfo, hosts: list[str], options: RollOptions,
            on_update: OnUpdate | None, batch: bool = True) -> DeployResult:
    """The roles on these hosts only (the inventory, with every node, was rendered once before); a held batch may
    reboot (the nvidia_driver role's reboot path)."""
    return engine.deploy(spec, cluster, DeployOptions(limit=",".join(hosts), render_inventory=False,
                                                      keep_runs=options.keep_runs, rolling_batch=batch), on_update)


def _deploy_failure(result: DeployResult) -> str:
    """One line: which hosts failed and the first failed task."""
    bad = [h for h in result.hosts if h.failed or h.unreachable]
    if not bad:
        return f"ansible exited {result.rc}"
    first = bad[0]
    message = (first.message or "").strip().splitlines()[0][:120] if (first.message or "").strip() else ""
    hosts = hostlist.compress([h.host for h in bad])
    return f"deploy failed on {hosts}: {first.failed_task or 'unreachable'}: {message}"
