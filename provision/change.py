"""A change to a running cluster: which nodes the spec adds, removes or changes against the nodes the cluster has,
and which lines of the cluster-wide files (slurm.conf, gres.conf, /etc/hosts) that rewrites.

`up` records the nodes the cluster has in the state document `applied` (after its nodes stage, and again once a
removal is done); `plan` and `up` compare the spec's planned nodes with it. Nothing here changes anything.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field

from provision import hostlist, slurm_layout
from provision.hardware import NodeHardware
from provision.records import ClusterInfo, NodeInfo
from provision.state import ClusterState

APPLIED = "applied"  # state document: the nodes the cluster has, as the provider described them
COMPARED = ("group", "roles", "gpu_model", "gpu_count", "partition", "address")  # what makes a node "changed"
ACTIONS = ("add", "remove", "change", "unchanged")
NODE_FIELDS = (("cpus", "CPUs"), ("real_memory", "RealMemory"), ("gres", "Gres"))  # as slurm.conf.j2 names them


@dataclass(frozen=True)
class NodeChange:
    """One node and what `up` would do to it; `details` say what differs for a changed node."""

    name: str
    action: str  # one of ACTIONS
    group: str
    details: tuple[str, ...] = ()


@dataclass
class ChangePlan:
    """The difference between the nodes a cluster has and the nodes its spec asks for."""

    running: bool  # False: nothing was ever applied, every node is an add
    nodes: list[NodeChange] = field(default_factory=list)
    files: dict[str, list[str]] = field(default_factory=dict)  # file -> its changed lines, "-old" / "+new"
    hourly_before: float | None = None
    hourly_after: float | None = None

    def names(self, action: str) -> list[str]:
        """The nodes with this action, in node order."""
        return [n.name for n in self.nodes if n.action == action]

    @property
    def changed(self) -> bool:
        """Whether `up` would change anything about the nodes or the cluster-wide files."""
        return any(n.action != "unchanged" for n in self.nodes) or bool(self.files)

    def summary(self) -> str:
        """One line: 'N to add, M to remove, K to change, U unchanged', or 'no changes'."""
        if not self.changed:
            return "no changes: the cluster has exactly the spec's nodes"
        counts = {a: len(self.names(a)) for a in ACTIONS}
        return (f"{counts['add']} to add, {counts['remove']} to remove, {counts['change']} to change, "
                f"{counts['unchanged']} unchanged")

    def as_dict(self) -> dict:
        """JSON-ready form."""
        return {"running": self.running, "changed": self.changed, "summary": self.summary(),
                "nodes": [asdict(n) for n in self.nodes], "files": self.files,
                "hourly_cost_usd_before": self.hourly_before, "hourly_cost_usd_after": self.hourly_after}


def load_applied(state: ClusterState) -> list[NodeInfo] | None:
    """The nodes the cluster has, as last recorded by `up`; None when none were recorded."""
    document = state.read(APPLIED) if state.exists() else None
    if document is None:
        return None
    return [NodeInfo.model_validate(raw) for raw in document.get("nodes", [])]


def save_applied(state: ClusterState, nodes: Iterable[NodeInfo]) -> None:
    """Record the nodes the cluster has now (0600, atomic)."""
    state.write(APPLIED, {"nodes": [n.model_dump(mode="json") for n in nodes]})


def diff_nodes(old: list[NodeInfo] | None, new: list[NodeInfo]) -> list[NodeChange]:
    """Per node: add, remove, change (with what differs) or unchanged; the spec's nodes first, then removals."""
    before = {n.name: n for n in old or []}
    out = []
    for node in new:
        previous = before.get(node.name)
        if previous is None:
            out.append(NodeChange(node.name, "add", node.group))
            continue
        details = tuple(_difference(key, getattr(previous, key), getattr(node, key)) for key in COMPARED
                        if _differs(key, getattr(previous, key), getattr(node, key)))
        out.append(NodeChange(node.name, "change" if details else "unchanged", node.group, details))
    names = {n.name for n in new}
    out += [NodeChange(n.name, "remove", n.group) for n in old or [] if n.name not in names]
    return out


