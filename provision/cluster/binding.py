"""A cluster is bound to the spec file it was last applied from.

`up` (and a `deploy` that is not --check) records the absolute path of its spec file with the spec copy
(provision.cluster.clusters.remember_spec). A command that changes the cluster (`up`, `deploy`, `down`) given another
file whose `name:` is the cluster's says so and shows the difference between the spec copy and that file (a unified
diff).
Removing nodes or changing the configuration from such a file needs `--rebind`; without it the command stops before
anything changes (UsageError, exit 2) with one line naming both files and the flag. Without a difference the file is
the same spec: the note alone, and the cluster is bound to the new path when it is applied. An `up` from another file
that only adds nodes (every node the cluster has stays exactly as it is, nothing else in the spec differs) needs no
flag either. Naming the cluster instead of a file means its spec copy: the bound file.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from provision.cluster import change, clusters
from provision.errors import ProvisionError, UsageError
from provision.records import Progress, silent
from provision.spec.loader import structure_findings
from provision.spec.model import ClusterSpec
from provision.spec.reader import parse_yaml, read_text
from provision.spec.topology import planned_nodes
from provision.state import ClusterState

FLAG = "--rebind"
COMMANDS = ("up", "deploy", "down")
_GROUP_SIZE = {"count", "hosts", "addresses"}  # what a group changes when it only grows


@dataclass(frozen=True)
class Rebinding:
    """A command given another spec file than the one its cluster was last applied from."""

    cluster: str
    bound: Path  # the file the cluster was last applied from
    given: Path  # the file this command was given
    diff: tuple[str, ...]  # unified diff of the spec copy (as last applied) -> the given file; () for the same spec
    change: str  # what the given file does that needs the flag ("" when nothing does)
    refused: bool  # it needs the flag and was not given it

    def lines(self) -> list[str]:
        """The note, then the difference."""
        same = "" if self.diff else f"; {self.given.name} holds the same spec"
        return [f"cluster {self.cluster} was last applied from {self.bound}, not from {self.given}{same}",
                *self.diff]

    def error(self) -> UsageError:
        """The one line that stops the command."""
        return UsageError(f"{self.given}: {self.change} of cluster {self.cluster}, which was last applied from "
                          f"{self.bound} (the difference is above)",
                          hint=f"pass {FLAG} to apply {self.given} and bind the cluster to it, or use {self.bound}")


def check(spec: ClusterSpec, source: Path, command: str, rebind: bool = False) -> Rebinding | None:
    """The rebinding a command on `spec`, read from `source`, would do; None when the cluster has no nodes, no
    record of its file, or `source` is that file (or the spec copy itself)."""
    state = ClusterState.for_spec(spec)
    copy = state.path / clusters.SPEC_COPY
    if change.load_applied(state) is None or not copy.is_file():
        return None
    bound = clusters.bound_file(state)
    given = source.absolute()
    if bound is None or _same_file(given, bound) or _same_file(given, copy):
        return None
    old, new = read_text(copy), read_text(source)
    diff = tuple(difflib.unified_diff(old.splitlines(), new.splitlines(), f"{bound} (as last applied)", str(given),
                                      lineterm=""))
    needs = "" if not diff else _needs_flag(command, old, spec)
    return Rebinding(spec.name, bound, given, diff, needs, bool(needs) and not rebind)


def enforce(spec: ClusterSpec, source: Path, command: str, rebind: bool = False,
            progress: Progress = silent) -> Rebinding | None:
    """check(), its note and difference shown through `progress`, and the UsageError raised when it is refused."""
    found = check(spec, source, command, rebind)
    if found is not None:
        for line in found.lines():
            progress(line)
        if found.refused:
            raise found.error()
    return found


def _same_file(one: Path, other: Path) -> bool:
    """Whether two paths name one file (a link to it included)."""
    try:
        return one.resolve() == other.resolve()
    except OSError:
        return one == other


def _needs_flag(command: str, old_text: str, new: ClusterSpec) -> str:
    """What a command does with a different spec that needs the flag, or "" (an `up` that only adds nodes)."""
    if command == "down":
        return "`down` would take down every node"
    if command == "deploy":
        return "`deploy` would change the configuration"
    old = _spec_of(old_text)
    if old is None:
        return "`up` would change the cluster"
    kept = {n.name: n for n in planned_nodes(new)}
    gone = [n.name for n in planned_nodes(old) if n.name not in kept]
    if gone:
        return f"`up` would remove {change.compressed(gone)}"
    if any(kept[n.name] != n for n in planned_nodes(old)) or not _same_besides_sizes(old, new):
        return "`up` would change the configuration"
    return ""


def _same_besides_sizes(old: ClusterSpec, new: ClusterSpec) -> bool:
    """The specs differ in nothing but the size of their node groups (and groups added)."""
    if old.model_dump(exclude={"node_groups"}) != new.model_dump(exclude={"node_groups"}):
        return False
    groups = {g.name: g for g in new.node_groups}
    return all(g.name in groups and g.model_dump(exclude=_GROUP_SIZE) == groups[g.name].model_dump(exclude=_GROUP_SIZE)
               for g in old.node_groups)


def _spec_of(text: str) -> ClusterSpec | None:
    """The spec a copy holds, or None when it no longer reads as one (a copy from an older version)."""
    try:
        spec, _ = structure_findings(*parse_yaml(text, "spec copy"))
    except ProvisionError:
        return None
    return spec
