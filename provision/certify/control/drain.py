"""Drain failed compute nodes in Slurm, the reason naming their failed checks (`certify --drain-failed`)."""
from __future__ import annotations

from collections.abc import Sequence

from provision.certify.control import slurm_checks
from provision.certify.control.fleet import Fleet
from provision.certify.records import ClusterReport
from provision.records import ClusterInfo, Progress, silent


def drain(cluster: ClusterInfo, report: ClusterReport,
          progress: Progress = silent) -> tuple[dict[str, str], dict[str, str]]:
    """Drain every failed compute node in Slurm, the reason naming its failed checks; ({node: reason}, errors)."""
    compute = {n.name for n in cluster.with_role("compute")}
    drained, errors = {}, {}
    targets = [n for n in report.nodes if n.verdict == "fail" and n.name in compute]
    if not targets:
        return drained, errors
    with Fleet(cluster) as fleet:
        fleet.connect([cluster.controller])
        for node in targets:
            failed = failed_checks(report, node.name)
            outcome = fleet.run(cluster.controller.name, slurm_checks.drain_command(node.name, failed), 30)
            if outcome.ok:
                drained[node.name] = slurm_checks.drain_reason(failed)
                progress(f"drained {node.name}")
            else:
                errors[node.name] = outcome.error or outcome.stderr.strip() or f"exit {outcome.rc}"
    return drained, errors


def failed_checks(report: ClusterReport, node: str) -> Sequence[str]:
    """The ids of a node's failed checks, once each, in report order."""
    found = next((n for n in report.nodes if n.name == node), None)
    return list(dict.fromkeys(c.check for c in found.checks if c.verdict == "fail")) if found else []
