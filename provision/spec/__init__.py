"""Load and validate cluster specs: structure first, then semantics, all findings at once."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from provision.errors import SpecError
from provision.spec.findings import Finding, errors
from provision.spec.loader import nearest_line, parse_yaml, read_text, structure_findings
from provision.spec.model import ClusterSpec
from provision.spec.validators import semantic_findings


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
    spec, findings = structure_findings(data, lines)
    if spec is None:
        return Validation(None, findings)
    return Validation(spec, [_with_line(f, lines) for f in semantic_findings(spec)])


def _with_line(finding: Finding, lines: dict[tuple, int]) -> Finding:
    """Attach the line of the finding's path (or of its nearest parent in the file)."""
    loc = tuple(int(p) if p.isdigit() else p for p in finding.path.replace("]", "").replace("[", ".").split("."))
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
