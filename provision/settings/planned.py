"""What `up` would give the nodes now: the inventory rendered from the spec for the cluster as its provider plans it,
read back as settings, and compared with what the last whole deploy applied.

The cluster is the provider's plan (`Provider.planned`: on a sandbox, the subnet it chose and recorded) with what only
creation told about the nodes that exist (their address; on AWS their vCPUs) taken from the nodes the cluster has,
and the provider's facts from the record (an AWS jump host is known only once instances run). So `plan` renders what
`up` renders, without a call to the provider.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from provision import hostlist, inventory
from provision.cluster import change
from provision.records import ClusterInfo, NodeInfo
from provision.settings import applied
from provision.settings.applied import Settings
from provision.settings.diff import SettingChange, compare as compare_settings, restarts
from provision.spec.model import ClusterSpec
from provision.state import ClusterState

_LEARNT = ("address", "cpus")  # what a provider may learn about a node only when it creates it


@dataclass
class Comparison:
    """The settings now against the record: the record (None: never recorded), now, and what differs."""

    recorded: Settings | None
    now: Settings
    changes: list[SettingChange] = field(default_factory=list)

    @property
    def differs(self) -> bool:
        """Whether a deploy would give the nodes anything the record does not have (or there is no record)."""
        return self.recorded is None or self.recorded.digest != self.now.digest


def planned_cluster(planned: ClusterInfo, old: list[NodeInfo] | None, recorded: Settings | None) -> ClusterInfo:
    """The cluster the spec asks for as its provider plans it (`Provider.planned`), as `up` would render it for the
    nodes the cluster has (`old`)."""
    twins = {n.name: n for n in old or []}  # by name: 20,000 nodes in one pass
    nodes = tuple(_learnt(n, twins.get(n.name)) for n in planned.nodes)
    facts = {**(recorded.provider_vars if recorded else {}), **planned.vars}
    return planned.model_copy(update={"nodes": nodes, "vars": facts})


def _learnt(node: NodeInfo, twin: NodeInfo | None) -> NodeInfo:
    """A planned node with what its running twin's provider learnt at creation, where the plan leaves it open."""
    if twin is None:
        return node
    update = {k: getattr(twin, k) for k in _LEARNT if getattr(node, k) is None and getattr(twin, k) is not None}
    return node.model_copy(update=update) if update else node


def settings_now(spec: ClusterSpec, cluster: ClusterInfo) -> Settings:
    """The settings the inventory `up` would render for this cluster carries."""
    return applied.from_inventory(inventory.render(spec, cluster), cluster.vars)


def compare(spec: ClusterSpec, cluster: ClusterInfo, recorded: Settings | None) -> Comparison:
    """The settings now against the record, variable by variable (only when their digests differ)."""
    now = settings_now(spec, cluster)
    result = Comparison(recorded, now)
    if recorded is not None and result.differs:
        result.changes = compare_settings(recorded, now)
    return result


def pending(spec: ClusterSpec, state: ClusterState, planned: Callable[[], ClusterInfo]) -> str | None:
    """Why a deployed cluster needs a deploy for its settings: which change, on which nodes, what that restarts; None
    when the last whole deploy applied what `up` would render now (or the cluster was never deployed). `planned`:
    the provider's plan of the cluster (`Provider.planned`), asked for only when there is something to compare."""
    old = change.load_applied(state)
    if old is None or state.stage_nodes("deploy") is None:
        return None
    recorded = applied.load(state)
    compared = compare(spec, planned_cluster(planned(), old, recorded), recorded)
    if not compared.differs:
        return None
    if recorded is None:
        return change.UNRECORDED
    if not compared.changes:
        return None  # only nodes joining or leaving: the node set decides
    names = ", ".join(dict.fromkeys(c.variable for c in compared.changes))
    nodes = hostlist.compress(dict.fromkeys(n for c in compared.changes for n in c.nodes)) or "no node"
    daemons = restarts(compared.changes)
    return f"the spec changes {names} on {nodes}" + (f"; restarts {', '.join(daemons)}" if daemons else "")
