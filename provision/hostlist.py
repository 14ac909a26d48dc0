"""Slurm hostlist expressions through ClusterShell's NodeSet (one adaptor, one place), sized before expansion."""
from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet, NodeSetException
from ClusterShell.RangeSet import RangeSetException

from provision.errors import SpecError
from provision.limits import MAX_HOSTLIST_CHARS, MAX_NODES_PER_GROUP, clip

# Names, dots (addresses), '-', brackets and commas: no ClusterShell group (@), set operator (!&^) or space.
_CHARACTERS = re.compile(r"[A-Za-z0-9.\-\[\],]+")
_PART = re.compile(r"(?:\[[^\[\]]*\]|[^\[\]])*")  # one character at a time: no backtracking blow-up
_BRACKETS = re.compile(r"\[([^\[\]]*)\]")
_RANGE = re.compile(r"([0-9]{1,9})(?:-([0-9]{1,9})(?:/([0-9]{1,9}))?)?")
_HINT = "write names such as gpu[01-16] or node1,node2"


class HostlistError(ValueError):
    """An expression that does not parse; the message says why, without repeating the expression."""


def count(expression: str) -> int:
    """How many names an expression stands for (an upper bound), computed without expanding it."""
    if len(expression) > MAX_HOSTLIST_CHARS:
        raise HostlistError(f"is {len(expression)} characters long; a hostlist expression has at most "
                            f"{MAX_HOSTLIST_CHARS}")
    if not _CHARACTERS.fullmatch(expression):
        raise HostlistError("is not a valid hostlist expression (only letters, digits, '.', '-', brackets and "
                            "commas)")
    return sum(_count_part(part) for part in _split_top_level(expression))


def _count_part(part: str) -> int:
    """Names in one comma-separated part: the product of its bracket ranges."""
    if not _PART.fullmatch(part):
        raise _invalid("unbalanced or nested brackets")
    total = 1
    for match in _BRACKETS.finditer(part):
        total *= sum(_range_size(item) for item in match.group(1).split(","))
    return total


def _range_size(item: str) -> int:
    """Size of one range such as 01-16 or 1-9/2."""
    match = _RANGE.fullmatch(item)
    if not match:
        raise _invalid(f"{clip(item, 20)} is not a range such as 01-16")
    low, high, step = match.group(1), match.group(2) or match.group(1), match.group(3) or "1"
    if int(high) < int(low) or int(step) < 1:
        raise _invalid(f"'{item}' is an empty range")
    return (int(high) - int(low)) // int(step) + 1


def _invalid(why: str) -> HostlistError:
    """The error for an expression that does not parse."""
    return HostlistError(f"is not a valid hostlist expression ({why})")


def expand(expression: str, limit: int = MAX_NODES_PER_GROUP) -> list[str]:
    """Expand "gpu[01-03]" into ["gpu01", "gpu02", "gpu03"], keeping the written order; refuse over `limit` names."""
    return list(_expanded(expression, limit))


@functools.lru_cache(maxsize=64)
def _expanded(expression: str, limit: int) -> tuple[str, ...]:
    """expand(), remembered: validation, plan and inventory expand the same few expressions many times, and
    ClusterShell takes a tenth of a second for 10,000 names."""
    try:
        size = count(expression)
        if size > limit:
            raise HostlistError(f"stands for {size} names; at most {limit} are allowed here")
        return tuple(_expand_ordered(expression))
    except HostlistError as exc:
        raise SpecError(f"{clip(expression)} {exc}", hint=_HINT) from None
    except (NodeSetException, RangeSetException) as exc:
        raise SpecError(f"{clip(expression)} {_invalid(clip(str(exc)))}", hint=_HINT) from None


def _expand_ordered(expression: str) -> list[str]:
    """Expand each comma-separated part in turn, so addresses line up with names as written."""
    names: list[str] = []
    for part in _split_top_level(expression):
        names.extend(NodeSet(part, resolver=RESOLVER_NOGROUP))
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


def next_in_range(name: str, previous: str) -> bool:
    """Whether `name` comes right after `previous` in one bracket range: the same prefix and the next number, written
    at the range's width (gpu09 -> gpu10 and node9 -> node10 do, gpu9 -> gpu010 and gpu1 -> gpu02 do not)."""
    prefix, digits = _numbered(name)
    before, last = _numbered(previous)
    return bool(digits) and bool(last) and prefix == before and int(digits) == int(last) + 1 and \
        digits == str(int(digits)).zfill(len(last))


def span(first: str, last: str) -> str:
    """The expression of a range from `first` to `last` (names that follow each other): gpu[01-16]."""
    prefix, low = _numbered(first)
    return f"{prefix}[{low}-{_numbered(last)[1]}]"


def _numbered(name: str) -> tuple[str, str]:
    """('gpu', '01') for gpu01: the name without its trailing ASCII digits, and those digits."""
    prefix = name.rstrip("0123456789")
    return prefix, name[len(prefix):]


def compress(names: Iterable[str]) -> str:
    """Fold host names into the shortest hostlist expression Slurm accepts ("gpu[01-16]"). Runs of names that follow
    each other are folded first, in one pass, so ClusterShell parses a few ranges, not 20,000 names (5 times
    faster; the result is NodeSet's canonical form of the same set either way)."""
    return str(NodeSet(",".join(_runs(names)), resolver=RESOLVER_NOGROUP))


def _runs(names: Iterable[str]) -> list[str]:
    """gpu01, gpu02, gpu03, cpu1 -> gpu[01-03], cpu1."""
    out: list[str] = []
    first = last = None
    for name in names:
        if last is not None and next_in_range(name, last):
            last = name
            continue
        if first is not None:
            out.append(first if first == last else span(first, last))
        first = last = name
    if first is not None:
        out.append(first if first == last else span(first, last))
    return out