def unfinished(changes: list[NodeChange], deployed: set[str] | None, held: Iterable[str]) -> list[NodeChange]:
    """Nodes an interrupted change created but did not finish count as still to add: not deployed yet, or held out
    of service until certify passes on them."""
    out, held = [], set(held)  # a set: 10,000 nodes joining are 10,000 lookups, not 10,000 scans
    for item in changes:
        if item.action in ("unchanged", "change") and deployed is not None and item.name not in deployed:
            item = NodeChange(item.name, "add", item.group, item.details + ("created; not deployed yet",))
        elif item.action in ("unchanged", "change") and item.name in held:
            item = NodeChange(item.name, "add", item.group, item.details + ("held until certify passes",))
        out.append(item)
    return out


def _differs(key: str, before: object, after: object) -> bool:
    """Whether a compared field changed; an address the spec leaves to the provider (None) never counts."""
    if key == "address" and after is None:
        return False
    return before != after


def _difference(key: str, before: object, after: object) -> str:
    """'gpu_count 0 -> 8'."""
    show = ",".join(before) if isinstance(before, tuple) else before
    then = ",".join(after) if isinstance(after, tuple) else after
    return f"{key} {show} -> {then}"


def file_lines(cluster: ClusterInfo, hardware: Mapping[str, NodeHardware]) -> dict[str, list[str]]:
    """The lines of the cluster-wide files that follow the node set (what the roles render from the inventory)."""
    nodes = [f"NodeName={e['names']}" + "".join(f" {name}={e[key]}" for key, name in NODE_FIELDS if key in e)
             + ("" if "cpus" in e else " (CPUs and RealMemory: read from the node at preflight)")
             for e in slurm_layout.node_entries(cluster, hardware)]
    partitions = [f"PartitionName={p['name']} Nodes={p['nodes']} Default={'YES' if p['default'] else 'NO'}"
                  for p in slurm_layout.partition_entries(cluster, hardware)]
    gres = [f"NodeName={g['names']} Name=gpu Type={g['type']} Count={g['count']}"
            for g in slurm_layout.gres_nodes(cluster)]
    hosts = [f"{n.address or '<address at creation>'} {n.name}" for n in cluster.nodes]
    return {"slurm.conf": nodes + partitions, "gres.conf": gres, "/etc/hosts": hosts}


def diff_files(old: ClusterInfo | None, new: ClusterInfo, hardware: Mapping[str, NodeHardware]) -> dict[str, list[str]]:
    """file -> ['-line', '+line', ...] for each file whose node-dependent lines change; {} when none do."""
    if old is None:
        return {}
    before, after = file_lines(old, hardware), file_lines(new, hardware)
    out = {}
    for name in after:
        lines = [line for line in difflib.ndiff(before[name], after[name]) if line[:1] in "+-"]
        if lines:
            out[name] = [line[0] + line[2:] for line in lines]
    return out


def refusal(changes: list[NodeChange], old: list[NodeInfo] | None, new: list[NodeInfo]) -> str | None:
    """Why `up` must not carry this change out (the controller or every compute node removed), or None."""
    if not old:
        return None
    removed = {c.name for c in changes if c.action == "remove"}
    controllers = [n.name for n in old if n.has_role("controller") and n.name in removed]
    if controllers:
        return (f"the spec removes the controller {', '.join(controllers)} from the running cluster; a cluster "
                "cannot change its controller in place")
    if any(n.has_role("compute") for n in old) and not any(n.has_role("compute") for n in new):
        return "the spec removes every compute node of the running cluster; keep at least one"
    return None


def compressed(names: Iterable[str]) -> str:
    """A hostlist expression of names (cn[01-04]), for messages and Slurm commands."""
    return hostlist.compress(list(names))
