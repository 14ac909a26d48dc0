"""`provision plan` on the terminal: what `up` would create, or what it would change on a running cluster.

Rows fold: a run of nodes whose names follow each other (compute0001, compute0002, ...) and that differ in nothing
else (the same action, group and detail, or addresses that follow each other too) is one row, its names a hostlist
such as compute[0001-9999]. A plan of 20,000 nodes draws a few hundred rows instead of 20,000; `--json` lists every
item and node.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.table import Table

from provision import hostlist
from provision.cli.output import out


@dataclass(frozen=True)
class Folded:
    """One row of a folded table: the first and last record of the run, and how it reads."""

    first: Any
    last: Any
    name: str  # a host name, or a hostlist expression of the run
    detail: str  # the detail every record shares, or the range the details follow
    size: int


def print_creation(result) -> None:
    """A new cluster: every resource `up` would create, runs of nodes folded."""
    table = Table("kind", "name", "detail", "USD/hour", title="plan")
    for row in fold(result.items, lambda i: i.name, lambda i: i.detail, lambda i: (i.kind, i.hourly_cost_usd)):
        cost = row.first.hourly_cost_usd
        table.add_row(row.first.kind, row.name, row.detail, "" if cost is None else f"{cost * row.size:.2f}")
    out.print(table)
    for note in result.notes:
        out.print(f"note: {note}")
    if result.hourly_cost_usd is not None:
        out.print(f"estimated cost: {result.hourly_cost_usd:.2f} USD/hour")


def print_change(diff) -> None:
    """A running cluster: per node (runs folded) what `up` would do, each setting that changes with the nodes it
    reaches and what it restarts, the unified diff of the cluster-wide files, the cost."""
    table = Table("node", "group", "action", "detail", title="plan: changes to the running cluster")
    for row in fold(diff.nodes, lambda n: n.name, lambda n: "; ".join(n.details), lambda n: (n.group, n.action)):
        table.add_row(row.name, row.first.group, row.first.action, row.detail)
    out.print(table)
    print_settings(diff)
    for name, lines in diff.files.items():
        out.print(f"{name}:")
        if lines:  # one print for them all: 20,000 lines of /etc/hosts are one write, not 20,000
            out.print("\n".join(f"  {line}" for line in lines))
    if diff.hourly_before is not None or diff.hourly_after is not None:
        before = "?" if diff.hourly_before is None else f"{diff.hourly_before:.2f}"
        after = "?" if diff.hourly_after is None else f"{diff.hourly_after:.2f}"
        out.print(f"estimated cost: {before} -> {after} USD/hour")
    out.print(diff.summary())


def print_settings(diff) -> None:
    """The settings that change (what the last deploy applied -> what the spec renders now), the nodes each reaches
    as a hostlist, and the daemons that restarts; a note when the last deploy's settings are not recorded."""
    if diff.settings:
        table = Table("setting", "before -> after", "nodes", "restarts", title="settings: last deploy -> spec")
        for row in fold(diff.settings, lambda s: s.hostlist, lambda s: f"{shown(s.before)} -> {shown(s.after)}",
                        lambda s: (s.variable, s.restarts)):
            table.add_row(row.first.variable, row.detail, row.name or "(no node reads it)",
                          ", ".join(row.first.restarts) or "-")
        out.print(table)
        for change in diff.settings:
            for entry in change.entries:  # a list of people, accounts or QoS: what changes in it, entry by entry
                out.print(f"  {change.variable}: {entry}")
    if diff.restarts:
        out.print(f"restarts: {', '.join(diff.restarts)}")
    for note in diff.notes:
        out.print(f"note: {note}")


def shown(value: object, width: int = 60) -> str:
    """A setting's value for the table: '(unset)', a string as it is, anything else as compact JSON; clipped."""
    text = "(unset)" if value is None else value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return text if len(text) <= width else text[:width - 1] + "…"


def fold(records: Sequence, name: Callable[[Any], str], detail: Callable[[Any], str],
         key: Callable[[Any], object]) -> list[Folded]:
    """Consecutive records with the same key whose names follow each other, and whose details are all the same or
    follow each other too, as one row each (linear: each record is compared with the one before it only)."""
    runs: list[_Run] = []
    for record in records:
        item = _Run(record, key(record), name(record), detail(record))
        if not (runs and runs[-1].take(item)):
            runs.append(item)
    return [run.folded() for run in runs]


class _Run:
    """A run being folded: its first record, its last, and whether the details are shared or follow each other."""

    def __init__(self, record, key: object, name: str, detail: str) -> None:
        self.first = self.last = record
        self.key, self.first_name, self.name, self.first_detail, self.detail = key, name, name, detail, detail
        self.size = 1
        self.shared: bool | None = None  # unknown until the second record

    def take(self, item: _Run) -> bool:
        """Add a single-record run to this one if it continues it."""
        if item.key != self.key or not hostlist.next_in_range(item.name, self.name):
            return False
        same = item.detail == self.detail
        shared = same if self.shared is None else self.shared
        if same != shared or not (same or hostlist.next_in_range(item.detail, self.detail)):
            return False
        self.last, self.name, self.detail, self.size, self.shared = item.first, item.name, item.detail, \
            self.size + 1, shared
        return True

    def folded(self) -> Folded:
        """The row: a hostlist of the names, the shared detail or the range of the details."""
        if self.size == 1:
            return Folded(self.first, self.last, self.name, self.detail, 1)
        detail = self.detail if self.shared else hostlist.span(self.first_detail, self.detail)
        return Folded(self.first, self.last, hostlist.span(self.first_name, self.name), detail, self.size)
