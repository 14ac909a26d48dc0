"""A change to a running cluster: which nodes the spec adds, removes or changes against the nodes the cluster has,
which settings change on which nodes (provision.settings), and the unified diff of the cluster-wide files
(slurm.conf, gres.conf, /etc/hosts) that follows.

`up` records the nodes the cluster has in the state document `applied` (after its nodes stage, and again once a
removal is done) and what a whole deploy applied in `settings`; `plan` and `up` compare the spec with both. Nothing
here changes anything.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field

from provision import hostlist
from provision.node.hardware import NodeHardware
from provision.records import ClusterInfo, NodeInfo
from provision.settings.diff import SettingChange, by_node, restarts
from provision.slurm import layout
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
    files: dict[str, list[str]] = field(default_factory=dict)  # file -> its unified diff, line by line
    settings: list[SettingChange] = field(default_factory=list)  # what the last deploy applied -> what up renders
    settings_recorded: bool = True  # False: a deployed cluster whose last deploy's settings are not recorded
    hourly_before: float | None = None
    hourly_after: float | None = None

    def names(self, action: str) -> list[str]:
        """The nodes with this action, in node order."""
        return [n.name for n in self.nodes if n.action == action]

    @property
    def changed(self) -> bool:
        """Whether `up` would change anything: nodes, settings, the cluster-wide files, or record what it applied."""
        return (any(n.action != "unchanged" for n in self.nodes) or bool(self.files) or bool(self.settings)
                or not self.settings_recorded)

    @property
    def notes(self) -> list[str]:
        """What the plan cannot show in its tables."""
        return [] if self.settings_recorded else [UNRECORDED]

    @property
    def restarts(self) -> list[str]:
        """The daemons the setting changes restart."""
        return restarts(self.settings)

    def summary(self) -> str:
        """One line: 'N to add, M to remove, K to change, U unchanged; S settings change', or 'no changes'."""
        if not self.changed:
            return "no changes: the cluster has exactly the spec's nodes and settings"
        counts = {a: len(self.names(a)) for a in ACTIONS}
        line = (f"{counts['add']} to add, {counts['remove']} to remove, {counts['change']} to change, "
                f"{counts['unchanged']} unchanged")
        if self.settings:
            line += f"; {len(self.settings)} setting(s) change"
            line += f", restarting {', '.join(self.restarts)}" if self.restarts else ""
        return "; ".join([line, *self.notes])

    def as_dict(self) -> dict:
        """JSON-ready form."""
        return {"running": self.running, "changed": self.changed, "summary": self.summary(),
                "nodes": [asdict(n) for n in self.nodes], "files": self.files,
                "settings": [s.as_dict() for s in self.settings], "settings_recorded": self.settings_recorded,
                "restarts": self.restarts,
                "hourly_cost_usd_before": self.hourly_before, "hourly_cost_usd_after": self.hourly_after}


UNRECORDED = ("the settings the last deploy applied are not recorded (deployed by an older gpu-provision): `up` "
              "deploys once and records them")


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


def with_settings(changes: list[NodeChange], settings: list[SettingChange]) -> list[NodeChange]:
    """Nodes a setting change reaches are changed too, their details naming the variables."""
    names = by_node(settings)
    out = []
    for item in changes:
        if item.name in names and item.action in ("unchanged", "change"):
            detail = f"settings: {', '.join(names[item.name])}"
            item = NodeChange(item.name, "change", item.group, item.details + (detail,))
        out.append(item)
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


def file_lines(cluster: ClusterInfo, hardware: Mapping[str, NodeHardware],
               settings: Mapping[str, object] | None = None) -> dict[str, list[str]]:
    """The lines of the cluster-wide files that follow the node set and, given the inventory's common variables, the
    spec's settings (what the roles render from the inventory)."""
    nodes = [f"NodeName={e['names']}" + "".join(f" {name}={e[key]}" for key, name in NODE_FIELDS if key in e)
             + ("" if "cpus" in e else " (CPUs and RealMemory: read from the node at preflight)")
             for e in layout.node_entries(cluster, hardware)]
    partitions = [f"PartitionName={p['name']} Nodes={p['nodes']} Default={'YES' if p['default'] else 'NO'}"
                  for p in layout.partition_entries(cluster, hardware)]
    gres = [f"NodeName={g['names']} Name=gpu Type={g['type']} Count={g['count']}"
            for g in layout.gres_nodes(cluster)]
    hosts = [f"{n.address or '<address at creation>'} {n.name}" for n in cluster.nodes]
    return {"slurm.conf": settings_lines(settings or {}) + nodes + partitions, "gres.conf": gres, "/etc/hosts": hosts}


def settings_lines(common: Mapping[str, object]) -> list[str]:
    """slurm.conf's lines that follow the spec's settings, as the slurm role's template writes them: the health
    program's and software.slurm.config's."""
    lines = []
    if common.get("slurm_health_enabled"):
        lines += [f"HealthCheckInterval={common.get('slurm_health_interval')}",
                  f"HealthCheckNodeState={common.get('slurm_health_node_state')}"]
    if common.get("slurm_active_enabled"):
        lines += ["PreemptType=preempt/partition_prio", "PreemptMode=CANCEL",
                  f"PartitionName={common.get('slurm_active_partition', 'gp-active')} (active checks every "
                  f"{common.get('slurm_active_interval')} s, {common.get('slurm_active_level')}; preempted by every "
                  "other partition)"]
    parameters = common.get("slurm_conf_parameters") or {}
    return lines + [f"{k}={v}" for k, v in sorted(parameters.items())] if isinstance(parameters, dict) else lines


def diff_files(old: ClusterInfo | None, new: ClusterInfo, hardware: Mapping[str, NodeHardware],
               before: Mapping[str, object] | None = None, after: Mapping[str, object] | None = None,
               ) -> dict[str, list[str]]:
    """file -> its unified diff (difflib, one line of context) for each file whose lines that follow the nodes and
    settings change; {} when none do. `before`/`after`: the inventory's common variables then and now."""
    if old is None:
        return {}
    then, now = file_lines(old, hardware, before), file_lines(new, hardware, after)
    out = {}
    for name in now:
        lines = list(difflib.unified_diff(then[name], now[name], f"{name} (applied)", f"{name} (spec)", n=1,
                                          lineterm=""))
        if lines:
            out[name] = lines
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
