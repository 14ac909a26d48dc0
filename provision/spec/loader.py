"""Read a spec file: YAML with positions, then the pydantic structure, as findings not tracebacks."""
from __future__ import annotations

import difflib
import typing
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError

from provision.errors import SpecError
from provision.spec.findings import Finding, format_path
from provision.spec.model import ClusterSpec


def read_text(path: Path) -> str:
    """Read the spec file, turning every way a path can be wrong into one clear SpecError."""
    if not path.exists():
        raise SpecError(f"{path}: no such file", hint="give the path of a spec; `provision init -o FILE` writes one")
    if path.is_dir():
        raise SpecError(f"{path}: is a directory, not a spec file", hint="give the path of a YAML file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot be read ({exc})", hint="check permissions and that it is UTF-8 text") from exc
    if not text.strip():
        raise SpecError(f"{path}: is empty", hint="`provision init -o FILE` writes a complete example")
    return text


def parse_yaml(text: str, source: str) -> tuple[dict, dict[tuple, int]]:
    """Parse YAML into data plus a map from field path to line number."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{source}: YAML syntax error{where}: {problem}",
                        hint="fix the YAML (indentation, quotes, ':' after keys)") from exc
    if not isinstance(data, dict):
        raise SpecError(f"{source}: the top level must be a mapping of keys (name, provider, node_groups, ...), "
                        f"not {type(data).__name__}", hint="`provision init` shows the layout")
    return data, _line_map(node)


def _line_map(node: yaml.Node | None, path: tuple = ()) -> dict[tuple, int]:
    """Record the line of every mapping key and sequence item, keyed by its path."""
    lines: dict[tuple, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = (*path, key.value)
            lines[child] = key.start_mark.line + 1
            lines.update(_line_map(value, child))
    elif isinstance(node, yaml.SequenceNode):
        for index, value in enumerate(node.value):
            lines[(*path, index)] = value.start_mark.line + 1
            lines.update(_line_map(value, (*path, index)))
    return lines


def structure_findings(data: dict, lines: dict[tuple, int]) -> tuple[ClusterSpec | None, list[Finding]]:
    """Build the model; on failure, translate every pydantic error into a finding."""
    try:
        return ClusterSpec.model_validate(data), []
    except ValidationError as exc:
        return None, [_finding(error, data, lines) for error in exc.errors(include_url=False)]


def _finding(error: dict, data: dict, lines: dict[tuple, int]) -> Finding:
    """One pydantic error as a finding with path, value and fix."""
    loc = _data_loc(tuple(error["loc"]), data)
    path = format_path(loc)
    line = nearest_line(loc, lines)
    kind = error["type"]
    if kind == "extra_forbidden":
        return Finding("error", path, f"unknown key '{loc[-1]}'", _did_you_mean(loc), line)
    if kind == "missing":
        return Finding("error", path, "is required but missing", f"add '{loc[-1]}'", line)
    if kind == "union_tag_invalid" or kind == "union_tag_not_found":
        return Finding("error", f"{path}.type" if kind == "union_tag_not_found" else path,
                       f"provider type {error.get('input', {}).get('type')!r} is not known"
                       if kind == "union_tag_invalid" else "is required but missing",
                       "use one of: sandbox, static, aws", line)
    value = error.get("input")
    shown = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return Finding("error", path, f"{shown} is not valid: {_plain(error['msg'])}", _fix_for(kind, error), line)


def _data_loc(loc: tuple, data: dict) -> tuple:
    """Drop the discriminator tags pydantic inserts (provider.sandbox.subnet -> provider.subnet)."""
    out: list = []
    node = data
    for part in loc:
        if isinstance(node, dict) and isinstance(part, str) and part not in node and part in ("sandbox", "static", "aws") \
                and out and out[-1] == "provider":
            continue
        out.append(part)
        node = node.get(part) if isinstance(node, dict) else (
            node[part] if isinstance(node, list) and isinstance(part, int) and part < len(node) else None)
    return tuple(out)


def nearest_line(loc: tuple, lines: dict[tuple, int]) -> int | None:
    """The line of the field, or of its closest parent that is in the file."""
    for end in range(len(loc), 0, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None


def _plain(message: str) -> str:
    """Lower-case pydantic's message and drop its 'Value error, ' prefix."""
    message = message.removeprefix("Value error, ")
    return message[:1].lower() + message[1:]


_FIXES = {
    "int_parsing": "write a whole number such as 4",
    "int_type": "write a whole number such as 4",
    "bool_parsing": "write true or false",
    "bool_type": "write true or false",
    "string_type": "write a quoted string",
    "list_type": "write a YAML list (- item)",
    "model_type": "write a mapping of keys",
    "literal_error": "use one of the allowed values listed",
    "string_pattern_mismatch": "use lower-case letters, digits and '-', starting with a letter",
    "ip_v4_network": "write a network such as 10.99.0.0/24",
    "greater_than_equal": "raise the value",
    "less_than_equal": "lower the value",
    "too_short": "add at least one entry",
}


def _fix_for(kind: str, error: dict) -> str:
    """A fix for a pydantic error type, or a generic one."""
    if kind == "literal_error":
        return f"use one of {error.get('ctx', {}).get('expected', 'the allowed values')}"
    return _FIXES.get(kind, "see the spec reference in the README")


def _did_you_mean(loc: tuple) -> str:
    """Suggest the closest known key at that place in the model."""
    known = sorted(_known_keys(loc[:-1]))
    close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    return f"known keys here: {', '.join(known)}" if known else "remove it"


def _known_keys(loc: tuple) -> set[str]:
    """The field names allowed at a data path, following list items and the provider union."""
    models: list[type[BaseModel]] = [ClusterSpec]
    for part in loc:
        if isinstance(part, int):
            continue
        models = [m for model in models if part in model.model_fields
                  for m in _models_in(model.model_fields[part].annotation)]
    return {name for model in models for name in model.model_fields}


def _models_in(annotation: object) -> list[type[BaseModel]]:
    """Every model class inside Optional[X], list[X] or Annotated[Union[...], ...]."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
