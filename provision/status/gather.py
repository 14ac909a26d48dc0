"""Gather a cluster's status at once: one SSH command per running node (what it runs and, on compute nodes, the
health program's last pass), one query to slurmctld for every node, beside them; the certify reports from the
state. Nodes the provider does not report running are not asked anything."""
from __future__ import annotations

import shlex
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from provision.node import health, software as node_software
from provision.node.health import NodeHealth
from provision.node.software import NodeSoftware
from provision.records import ClusterInfo, NodeInfo
from provision.remote.commands import CommandResult, run_across, run_on
from provision.status import alerts, certified, slurm
from provision.status.records import UP, CertifyVerdict, ClusterStatus, NodeStatus, SlurmView

ASK_TIMEOUT_S = 20.0
HEALTH_MARK = "@@ health record"  # the line between a node's software and its health record


def gather(cluster: ClusterInfo, reports_dir: Path, health_enabled: bool = True,
           prometheus: str | None = None) -> ClusterStatus:
    """Every node's status now, and the alerts active in `prometheus` (its URL; None: monitoring is off, nothing is
    asked); a source that cannot be read is said in the record, never raised."""
    up = [n for n in cluster.nodes if n.address and n.state in UP]
    with ThreadPoolExecutor(max_workers=2) as pool:
        slurm_view = pool.submit(_slurm, cluster, up)
        active = pool.submit(alerts.read, cluster, prometheus) if prometheus else None
        answers = {r.node: r for r in run_across(cluster, up, _node_command(health_enabled), runner=_bounded)}
        view = slurm_view.result()
    verdicts = certified.last_verdicts(reports_dir, [n.name for n in cluster.nodes])
    nodes = tuple(_node_status(node, answers.get(node.name), view, verdicts.get(node.name), health_enabled)
                  for node in cluster.nodes)
    return ClusterStatus(cluster=cluster, nodes=nodes, slurm=view, health_enabled=health_enabled,
                         alerts=active.result() if active else None)


def _slurm(cluster: ClusterInfo, up: list[NodeInfo]) -> SlurmView:
    """slurmctld's view, or why there is none (the controller is not running: nothing is asked)."""
    controller = cluster.controller
    if controller not in up:
        return SlurmView(error=f"the controller {controller.name} is {controller.state}: Slurm was not asked",
                         asked=controller.name)
    return slurm.read(cluster)


def _node_command(health_enabled: bool) -> str:
    """What a node is asked: its software, then (where the health program runs) its last pass record."""
    if not health_enabled:
        return node_software.COMMAND
    record = shlex.quote(health.STATE_DIR + "/last.json")
    return (f"{node_software.COMMAND}; echo {shlex.quote(HEALTH_MARK)}; cat {record} 2>&1; "
            f"echo \"{HEALTH_MARK} exit $?\"")


def _bounded(cluster: ClusterInfo, node: NodeInfo, command: str) -> CommandResult:
    return run_on(cluster, node, command, timeout=ASK_TIMEOUT_S)


def _node_status(node: NodeInfo, answer: CommandResult | None, view: SlurmView, verdict: CertifyVerdict | None,
                 health_enabled: bool) -> NodeStatus:
    """One node's record from what each source said about it."""
    software = node_health = None
    why = getattr(answer, "error", None)  # the node could not be reached, or did not answer in time
    if why:
        software = NodeSoftware(node.name, error=why)
        node_health = NodeHealth(node.name, None, error=why) if health_enabled and node.has_role("compute") else None
    elif answer is not None:
        software_part, health_part = split_answer(answer)
        software = node_software.parse(software_part)
        if health_enabled and node.has_role("compute"):
            node_health = health.parse(health_part)
    return NodeStatus(node=node, slurm=view.nodes.get(node.name), health=node_health, certify=verdict,
                      software=software)


def split_answer(answer: CommandResult) -> tuple[CommandResult, CommandResult]:
    """A node's answer as two: its software lines, and its health record as `cat` ended (exit status, output)."""
    head, mark, tail = answer.stdout.partition(HEALTH_MARK + "\n")
    if not mark:  # unreachable, or the health part was not asked
        return answer, CommandResult(answer.node, answer.rc or 1, "", answer.stderr or "no health record read")
    record, _, rc = tail.rpartition(HEALTH_MARK + " exit ")
    code = int(rc.strip()) if rc.strip().isdigit() else 1
    software = CommandResult(answer.node, answer.rc, head, answer.stderr)
    return software, CommandResult(answer.node, code, record if code == 0 else "", record if code else "")
