"""Read a spec file within limits: a regular file of bounded size, YAML of bounded depth and expansion.

The file is read by provision.files: opened without blocking and refused unless it is a regular file (a FIFO or
/dev/zero never hangs or fills memory), of at most 1 MiB. The YAML is first walked as a stream of events from libyaml's parser (iterative and linear):
nesting depth, the size of the document with every alias expanded, scalar lengths and duplicate keys are judged
there, and the line of every field is recorded without ever following an alias. Only then is the document built,
with YAML 1.2 core-schema scalars: `yes`, `on`, `no` and dates stay strings; only true/false are booleans.
(PyYAML with libyaml reads a 400 kB spec in about 0.1 s; ruamel.yaml's pure-Python reader took 3 s per pass.)
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from yaml.events import (AliasEvent, CollectionEndEvent, CollectionStartEvent, DocumentStartEvent,
                         MappingStartEvent, ScalarEvent)

from provision.errors import SpecError
from provision.files import FileKind, UnreadableFile, read_regular, shown
from provision.limits import MAX_SCALAR_CHARS, MAX_SPEC_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES, clip
from provision.spec.findings import Finding, format_path

Lines = dict[tuple, int]


SPEC_FILE = FileKind("a spec", "give the path of a YAML file",
                     "a spec is a short YAML file; `provision init` writes an example")


def read_text(path: Path) -> str:
    """Read the spec file, turning every way a path can be wrong into one clear SpecError."""
    try:
        data = read_regular(path, MAX_SPEC_BYTES, SPEC_FILE)
    except UnreadableFile as exc:
        raise SpecError(exc.message, hint=exc.hint) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{shown(path)}: is not UTF-8 text (byte {exc.start})", hint="save it as UTF-8") from exc
    if not text.strip():
        raise SpecError(f"{shown(path)}: is empty", hint="`provision init -o FILE` writes a complete example")
    return text


def parse_yaml(text: str, source: str) -> tuple[dict, Lines]:
    """Parse YAML into data plus a map from field path to line number, within the limits."""
    try:
        lines = _Scan(source).run(text)
        data = yaml.load(text, Loader=_SpecLoader)  # noqa: S506 - a safe loader with core-schema scalars
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, source) from exc
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:  # a value YAML cannot build
        raise SpecError(f"{source}: a value cannot be read ({exc.__class__.__name__}: {clip(str(exc))})",
                        hint="fix the value the message names") from exc
    if not isinstance(data, dict):
        raise SpecError(f"{source}: the top level must be a mapping of keys (name, provider, node_groups, ...), "
                        f"not {type(data).__name__}", hint="`provision init` shows the layout")
    return data, lines


class _SpecLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's safe loader (plain dicts, lists and scalars) resolving plain scalars by the YAML 1.2 core schema."""


