"""Console helpers shared by commands: one stdout console, one stderr console, JSON output."""
from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.text import Text

from provision.spec.findings import Finding

# markup=False, emoji=False: text from specs, paths and nodes is printed as it is ("[/x]" is not a closing tag,
# ":ok:" is not an emoji). A coloured line is a rich Text built from styled parts, never markup around a value
# (markup escaping breaks on a trailing backslash).
out = Console(highlight=False, soft_wrap=True, markup=False, emoji=False)
err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)

__all__ = ["err", "out", "print_findings", "print_json", "progress_printer"]
_SHOWN_FINDINGS = 200


def print_json(data: object) -> None:
    """Machine-readable output for --json: plain JSON on stdout, nothing else."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def print_findings(findings: list[Finding]) -> None:
    """Every finding on its own line, errors in red, warnings in yellow (to stderr)."""
    for finding in findings[:_SHOWN_FINDINGS]:
        colour = "red" if finding.level == "error" else "yellow"
        err.print(Text(finding.render(), style=colour))
    if len(findings) > _SHOWN_FINDINGS:
        err.print(f"... and {len(findings) - _SHOWN_FINDINGS} more finding(s); --json lists them all")


def progress_printer(quiet: bool):
    """A Progress callback that prints status lines unless quiet."""
    def emit(line: str) -> None:
        if not quiet:
            err.print(Text.assemble(("-", "dim"), " ", line))
    return emit
