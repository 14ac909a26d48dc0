"""Deploy's last result as series of the catalogue (DEPLOY), written on the monitoring node where Prometheus reads it:
whether the last run ended without a failed or unreachable host and when, then per node whether the last run that
deployed it converged it, and when that run ended.

The per-node series come from the nodes' results kept in the cluster's state (provision.deploy.node_results), not
from this run alone: a run of some hosts (--limit, --retry-failed, a rolling batch) leaves every other node's series
as its own last run left them, and a node no longer in the cluster has none. The state is the truth and the file a
rendering of it: a run is recorded there first, always, even when monitoring is off or the file cannot be written (a
later run's file shows it). gpu_provision_deploy_ok and gpu_provision_deploy_last_run_timestamp_seconds are the last
run's, whatever hosts it had.

A check-mode run changes nothing, records nothing and writes nothing; neither is a file written when monitoring is off,
or when the monitoring node itself failed or could not be reached (its exporter may not be there: the run says so in a
note).
"""
from __future__ import annotations

import time
from collections.abc import Mapping

from provision.deploy import node_results
from provision.deploy.node_results import NOT_CONVERGED, NodeDeploy
from provision.deploy.records import DeployResult
from provision.errors import StateError
from provision.monitoring import monitoring_node
from provision.records import ClusterInfo
from provision.remote.commands import run_on
from provision.certify.probe.metrics.textfile import Sample, sample
from provision.remote.textfiles import StdinRunner, publish as write_textfile
from provision.spec.model import ClusterSpec
from provision.state import ClusterState

WRITER = "deploy"  # its file: TEXTFILES["deploy"]


def samples(result: DeployResult, ended: float, nodes: Mapping[str, NodeDeploy]) -> list[Sample]:
    """The run's verdict and end (Unix time), then per node its last result and when that run ended."""
    found = [sample("gpu_provision_deploy_ok", 1.0 if result.ok else 0.0),
             sample("gpu_provision_deploy_last_run_timestamp_seconds", ended)]
    for node, last in nodes.items():
        found += [sample("gpu_provision_deploy_node_ok", 1.0 if last.ok else 0.0, node=node),
                  sample("gpu_provision_deploy_node_last_run_timestamp_seconds", last.at, node=node)]
    return found


def publish(spec: ClusterSpec, cluster: ClusterInfo, state: ClusterState, result: DeployResult,
            ended: float | None = None, run: StdinRunner = run_on) -> str | None:
    """Record the run's hosts in the state, then write every node's series on the monitoring node (one SSH command);
    a note when they were not recorded or written (None when they were, or when nothing is to be written: check mode,
    monitoring off)."""
    if result.check_mode:
        return None
    ended = time.time() if ended is None else ended
    try:
        nodes = node_results.record(state, cluster, result, ended)
    except (StateError, OSError) as exc:
        return f"deploy metrics: not recorded: {exc}"
    if not spec.monitoring.enabled:
        return None
    node = monitoring_node(cluster)
    host = next((h for h in result.hosts if h.host == node.name), None)
    if host is not None and host.status in NOT_CONVERGED:
        return f"deploy metrics: not written: the monitoring node {node.name} is {host.status} in this run"
    why = write_textfile(cluster, node, WRITER, samples(result, ended, nodes), run)
    return f"deploy metrics: {why}" if why else None
