"""The parts of a spec that parsed: the semantic checks run on them even when the structure has errors.

A structurally bad value is taken out of the data, so its field falls back to its default: an unknown key simply
goes (nothing reads it), a bad value damages its top-level section (`node_groups`, `software`, ...), and the semantic
validators that read a damaged section do not run (provision.spec.validators.READS), so no finding comes from a
default the user never wrote. A bad value whose field has no default (a group's name, the provider's type) leaves
nothing to check: only the structural findings are reported then.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

from pydantic import ValidationError

from provision.spec.locations import data_loc, has_default
from provision.spec.model import ClusterSpec

MAX_ROUNDS = 8  # taking values out can reveal errors a failed parent hid; a few rounds reach the bottom


@dataclass(frozen=True)
class Salvage:
    """The model built from what parsed (None: nothing usable), and the top-level sections that lost a value."""

    spec: ClusterSpec | None
    damaged: frozenset[str]


def salvage(data: object, errors: list[dict]) -> Salvage:
    """Take every structurally bad value (`errors`: pydantic's, of `data`) out of a copy of the data until the model
    builds. An error with nothing to take out ends it before any copy is made (a spec of 10,000 groups where 256
    are allowed costs nothing more)."""
    if not isinstance(data, dict) or _places(errors, data) is None:
        return Salvage(None, frozenset())
    data = copy.deepcopy(data)
    damaged: set[str] = set()
    for _ in range(MAX_ROUNDS):
        places = _places(errors, data)
        if places is None:
            break
        for place, unknown_key in places:
            _remove(data, place)
            if not unknown_key:
                damaged.add(str(place[0]))
        try:
            return Salvage(ClusterSpec.model_validate(data), frozenset(damaged))
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
    return Salvage(None, frozenset(damaged))


def _places(errors: list[dict], data: dict) -> list[tuple[tuple, bool]] | None:
    """Where to take each error's value out, and whether it is an unknown key; None if one cannot be taken out."""
    places = []
    for error in errors:
        unknown_key = error["type"] == "extra_forbidden"
        place = _removable(data_loc(tuple(error["loc"]), data), unknown_key)
        if place is None:
            return None
        places.append((place, unknown_key))
    return places


def _removable(loc: tuple, unknown_key: bool) -> tuple | None:
    """The deepest key on the path to an error that may be left out (an unknown key itself, else the nearest field
    with a default); None when there is none below the top (an error about a required section or the whole spec)."""
    if unknown_key and loc:
        return loc
    for end in range(len(loc), 0, -1):
        place = loc[:end]
        if isinstance(place[-1], str) and has_default(place):
            return place
    return None


def _remove(data: dict, place: tuple) -> None:
    """Delete the key at `place` in nested mappings and lists (already gone: nothing to do)."""
    node: object = data
    for part in place[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return
    if isinstance(node, dict):
        node.pop(place[-1], None)
