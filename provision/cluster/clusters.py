"""The clusters this machine knows: a copy of the spec each was brought up from (so a cluster can be named instead of
its spec file), and one summary line per cluster for `provision list`. Reads only the state; no SSH, no cloud call.
"""
from __future__ import annotations

import difflib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from provision.certify.records import RunScope, names as node_names
from provision.spec.reader import read_text
from provision.state import ClusterState, state_root, write_private

if TYPE_CHECKING:  # a type only: naming and listing clusters (shell completion too) loads no spec model
    from provision.spec.model import ClusterSpec

SPEC_COPY = "spec.yaml"  # in the cluster's state directory, 0600
SOURCE = "source"  # state document: the absolute path of the spec file the cluster was last applied from
NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}$")  # a cluster name as the spec allows it (spec.model)
UP, DOWN = "up", "down"


@dataclass(frozen=True)
class ClusterSummary:
    """One known cluster: where its spec copy is, its provider, how many nodes it has, its last certify verdict, and
    whether it is up or was taken down (`down` forgets its nodes but keeps the spec copy and the reports, so the
    name still brings it back with `provision up NAME`)."""

    name: str
    provider: str
    nodes: int
    certified: str  # the last full run's verdict and level ("pass (quick)"), a newer partial run's after it, or "never"
    spec: str
    state: str = UP  # up: nodes are recorded; down: none (taken down, or its first up created none)

    def as_dict(self) -> dict:
        """JSON-ready form."""
        return asdict(self)


def remember_spec(spec: ClusterSpec, path: Path) -> Path:
    """Keep the spec file a cluster is applied from in its state (0600), so its name finds it later, and bind the
    cluster to that file (its absolute path, state document `source`; provision.cluster.binding). The spec copy
    itself, named instead of a file, leaves the binding as it is."""
    state = ClusterState.for_spec(spec)
    state.ensure()
    copy = state.path / SPEC_COPY
    if path.absolute() == copy.absolute():
        return copy
    text = read_text(path)  # read within the spec's limits, as at load
    state.write(SOURCE, {"path": str(path.absolute())})
    return write_private(copy, text)


def bound_file(state: ClusterState) -> Path | None:
    """The spec file a cluster was last applied from; None when none is recorded (a cluster of an older version)."""
    recorded = (state.read(SOURCE) or {}).get("path") if state.exists() else None
    return Path(recorded) if isinstance(recorded, str) and recorded else None


def existing(root: Path | None = None) -> set[str]:
    """The names of the clusters that have nodes on this machine (under the state root): `up` recorded them and no
    `down` removed them."""
    folder = state_root(root) / "clusters"
    return {p.parent.name for p in folder.glob("*/applied.json")} if folder.is_dir() else set()


def free_name(base: str, root: Path | None = None) -> str:
    """`base` when no cluster of that name has nodes here, else the first free `base-2`, `base-3`, ... (a name stays
    within 31 characters)."""
    taken = existing(root)
    if base not in taken:
        return base
    return next(name for n in range(2, 100_000) if (name := f"{base[:30 - len(str(n))]}-{n}") not in taken)


def resolve(argument: Path, root: Path | None = None) -> Path:
    """The spec file an argument means: the file when there is one, else the spec copy of the cluster it names (a
    folder of the same name in the working directory does not hide the cluster)."""
    if argument.is_file() or not NAME.match(str(argument)):
        return argument
    state = ClusterState(state_root(root), str(argument))
    copy = state.checked(state.path / SPEC_COPY)  # a copy someone else planted is refused, not read as the spec
    return copy if copy.is_file() else argument


def known(root: Path | None = None) -> list[ClusterSummary]:
    """Every cluster with a spec copy under the state root, by name."""
    return [_summary(copy) for copy in _copies(root)]


def names(root: Path | None = None) -> list[str]:
    """The names of the known clusters, sorted; reads no file (shell completion asks for them)."""
    return [copy.parent.name for copy in _copies(root)]


def _copies(root: Path | None) -> list[Path]:
    """The spec copies under the state root, by cluster name."""
    folder = state_root(root) / "clusters"
    return sorted(p for p in folder.glob(f"*/{SPEC_COPY}") if p.is_file()) if folder.is_dir() else []


def _summary(copy: Path) -> ClusterSummary:
    """One cluster's line from its state files."""
    directory = copy.parent
    provider = _provider(copy.read_text(encoding="utf-8", errors="replace"))
    applied = _json(directory / "applied.json")  # `down` removes it
    return ClusterSummary(name=directory.name, provider=provider, nodes=len((applied or {}).get("nodes", [])),
                          certified=_last_verdict(directory / "reports"), spec=str(copy),
                          state=UP if applied is not None else DOWN)


def suggestion(argument: Path, root: Path | None = None) -> str:
    """The fix for a SPEC argument that is neither a file nor a cluster known here: "did you mean demo?" from the
    known clusters' names (for a path, from its file name without the suffix too), else the names there are."""
    known = names(root)
    words = dict.fromkeys([str(argument), argument.name, argument.stem])
    close = list(dict.fromkeys(m for w in words for m in difflib.get_close_matches(w, known, n=3, cutoff=0.6)))
    if close:
        return f"did you mean {' or '.join(close[:3])}? (a cluster brought up here)"
    if known:
        more = f" and {len(known) - 10} more (provision list)" if len(known) > 10 else ""
        return f"give the path of a spec file, or the name of a cluster brought up here: {', '.join(known[:10])}{more}"
    return "give the path of a spec file (YAML); no cluster has been brought up here yet"


def _provider(text: str) -> str:
    """provider.type from the spec copy without validating it (a summary must not fail on an old spec)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return "?"
    provider = data.get("provider") if isinstance(data, dict) else None
    return str(provider.get("type", "?")) if isinstance(provider, dict) else "?"


def _last_verdict(reports: Path) -> str:
    """The cluster's verdict from its newest full certify run ('pass (quick)'), followed by a partial run newer than
    it ('pass (quick); newer: pass (quick, partial: compute05)'); a partial run alone when there is no full one;
    'never' without a report. A partial run (a grow, a release, a rolling batch) certified some nodes against peers,
    so it is never shown as the cluster's verdict."""
    runs = sorted(p for p in reports.glob("*/report.json")) if reports.is_dir() else []
    newer = None
    for report in reversed(runs):
        data = _json(report)
        if not data or "verdict" not in data:
            continue
        scope = RunScope.from_dict(data.get("scope"))
        level = data.get("level", "?")
        if scope.partial:
            newer = newer or f"{data['verdict']} ({level}, partial: {node_names(scope.nodes, 3)})"
            continue
        return f"{data['verdict']} ({level})" + (f"; newer: {newer}" if newer else "")
    return newer or "never"


def _json(path: Path) -> dict | None:
    """A JSON document, or None when it is missing or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
