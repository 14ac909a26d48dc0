"""A validation finding: where, what was wrong, and how to fix it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from provision.limits import cut

Level = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    """One problem in a spec, carrying the field path, the bad value and the fix."""

    level: Level
    path: str
    message: str
    fix: str = ""
    line: int | None = field(default=None, compare=False)

    def render(self) -> str:
        """One line as printed by `provision validate`."""
        where = f"{self.path} (line {self.line})" if self.line else self.path
        fix = f"; {self.fix}" if self.fix else ""
        return f"{self.level}: {where}: {cut(self.message, 400)}{fix}"

    def as_dict(self) -> dict:
        """JSON form for --json."""
        return {"level": self.level, "path": self.path, "line": self.line, "message": self.message, "fix": self.fix}


def format_path(loc: tuple) -> str:
    """Render a pydantic location like ('node_groups', 1, 'gpu') as node_groups[1].gpu."""
    out = ""
    for part in loc:
        part = part if isinstance(part, int) else cut(str(part), 40)
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "(top level)"


def errors(findings: list[Finding]) -> list[Finding]:
    """Only the findings that block."""
    return [f for f in findings if f.level == "error"]
