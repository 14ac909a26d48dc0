"""The clusters this machine knows: a copy of the spec each was brought up from (so a cluster can be named instead of
its spec file), and one summary line per cluster for `provision list`. Reads only the state; no SSH, no cloud call.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from provision.spec.reader import read_text
from provision.state import ClusterState, state_root, write_private

if TYPE_CHECKING:  # a type only: naming and listing clusters (shell completion too) loads no spec model
    from provision.spec.model import ClusterSpec

SPEC_COPY = "spec.yaml"  # in the cluster's state directory, 0600
NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}$")  # a cluster name as the spec allows it (spec.model)


@dataclass(frozen=True)
class ClusterSummary:
    """One known cluster: where its spec copy is, its provider, how many nodes it has, its last certify verdict."""

    name: str
    provider: str
    nodes: int
    certified: str  # the last report's verdict and level ("pass (quick)"), or "never"
    spec: str

    def as_dict(self) -> dict:
        """JSON-ready form."""
        return asdict(self)


def remember_spec(spec: ClusterSpec, path: Path) -> Path:
    """Keep the spec file a cluster is brought up from in its state (0600), so its name finds it later."""
    state = ClusterState.for_spec(spec)
    state.ensure()
    return write_private(state.path / SPEC_COPY, read_text(path))  # read within the spec's limits, as at load


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
    applied = _json(directory / "applied.json") or {}
    return ClusterSummary(name=directory.name, provider=provider, nodes=len(applied.get("nodes", [])),
                          certified=_last_verdict(directory / "reports"), spec=str(copy))


def _provider(text: str) -> str:
    """provider.type from the spec copy without validating it (a summary must not fail on an old spec)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return "?"
    provider = data.get("provider") if isinstance(data, dict) else None
    return str(provider.get("type", "?")) if isinstance(provider, dict) else "?"


def _last_verdict(reports: Path) -> str:
    """'pass (quick)' from the newest report folder, or 'never'."""
    runs = sorted(p for p in reports.glob("*/report.json")) if reports.is_dir() else []
    for report in reversed(runs):
        data = _json(report)
        if data and "verdict" in data:
            return f"{data['verdict']} ({data.get('level', '?')})"
    return "never"


def _json(path: Path) -> dict | None:
    """A JSON document, or None when it is missing or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
