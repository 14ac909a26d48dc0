"""Deploy: render inventory and ansible.cfg, run site.yml, keep per-run artifacts and the failed hosts."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from provision import inventory
from provision.adaptors.ansible import PlaybookRun, run_playbook
from provision.cluster.lock import cluster_lock
from provision.deploy import secrets
from provision.deploy.ansible_cfg import write_ansible_cfg
from provision.deploy.events import EventTracker, OnUpdate
from provision.deploy.metrics import publish as publish_metrics
from provision.deploy.records import DeployOptions, DeployResult
from provision.errors import UsageError
from provision.preflight import ensure_hardware
from provision.records import ClusterInfo
from provision.resources import playbooks_dir
from provision.settings import applied
from provision.spec.model import ClusterSpec
from provision.state import ClusterState

WOULD_RUN_FILE = "would_run.jsonl"  # written by playbooks/callback_plugins/gpu_provision_would_run.py


def _limit(state: ClusterState, options: DeployOptions) -> str | None:
    """The host limit: as given, or the hosts that failed last time for --retry-failed."""
    if not options.retry_failed:
        return options.limit
    failed = (state.read("deploy") or {}).get("failed_hosts", [])
    if not failed:
        raise UsageError("--retry-failed: no failed or unreachable hosts are recorded from the last deploy",
                         hint="run `provision deploy` without --retry-failed")
    return ",".join(failed)


def _read_would_run(path: Path) -> list[tuple[str, str]]:
    """(host, task) of every command check mode skipped because it would have run (the callback's file)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    records = [json.loads(line) for line in lines if line.strip()]
    return [(r["host"], r["task"]) for r in records]


def prune_runs(runs_dir: Path, keep: int) -> list[Path]:
    """Remove all but the newest `keep` run folders (their names sort by time); the folders removed."""
    if not runs_dir.is_dir():
        return []
    runs = sorted(p for p in runs_dir.iterdir() if p.is_dir() and not p.is_symlink())
    old = runs[:max(len(runs) - keep, 0)]
    for folder in old:
        shutil.rmtree(folder, ignore_errors=True)
    return old


def _run_dir_name(options: DeployOptions) -> str:
    """A sortable, unique name for a run's artifacts directory."""
    mode = "check" if options.check else ("retry" if options.retry_failed else "deploy")
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{time.time_ns() % 1_000_000:06d}-{mode}"


def write_inventory(spec: ClusterSpec, cluster: ClusterInfo, state: ClusterState, *,
                    read_hardware: bool = True) -> list[Path]:
    """The inventory Ansible reads, Slurm's node definitions from recorded hardware (`read_hardware`: read it now
    over SSH for compute nodes that have none recorded)."""
    if read_hardware:
        ensure_hardware(state, cluster)
    return inventory.write(spec, cluster, state.inventory_dir)


def deploy(spec: ClusterSpec, cluster: ClusterInfo, options: DeployOptions = DeployOptions(),
           on_update: OnUpdate | None = None) -> DeployResult:
    """Run the site playbook on the cluster under its lock; never raises for failed hosts (they are in the result)."""
    state = ClusterState.for_spec(spec)
    with cluster_lock(state, "deploy --check" if options.check else "deploy"):
        result = _deploy(spec, cluster, state, options, on_update)
        # under the lock: the nodes' results in the state are read, merged and written back by one run at a time
        note = publish_metrics(spec, cluster, state, result)  # a file not written is a note: the result stays
    if note:
        result.notes.append(note)
    return result


def _deploy(spec: ClusterSpec, cluster: ClusterInfo, state: ClusterState, options: DeployOptions,
            on_update: OnUpdate | None) -> DeployResult:
    """Render the inventory and ansible.cfg, run the playbook, record the failed hosts."""
    limit = _limit(state, options)
    secrets.ensure_secrets(state)
    if options.render_inventory:
        write_inventory(spec, cluster, state)
    private_dir = state.runs_dir / _run_dir_name(options)
    prune_runs(state.runs_dir, max(options.keep_runs - 1, 0))  # room for this run
    would_run = private_dir / WOULD_RUN_FILE
    run = PlaybookRun(
        private_data_dir=private_dir,
        project_dir=playbooks_dir(),
        playbook=options.playbook,
        inventory=state.inventory_dir,
        ansible_cfg=write_ansible_cfg(state, len(cluster.nodes)),
        limit=limit,
        tags=options.tags,
        check=options.check,
        extra_env={"GPU_PROVISION_WOULD_RUN_FILE": str(would_run)} if options.check else {},
        extra_vars={"provision_in_service": state.stage_nodes("deploy") is not None,
                    "provision_rolling_batch": options.rolling_batch},
    )
    tracker = EventTracker(on_update)
    outcome = run_playbook(run, tracker)
    if options.check:
        tracker.would_run(_read_would_run(would_run))
    result = DeployResult(hosts=tracker.results(), artifacts_dir=outcome.artifacts_dir, rc=outcome.rc,
                          check_mode=options.check, cancelled=outcome.cancelled)
    if not options.check:
        state.write("deploy", {"failed_hosts": result.failed_hosts, "artifacts_dir": str(result.artifacts_dir),
                               "rc": result.rc, "cancelled": result.cancelled})
    if result.ok and whole(options):
        record_settings(state, cluster)
    return result


def whole(options: DeployOptions) -> bool:
    """Whether a run applies everything to every node: no --limit, --tags, --check or --retry-failed (only such a
    run's settings are recorded as what the cluster has)."""
    return not (options.limit or options.tags or options.check or options.retry_failed)


def record_settings(state: ClusterState, cluster: ClusterInfo) -> applied.Settings:
    """Record what the inventory Ansible just read gave every node (provision.settings.applied), so `plan` and `up`
    see what a later spec changes."""
    return applied.record(state, applied.from_inventory(applied.written(state.inventory_dir), cluster.vars))
