"""`provision health`: each compute node's last health pass (the node health program's record, read over SSH).

The program itself runs on the nodes (provision/certify/probe/nodehealth); this side only reads what it recorded.
"""
from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from provision.records import ClusterInfo
from provision.remote import CommandResult, run_across

STATE_DIR = "/var/lib/gpu-provision/health"  # the slurm role's slurm_health_state_dir


@dataclass(frozen=True)
class NodeHealth:
    """One node's last pass, or why there is none."""

    node: str
    ok: bool | None  # None: no record (not installed yet, node unreachable)
    failed: tuple[str, ...] = ()
    action: str = ""
    reason: str = ""
    started: str = ""
    seconds: float | None = None
    trigger: str = ""
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for --json."""
        return {**self.__dict__, "failed": list(self.failed)}


def parse(result: CommandResult) -> NodeHealth:
    """A node's last.json as its `cat` returned it."""
    if result.rc != 0:
        why = (result.stderr.strip() or f"exit {result.rc}").splitlines()[0]
        return NodeHealth(result.node, None, error="no health record yet" if "No such file" in why else why)
    try:
        data = json.loads(result.stdout)
        failed = tuple(f"{c['check']}[{c['subject']}]" if c.get("subject") else c["check"]
                       for c in data["checks"] if c["verdict"] == "fail")
        return NodeHealth(result.node, bool(data["ok"]), failed, str(data.get("action", "")),
                          str(data.get("reason", "")), str(data.get("started", "")), data.get("seconds"),
                          str(data.get("trigger", "")))
    except (ValueError, KeyError, TypeError) as exc:
        return NodeHealth(result.node, None, error=f"unreadable health record ({exc})")


def last_passes(cluster: ClusterInfo, state_dir: str = STATE_DIR) -> list[NodeHealth]:
    """Every compute node's last pass, read at once."""
    nodes = cluster.with_role("compute")
    return [parse(r) for r in run_across(cluster, nodes, f"cat {shlex.quote(state_dir + '/last.json')}")]
