"""Preflight: reach every node over SSH in parallel and judge it before anything is installed."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from importlib import resources

from provision.adaptors import ssh
from provision.errors import ConnectionFailure
from provision.node import hardware, platforms
from provision.node.hardware import NodeHardware
from provision.preflight.judge import clock_check, judge, parse_facts, slurm_series
from provision.preflight.records import Check, NodeReport, PreflightReport, os_of
from provision.records import ClusterInfo, NodeInfo
from provision.remote.commands import ssh_target
from provision.state import ClusterState

DEFAULT_CONCURRENCY = 32
SLURM_ROLES = ("controller", "compute", "login")  # the nodes the slurm role runs on


def _probe_script() -> str:
    """The read-only fact probe shipped with the package."""
    return resources.files("provision.preflight").joinpath("probe.sh").read_text()


def check_node(cluster: ClusterInfo, node: NodeInfo, accept_new_host_keys: bool = False,
               timeout: float = 10.0) -> NodeReport:
    """Connect, read the node's facts and clock, and judge them; a connection failure is one failed check."""
    report = NodeReport(node.name, node.address)
    try:
        client = ssh.connect(ssh_target(cluster, node), accept_new_host_keys, timeout)
    except ConnectionFailure as exc:
        report.checks.append(Check("ssh", "fail", str(exc)))
        return report
    with client:
        report.checks.append(Check("ssh", "pass", f"{cluster.ssh_user}@{node.address} with the cluster key"))
        before = time.time()
        _, out, _ = ssh.run(client, "date +%s.%N", timeout)
        after = time.time()
        report.clock_offset_s = float(out.strip()) - (before + after) / 2 if out.strip() else None
        _, out, _ = ssh.run(client, f"sh -c {_quote(_probe_script())}", timeout * 3)
    report.facts = parse_facts(out)
    report.checks.extend(judge(node, report.facts, sandbox=cluster.sandbox))
    return report


def _quote(script: str) -> str:
    """Single-quote a script for sh -c."""
    return "'" + script.replace("'", "'\"'\"'") + "'"


def run_preflight(cluster: ClusterInfo, accept_new_host_keys: bool = False,
                  concurrency: int = DEFAULT_CONCURRENCY, timeout: float = 10.0,
                  slurm_source: str = "distribution") -> PreflightReport:
    """Check every node in parallel (bounded), then judge clocks against the controller and, when Slurm comes from
    the OS archive (`slurm_source`, the spec's software.slurm.source), that every Slurm node ships one Slurm series."""
    start = time.monotonic()
    workers = max(1, min(concurrency, len(cluster.nodes)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        reports = list(pool.map(lambda n: check_node(cluster, n, accept_new_host_keys, timeout), cluster.nodes))
    controller = next((r for r in reports if r.name == cluster.controller.name), None)
    reference = controller.clock_offset_s if controller else None
    for report in reports:
        if report.check("ssh").verdict == "pass":
            offset = None if reference is None or report.clock_offset_s is None else report.clock_offset_s - reference
            report.checks.append(clock_check(offset, cluster.controller.name))
    if slurm_source == "distribution":
        _judge_slurm_series(cluster, reports)
    return PreflightReport(reports, time.monotonic() - start)


def _judge_slurm_series(cluster: ClusterInfo, reports: list[NodeReport]) -> None:
    """Add a failed check to each Slurm node whose OS release ships another Slurm series than the controller's."""
    slurm_nodes = {n.name for n in cluster.nodes if any(n.has_role(r) for r in SLURM_ROLES)}
    found = {r.name: platforms.match(os_of(r.facts)) for r in reports if r.name in slurm_nodes and r.facts}
    checks = slurm_series({name: p for name, p in found.items() if p is not None}, cluster.controller.name)
    for report in reports:
        if report.name in checks:
            report.checks.append(checks[report.name])


def ensure_hardware(state: ClusterState, cluster: ClusterInfo, concurrency: int = DEFAULT_CONCURRENCY) -> list[str]:
    """Read and record the hardware of compute nodes that have none recorded (preflight was skipped).

    Returns the compute nodes whose hardware is still unknown (unreachable): Slurm's lines for them carry
    only what the spec says."""
    known = hardware.load(state)
    missing = [n for n in cluster.with_role("compute") if n.name not in known and n.address]
    if not missing:
        return []
    partial = cluster.model_copy(update={"nodes": tuple(missing)})
    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(missing)))) as pool:
        reports = list(pool.map(lambda n: check_node(partial, n), missing))
    hardware.record(state, PreflightReport(reports, 0.0).hardware())
    return [r.name for r in reports if NodeHardware.from_facts(r.facts) is None]
