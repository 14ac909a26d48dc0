"""Deploy: render inventory and ansible.cfg, run site.yml, keep per-run artifacts and the failed hosts."""
from __future__ import annotations

import time
from dataclasses import dataclass

from provision import inventory
from provision.adaptors.ansible import PlaybookRun, run_playbook
from provision.deploy import secrets
from provision.deploy.ansible_cfg import write_ansible_cfg
from provision.deploy.events import EventTracker, OnUpdate
from provision.deploy.records import DeployResult
from provision.errors import UsageError
from provision.lock import cluster_lock
from provision.preflight import ensure_hardware
from provision.providers import cluster_state
from provision.records import ClusterInfo
from provision.resources import playbooks_dir
from provision.spec.model import ClusterSpec
from provision.state import ClusterState

SITE_PLAYBOOK = "site.yml"


@dataclass
class DeployOptions:
    """The knobs of `provision deploy`."""

    tags: str | None = None
    limit: str | None = None
    check: bool = False
    retry_failed: bool = False
    playbook: str = SITE_PLAYBOOK


def _limit(state: ClusterState, options: DeployOptions) -> str | None:
    """The host limit: as given, or the hosts that failed last time for --retry-failed."""
    if not options.retry_failed:
        return options.limit
    failed = (state.read("deploy") or {}).get("failed_hosts", [])
    if not failed:
        raise UsageError("--retry-failed: no failed or unreachable hosts are recorded from the last deploy",
                         hint="run `provision deploy` without --retry-failed")
    return ",".join(failed)


def _run_dir_name(options: DeployOptions) -> str:
    """A sortable, unique name for a run's artifacts directory."""
    mode = "check" if options.check else ("retry" if options.retry_failed else "deploy")
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{time.time_ns() % 1_000_000:06d}-{mode}"


def deploy(spec: ClusterSpec, cluster: ClusterInfo, options: DeployOptions = DeployOptions(),
           on_update: OnUpdate | None = None) -> DeployResult:
    """Run the site playbook on the cluster under its lock; never raises for failed hosts (they are in the result)."""
    state = cluster_state(spec)
    with cluster_lock(state, "deploy --check" if options.check else "deploy"):
        return _deploy(spec, cluster, state, options, on_update)


def _deploy(spec: ClusterSpec, cluster: ClusterInfo, state: ClusterState, options: DeployOptions,
            on_update: OnUpdate | None) -> DeployResult:
    """Render the inventory and ansible.cfg, run the playbook, record the failed hosts."""
    limit = _limit(state, options)
    secrets.ensure_secrets(state)
    ensure_hardware(state, cluster)
    inventory.write(spec, cluster, state.inventory_dir)
    run = PlaybookRun(
        private_data_dir=state.runs_dir / _run_dir_name(options),
        project_dir=playbooks_dir(),
        playbook=options.playbook,
        inventory=state.inventory_dir,
        ansible_cfg=write_ansible_cfg(state, len(cluster.nodes)),
        limit=limit,
        tags=options.tags,
        check=options.check,
    )
    tracker = EventTracker(on_update)
    outcome = run_playbook(run, tracker)
    result = DeployResult(hosts=tracker.results(), artifacts_dir=outcome.artifacts_dir, rc=outcome.rc,
                          check_mode=options.check, cancelled=outcome.cancelled)
    if not options.check:
        state.write("deploy", {"failed_hosts": result.failed_hosts, "artifacts_dir": str(result.artifacts_dir),
                               "rc": result.rc, "cancelled": result.cancelled})
    return result
