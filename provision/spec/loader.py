"""Load and validate a spec file: YAML with positions (provision.spec.reader), then the pydantic structure, then
the semantic checks (provision.spec.validators), all findings at once. When the structure has errors, the semantic
checks still run on the sections that parsed (provision.spec.partial).

`load_spec(path)` is what a command (or a Python caller) uses; `validate_file(path)` returns every finding.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from provision.errors import SpecError
from provision.limits import clip
from provision.providers import registry
from provision.spec import wording
from provision.spec.findings import Finding, errors, format_path
from provision.spec.locations import data_loc, known_keys
from provision.spec.model import ClusterSpec
from provision.spec.partial import salvage
from provision.spec.reader import Lines, parse_yaml, read_text
from provision.spec.validators import semantic_findings

__all__ = ["Validation", "load_spec", "nearest_line", "structure_findings", "validate_file"]


@dataclass
class Validation:
    """The outcome of validating a spec: the model (if it parsed) and every finding."""

    spec: ClusterSpec | None
    findings: list[Finding]

    @property
    def ok(self) -> bool:
        """True when no finding is an error (warnings are allowed)."""
        return self.spec is not None and not errors(self.findings)


def validate_file(path: Path) -> Validation:
    """Read, parse and validate a spec file; raises SpecError only when the file itself is unusable."""
    data, lines = parse_yaml(read_text(path), str(path))
    spec, errors_ = _model(data)
    if spec is not None:
        return Validation(spec, [_with_line(f, lines) for f in semantic_findings(spec)])
    part = salvage(data, errors_)
    semantic = semantic_findings(part.spec, part.damaged) if part.spec is not None else []
    return Validation(None, [_finding(e, data, lines) for e in errors_] + [_with_line(f, lines) for f in semantic])


def _with_line(finding: Finding, lines: dict[tuple, int]) -> Finding:
    """Attach the line of the finding's path (or of its nearest parent in the file)."""
    loc = tuple(int(p) if p.isascii() and p.isdigit() else p
                for p in finding.path.replace("]", "").replace("[", ".").split("."))
    line = nearest_line(loc, lines)
    return Finding(finding.level, finding.path, finding.message, finding.fix, line) if line else finding


def load_spec(path: Path) -> ClusterSpec:
    """Load a spec for a command that acts on it: any error finding stops here with all of them."""
    result = validate_file(path)
    if not result.ok:
        bad = errors(result.findings)
        raise SpecError(f"{path}: {len(bad)} error(s) in the spec", findings=result.findings,
                        hint="run `provision validate` for the list")
    return result.spec


def structure_findings(data: dict, lines: Lines) -> tuple[ClusterSpec | None, list[Finding]]:
    """Build the model; on failure, translate every pydantic error into a finding."""
    spec, errors_ = _model(data)
    return spec, [_finding(error, data, lines) for error in errors_]


def _model(data: object) -> tuple[ClusterSpec | None, list[dict]]:
    """The model, or pydantic's errors."""
    try:
        return ClusterSpec.model_validate(data), []
    except ValidationError as exc:
        return None, exc.errors(include_url=False)


def _finding(error: dict, data: dict, lines: Lines) -> Finding:
    """One pydantic error as a finding with path, value and fix."""
    loc = data_loc(tuple(error["loc"]), data)
    path = format_path(loc)
    line = nearest_line(loc, lines)
    kind = error["type"]
    if kind == "extra_forbidden":
        return Finding("error", path, f"unknown key {clip(str(loc[-1]))}", _did_you_mean(loc), line)
    if kind == "missing":
        return Finding("error", path, "is required but missing", f"add '{loc[-1]}'", line)
    if kind == "union_tag_invalid" or kind == "union_tag_not_found":
        return Finding("error", f"{path}.type" if kind == "union_tag_not_found" else path,
                       f"provider type {error.get('input', {}).get('type')!r} is not known"
                       if kind == "union_tag_invalid" else "is required but missing",
                       f"use one of: {', '.join(registry.names())}", line)
    value = error.get("input")
    shown = clip(value) if not isinstance(value, (dict, list)) else type(value).__name__
    if kind == "shape":  # provision.spec.shapes: the message and the fix are written for the reader
        subject = "" if isinstance(value, (dict, list)) else f"{shown} "
        return Finding("error", path, f"{subject}{error['ctx']['message']}", error["ctx"]["fix"], line)
    return Finding("error", path, f"{shown} is not valid: {wording.message(error)}", _fix_for(kind, error),
                   line)


def nearest_line(loc: tuple, lines: Lines) -> int | None:
    """The line of the field, or of its closest parent that is in the file."""
    for end in range(len(loc), 0, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None


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
    "too_long": "use fewer entries (docs/security.md lists the limits)",
}


def _fix_for(kind: str, error: dict) -> str:
    """A fix for a pydantic error type, or a generic one."""
    if kind == "literal_error":
        return f"use one of {error.get('ctx', {}).get('expected', 'the allowed values')}"
    return _FIXES.get(kind, "see the spec reference in the README")


def _did_you_mean(loc: tuple) -> str:
    """Suggest the closest known key at that place in the model."""
    known = sorted(known_keys(loc[:-1]))
    close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    return f"known keys here: {', '.join(known)}" if known else "remove it"
