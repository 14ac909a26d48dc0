"""Deploy's last result as series of the catalogue (DEPLOY), written on the monitoring node where Prometheus reads it:
whether the run ended without a failed or unreachable host, when, and per host whether it converged.

A check-mode run changes nothing and writes nothing; neither does a run when monitoring is off, or when the monitoring
node itself failed or could not be reached (its exporter may not be there: the run says so in a note).
"""
from __future__ import annotations

import time

from provision.deploy.records import DeployResult
from provision.monitoring import monitoring_node
from provision.records import ClusterInfo
from provision.remote.commands import run_on
from provision.certify.probe.metrics.textfile import Sample, sample
from provision.remote.textfiles import StdinRunner, publish as write_textfile
from provision.spec.model import ClusterSpec

WRITER = "deploy"  # its file: TEXTFILES["deploy"]
NOT_CONVERGED = ("failed", "unreachable")


def samples(result: DeployResult, ended: float) -> list[Sample]:
    """The run's verdict and end (Unix time), then one series per host of the run."""
    return [sample("gpu_provision_deploy_ok", 1.0 if result.ok else 0.0),
            sample("gpu_provision_deploy_last_run_timestamp_seconds", ended),
            *(sample("gpu_provision_deploy_node_ok", 0.0 if h.status in NOT_CONVERGED else 1.0, node=h.host)
              for h in result.hosts)]


def publish(spec: ClusterSpec, cluster: ClusterInfo, result: DeployResult, ended: float | None = None,
            run: StdinRunner = run_on) -> str | None:
    """Write the run's series on the monitoring node (one SSH command); a note when they were not written (None when
    they were, or when nothing is to be written: check mode, monitoring off)."""
    if result.check_mode or not spec.monitoring.enabled:
        return None
    node = monitoring_node(cluster)
    host = next((h for h in result.hosts if h.host == node.name), None)
    if host is not None and host.status in NOT_CONVERGED:
        return f"deploy metrics: not written: the monitoring node {node.name} is {host.status} in this run"
    why = write_textfile(cluster, node, WRITER, samples(result, time.time() if ended is None else ended), run)
    return f"deploy metrics: {why}" if why else None
