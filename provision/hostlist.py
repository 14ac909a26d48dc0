"""Slurm hostlist expressions, through ClusterShell's NodeSet (one adaptor, one place)."""
from __future__ import annotations

from collections.abc import Iterable

from ClusterShell.NodeSet import NodeSet, NodeSetParseError

from provision.errors import SpecError


def expand(expression: str) -> list[str]:
    """Expand "gpu[01-03]" into ["gpu01", "gpu02", "gpu03"], keeping the written order."""
    try:
        return _expand_ordered(expression)
    except NodeSetParseError as exc:
        raise SpecError(f"'{expression}' is not a valid hostlist expression ({exc})",
                        hint="write names such as gpu[01-16] or node1,node2") from exc


def _expand_ordered(expression: str) -> list[str]:
    """Expand each comma-separated part in turn, so addresses line up with names as written."""
    names: list[str] = []
    for part in _split_top_level(expression):
        names.extend(NodeSet(part))
    return names


def _split_top_level(expression: str) -> list[str]:
    """Split on commas that are not inside brackets ("a[1,2],b" -> ["a[1,2]", "b"])."""
    parts, depth, current = [], 0, []
    for char in expression:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def compress(names: Iterable[str]) -> str:
    """Fold host names into the shortest hostlist expression Slurm accepts ("gpu[01-16]")."""
    return str(NodeSet.fromlist(list(names)))
