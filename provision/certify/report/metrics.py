"""Certify's last verdict as series of the catalogue (CERTIFY), written on the monitoring node where Prometheus reads
it: the cluster's verdict and when it ended, each node's, each check's per node, and the figure a check measured.

A check that ran on several subjects of a node (one per GPU) is one series per node and check: 0 when any subject
failed; its figure is the one of the first subject with the worst verdict (the GPU that failed, else the first).
Checks judged "na" and cluster-wide checks have no series of their own; a cluster-wide failure is in
gpu_provision_certify_ok.

The file is written from the series kept in the cluster's state (provision.certify.report.node_series), not from this
run alone: a partial run (a grow, `certify --release`, a rolling batch) replaces the series of the nodes it judged and
leaves every other node's as its last run left them; gpu_provision_certify_ok and its time stay the last WHOLE run's
(a partial run is not the cluster's verdict; before any whole run the file has no cluster series). A node no longer in
the cluster has none. The state is the truth and the file a rendering of it: a run is recorded there first, always,
even when monitoring is off or the file cannot be written.
"""
from __future__ import annotations

from datetime import datetime

from provision.certify.probe.records import CheckResult, worst
from provision.certify.records import ClusterReport, NodeResult
from provision.certify.report import node_series
from provision.errors import StateError
from provision.monitoring import monitoring_node
from provision.records import ClusterInfo
from provision.certify.probe.metrics.textfile import Sample, sample
from provision.remote.textfiles import StdinRunner, publish as write_textfile
from provision.remote.commands import run_on
from provision.spec.model import ClusterSpec
from provision.state import ClusterState

WRITER = "certify"  # its file: TEXTFILES["certify"]


def samples(report: ClusterReport) -> list[Sample]:
    """Every series of the report, cluster first, then node by node."""
    found = cluster_samples(report)
    for node in report.nodes:
        found += node_samples(node)
    return found


def cluster_samples(report: ClusterReport) -> list[Sample]:
    """The run's verdict about the cluster and when it ended."""
    return [sample("gpu_provision_certify_ok", _ok(report.verdict)),
            sample("gpu_provision_certify_last_run_timestamp_seconds", _seconds(report.finished_at))]


def node_samples(node: NodeResult) -> list[Sample]:
    """A node's verdict, then per check its verdict and figure."""
    found = [sample("gpu_provision_certify_node_ok", _ok(node.verdict), node=node.name)]
    for check, results in _by_check(node.checks).items():
        labels = {"node": node.name, "check": check}
        found.append(sample("gpu_provision_certify_check_ok", _ok(worst(r.verdict for r in results)), **labels))
        figure = _figure(results)
        if figure is not None:
            found.append(sample("gpu_provision_certify_figure", float(figure.value),
                                **labels, unit=figure.unit or ""))
    return found


def publish(spec: ClusterSpec, cluster: ClusterInfo, state: ClusterState, report: ClusterReport,
            run: StdinRunner = run_on) -> str | None:
    """Record the report's series in the state (all of a whole run's, a partial run's judged nodes'), then write the
    recorded series on the monitoring node (one SSH command); a note when they were not recorded or written (None
    when they were, or when nothing is to be written: monitoring off)."""
    try:
        series = node_series.record(state, cluster, report, cluster_samples(report), node_samples)
    except (StateError, OSError) as exc:
        return f"certify metrics: not recorded: {exc}"
    if not spec.monitoring.enabled:
        return None
    why = write_textfile(cluster, monitoring_node(cluster), WRITER, series.samples(), run)
    return f"certify metrics: {why}" if why else None


def _by_check(checks: tuple[CheckResult, ...]) -> dict[str, list[CheckResult]]:
    """Judged checks (not "na") by id, in the order they come."""
    found: dict[str, list[CheckResult]] = {}
    for check in checks:
        if check.verdict != "na":
            found.setdefault(check.check, []).append(check)
    return found


def _figure(results: list[CheckResult]) -> CheckResult | None:
    """The result whose number stands for the check: the first with the worst verdict among those with a number."""
    numbers = [r for r in results if isinstance(r.value, (int, float)) and not isinstance(r.value, bool)]
    verdict = worst(r.verdict for r in numbers)
    return next((r for r in numbers if r.verdict == verdict), None)


def _ok(verdict: str) -> float:
    """1 unless it failed (a warning passes)."""
    return 0.0 if verdict == "fail" else 1.0


def _seconds(iso: str) -> float:
    """An ISO 8601 time with its offset as Unix time."""
    return datetime.fromisoformat(iso).timestamp()