_SpecLoader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in (
        ("bool", r"true|True|TRUE|false|False|FALSE", "tTfF"),
        ("null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
        ("int", r"[-+]?[0-9]+", "-+0123456789"),
        ("float", r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
         "-+.0123456789"),
        ("merge", r"<<", "<")):
    _SpecLoader.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", re.compile(rf"^(?:{_pattern})$"), list(_first))
_SpecLoader.add_constructor("tag:yaml.org,2002:int", lambda loader, node: int(loader.construct_scalar(node)))
_SpecLoader.add_constructor("tag:yaml.org,2002:float", lambda loader, node: float(
    loader.construct_scalar(node).lower().replace(".inf", "inf").replace(".nan", "nan")))


def _syntax_error(exc: yaml.YAMLError, source: str) -> SpecError:
    """A YAML error as one line with its position."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(exc, "problem", None) or (str(exc).strip().splitlines() or ["unreadable"])[0]
    if "nesting" in problem or "depth" in problem:  # libyaml's own limit (PyYAML >= 6.0.3) met before our walk's
        return SpecError(f"{source}: nests deeper than {MAX_YAML_DEPTH} levels{where} (the YAML parser stopped: "
                         f"{clip(problem, 80)})", hint="a spec is a few levels deep")
    return SpecError(f"{source}: YAML syntax error{where}: {clip(problem, 200)}",
                     hint="fix the YAML (indentation, quotes, ':' after keys)")


@dataclass
class _Collection:
    """A mapping or sequence being walked: its path, expanded size, and (mappings) keys seen with their lines."""

    path: tuple
    is_mapping: bool
    anchor: str | None
    size: int = 1
    index: int = 0
    key: str | None = None
    keys: dict[str, int] = field(default_factory=dict)


class _Scan:
    """One pass over the YAML events: limits, duplicate keys and the line of every field."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.stack: list[_Collection] = []
        self.anchors: dict[str, int] = {}
        self.total = 0
        self.lines: Lines = {}
        self.duplicates: list[Finding] = []
        self.documents = 0

    def run(self, text: str) -> Lines:
        """Walk every event; raise SpecError on the first limit crossed, or with every duplicate key."""
        for event in yaml.parse(text, Loader=_SpecLoader):
            self._event(event)
        if self.duplicates:
            raise SpecError(f"{self.source}: {len(self.duplicates)} duplicate key(s)", findings=self.duplicates,
                            hint="keep one of each; YAML would silently keep only the last")
        return self.lines

    def _event(self, event) -> None:
        """Dispatch one event."""
        if isinstance(event, DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                self._refuse(event, "holds more than one YAML document", "keep one document (no second '---')")
        elif isinstance(event, CollectionStartEvent):
            path = self._place(event)
            if len(self.stack) >= MAX_YAML_DEPTH:
                self._refuse(event, f"nests deeper than {MAX_YAML_DEPTH} levels", "a spec is a few levels deep")
            self._grow(1, event, into_parent=False)  # the parent takes the whole size when this one ends
            self.stack.append(_Collection(path, isinstance(event, MappingStartEvent), event.anchor))
        elif isinstance(event, CollectionEndEvent):
            self._close()
        elif isinstance(event, ScalarEvent):
            self._scalar(event)
        elif isinstance(event, AliasEvent):
            self._alias(event)

    def _place(self, event) -> tuple:
        """Record the line of a value at its path in the enclosing collection, and return the path."""
        if not self.stack:
            return ()
        parent = self.stack[-1]
        if parent.is_mapping and parent.key is None:
            self._refuse(event, "uses a list, mapping or alias as a key", "write plain keys such as name:")
        if parent.is_mapping:
            path, parent.key = (*parent.path, parent.key), None
            return path
        path = (*parent.path, parent.index)
        parent.index += 1
        self.lines[path] = event.start_mark.line + 1
        return path

    def _scalar(self, event: ScalarEvent) -> None:
        """A key (in a mapping awaiting one) or a value."""
        if len(event.value) > MAX_SCALAR_CHARS:
            self._refuse(event, f"holds a value of {len(event.value)} characters; the most is {MAX_SCALAR_CHARS}",
                         "shorten it")
        parent = self.stack[-1] if self.stack else None
        if parent is not None and parent.is_mapping and parent.key is None:
            self._key(parent, event)
        else:
            self._place(event)
        self._grow(1, event)
        if event.anchor:
            self.anchors[event.anchor] = 1

    def _key(self, mapping: _Collection, event: ScalarEvent) -> None:
        """Record a key's line; a key given twice is a finding naming both lines."""
        key, line = event.value, event.start_mark.line + 1
        if key in mapping.keys:
            self.duplicates.append(Finding(
                "error", format_path((*mapping.path, key)), f"is given twice, at lines {mapping.keys[key]} and {line}",
                "keep one; YAML would silently keep only the last", line))
        mapping.keys.setdefault(key, line)
        self.lines.setdefault((*mapping.path, key), line)
        mapping.key = key

    def _alias(self, event: AliasEvent) -> None:
        """An alias counts as the whole document it refers to; an alias to an unfinished collection is refused."""
        if event.anchor not in self.anchors:
            self._refuse(event, f"refers to {clip('&' + event.anchor, 40)} before it is complete (or never defined)",
                         "define the anchor before using it, and never inside itself")
        self._place(event)
        self._grow(self.anchors[event.anchor], event)

    def _close(self) -> None:
        """End of a collection: its size joins its parent's; an anchored one is remembered by size."""
        done = self.stack.pop()
        if done.anchor:
            self.anchors[done.anchor] = done.size
        if self.stack:
            self.stack[-1].size += done.size

    def _grow(self, size: int, event, into_parent: bool = True) -> None:
        """Count nodes (after alias expansion) against the limit."""
        if self.stack and into_parent:
            self.stack[-1].size += size
        self.total += size
        if self.total > MAX_YAML_NODES:
            self._refuse(event, f"expands to more than {MAX_YAML_NODES} values (aliases counted as copies)",
                         "write the spec without deep chains of YAML aliases")

    def _refuse(self, event, what: str, fix: str) -> None:
        """Stop reading: one error naming the line."""
        raise SpecError(f"{self.source}: line {event.start_mark.line + 1} {what}", hint=fix)
