"""Each node's last deploy result, kept in the cluster's state (the document DOCUMENT): what deploy's series are
rendered from (provision.deploy.metrics).

A run of some hosts only (--limit, --retry-failed, a rolling batch) says nothing about the others: its hosts' entries
are replaced and every other node keeps its own, so a node an earlier run failed stays failed until a run converges
it. Nodes no longer in the cluster are dropped. A check-mode run changes nothing and records nothing.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from provision.deploy.records import DeployResult
from provision.records import ClusterInfo
from provision.state import ClusterState

DOCUMENT = "deploy_nodes"  # {node: {"ok": bool, "at": unix time}}
NOT_CONVERGED = ("failed", "unreachable")


@dataclass(frozen=True)
class NodeDeploy:
    """One node's last deploy: whether it converged, and when that run ended (Unix time)."""

    ok: bool
    at: float

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"ok": self.ok, "at": self.at}

    @classmethod
    def from_dict(cls, data: Any) -> NodeDeploy | None:
        """Rebuild from `to_dict` output; None for an entry that is not one (edited by hand)."""
        if not isinstance(data, dict) or not isinstance(data.get("ok"), bool) \
                or not isinstance(data.get("at"), (int, float)) or isinstance(data.get("at"), bool):
            return None
        return cls(data["ok"], float(data["at"]))


def read(state: ClusterState) -> dict[str, NodeDeploy]:
    """The nodes' last results as recorded (none before the first deploy); entries that are not one are skipped."""
    document = state.read(DOCUMENT) or {}
    found = {str(node): NodeDeploy.from_dict(entry) for node, entry in document.items()}
    return {node: entry for node, entry in found.items() if entry is not None}


def merged(known: Mapping[str, NodeDeploy], result: DeployResult, ended: float) -> dict[str, NodeDeploy]:
    """The known results with this run's hosts replaced by what the run did to them."""
    found = dict(known)
    for host in result.hosts:
        found[host.host] = NodeDeploy(host.status not in NOT_CONVERGED, ended)
    return found


def in_cluster(nodes: Mapping[str, NodeDeploy], cluster: ClusterInfo) -> dict[str, NodeDeploy]:
    """Only the nodes the cluster has now, in the cluster's order."""
    return {n.name: nodes[n.name] for n in cluster.nodes if n.name in nodes}


def record(state: ClusterState, cluster: ClusterInfo, result: DeployResult, ended: float) -> dict[str, NodeDeploy]:
    """Merge a run into the recorded results and write them back (0600); the merged results. A check-mode run
    records nothing and gives the recorded results as they are."""
    known = in_cluster(read(state), cluster)
    if result.check_mode:
        return known
    nodes = in_cluster(merged(known, result, ended), cluster)
    state.write(DOCUMENT, {node: entry.to_dict() for node, entry in nodes.items()})
    return nodes
