"""The settings that differ between what the last deploy applied and what `up` would render now, variable by variable,
each with the nodes it reaches and the daemons its change restarts (provision.settings.reach).

Only nodes in both count: a node the spec adds gets every setting with its first deploy, a node it removes none
(the node table of the plan says so).
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from provision import hostlist
from provision.settings.applied import GROUPS, Settings
from provision.settings.reach import Reach, hosts_matching, reach

CONNECTION = "ansible_"  # how Ansible reaches a host (hosts.yml): no role needs to read it for it to matter


@dataclass(frozen=True)
class SettingChange:
    """One variable whose value changes on some nodes: before and after (None: not set), where it goes, what it
    restarts."""

    variable: str
    before: Any
    after: Any
    nodes: tuple[str, ...]  # the nodes the change reaches, in inventory order
    roles: tuple[str, ...]  # the roles that read the variable
    restarts: tuple[str, ...]  # daemons the roles' handlers restart for it

    @property
    def hostlist(self) -> str:
        """The nodes as a hostlist expression (compute[01-03],ctl01)."""
        return hostlist.compress(self.nodes)

    @property
    def entries(self) -> list[str]:
        """For a list of named records (users, accounts, QoS), what changes entry by entry; empty for other values."""
        return named_entry_changes(self.before, self.after)

    def as_dict(self) -> dict:
        """JSON-ready form."""
        return {"variable": self.variable, "before": self.before, "after": self.after, "nodes": list(self.nodes),
                "hostlist": self.hostlist, "roles": list(self.roles), "restarts": list(self.restarts),
                "entries": self.entries}


def named_entry_changes(before: Any, after: Any) -> list[str]:
    """'carol: removed', 'dave: added', 'physics: max_jobs 20 -> 30' for two lists of mappings that each have a
    name (the spec's users, accounts, QoS); empty when either value is anything else."""
    old, new = _by_name(before or []), _by_name(after or [])
    if old is None or new is None:
        return []
    out = [f"{name}: removed" for name in old if name not in new]
    out += [f"{name}: added" for name in new if name not in old]
    for name in (n for n in new if n in old and old[n] != new[n]):
        fields = dict.fromkeys([*old[name], *new[name]])
        out.append(f"{name}: " + ", ".join(f"{key} {_compact(old[name].get(key))} -> {_compact(new[name].get(key))}"
                                           for key in fields if old[name].get(key) != new[name].get(key)))
    return out


def _by_name(value: Any) -> dict[str, Mapping] | None:
    if not isinstance(value, list) or not all(isinstance(v, Mapping) and isinstance(v.get("name"), str) for v in value):
        return None
    return {v["name"]: v for v in value}


def _compact(value: Any) -> str:
    return "(unset)" if value is None else value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def compare(before: Settings, after: Settings) -> list[SettingChange]:
    """Every variable that differs on a node in both, common variables first (by name), then hosts' own."""
    groups_of = {host: after.groups_of(host) for host in after.hosts if host in before.hosts}
    return _common(before, after, groups_of) + _own(before, after, groups_of)


def _common(before: Settings, after: Settings, groups_of: Mapping[str, Sequence[str]]) -> list[SettingChange]:
    """Variables every host reads: one change each, reaching the hosts of the plays that read it."""
    out = []
    for name in sorted(set(before.common) | set(after.common)):
        old, new = before.common.get(name), after.common.get(name)
        if old != new:
            found = reach(name)
            out.append(SettingChange(name, old, new, _reached(found, list(groups_of), groups_of), found.roles,
                                     found.restarts))
    return out


def _own(before: Settings, after: Settings, groups_of: Mapping[str, Sequence[str]]) -> list[SettingChange]:
    """Hosts' own variables: one change per variable and (before, after) pair, so a group of identical nodes is one."""
    pairs: dict[tuple[str, str, str], list[str]] = {}
    values: dict[tuple[str, str, str], tuple[Any, Any]] = {}
    for host in groups_of:
        old, new = before.hosts[host], after.hosts[host]
        for name in sorted(set(old) | set(new)):
            if old.get(name) != new.get(name):
                key = (name, repr(old.get(name)), repr(new.get(name)))
                pairs.setdefault(key, []).append(host)
                values[key] = (old.get(name), new.get(name))
    out = []
    for key, hosts in pairs.items():
        found = reach(key[0])
        nodes = _reached(found, hosts, groups_of) if not found.via_hostvars else _reached(found, list(groups_of),
                                                                                             groups_of)
        out.append(SettingChange(key[0], *values[key], tuple(nodes), found.roles, found.restarts))
    return out


def _reached(found: Reach, hosts: Sequence[str], groups_of: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """The hosts among `hosts` that a play running a role that reads the variable selects; every one of them for how
    Ansible connects (ansible_*) and for a host's groups (they decide which plays run there)."""
    if found.variable.startswith(CONNECTION) and not found.roles or found.variable == GROUPS:
        return tuple(hosts)
    selected = {h for pattern in found.patterns for h in hosts_matching(pattern, groups_of)}
    return tuple(h for h in hosts if h in selected)


def by_node(changes: Sequence[SettingChange]) -> dict[str, list[str]]:
    """node -> the variables that change there, in the order of `changes`."""
    out: dict[str, list[str]] = {}
    for item in changes:
        for node in item.nodes:
            names = out.setdefault(node, [])
            if item.variable not in names:
                names.append(item.variable)
    return out


def restarts(changes: Sequence[SettingChange]) -> list[str]:
    """Every daemon the changes restart, once, in first-seen order."""
    return list(dict.fromkeys(d for item in changes for d in item.restarts))
