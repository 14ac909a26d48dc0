"""Console helpers shared by commands: one stdout console, one stderr console, JSON output."""
from __future__ import annotations

import json
import sys

from rich.console import Console

from provision.spec.findings import Finding

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def print_json(data: object) -> None:
    """Machine-readable output for --json: plain JSON on stdout, nothing else."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def print_findings(findings: list[Finding]) -> None:
    """Every finding on its own line, errors in red, warnings in yellow (to stderr)."""
    for finding in findings:
        colour = "red" if finding.level == "error" else "yellow"
        err.print(f"[{colour}]{finding.render()}[/{colour}]", markup=True, highlight=False)


def progress_printer(quiet: bool):
    """A Progress callback that prints status lines unless quiet."""
    def emit(line: str) -> None:
        if not quiet:
            err.print(f"[dim]-[/dim] {line}", markup=True, highlight=False)
    return emit
