"""The preflight report as a per-node table."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from provision.cli.output import err, out
from provision.preflight.records import PreflightReport

_COLOURS = {"pass": "green", "warn": "yellow", "fail": "red", "n/a": "dim"}


def render(report: PreflightReport, console: Console = out) -> None:
    """One row per node: its OS, verdict, then the checks that did not simply pass (the table on `console`)."""
    table = Table("node", "address", "os", "verdict", "findings", title=f"preflight ({report.elapsed_s:.1f} s)")
    for node in report.nodes:
        notes = "; ".join(f"{c.id}: {c.detail}" for c in node.checks if c.verdict in ("warn", "fail"))
        table.add_row(node.name, node.address or "-", node.os or "-",
                      Text(node.verdict, style=_COLOURS[node.verdict]), notes)
    console.print(table)
    if report.failed_nodes:
        err.print(Text(f"preflight failed on {', '.join(report.failed_nodes)}", style="red"))
