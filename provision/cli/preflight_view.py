"""The preflight report as a per-node table."""
from __future__ import annotations

from rich.table import Table
from rich.text import Text

from provision.cli.output import err, escape, out
from provision.preflight.records import PreflightReport

_COLOURS = {"pass": "green", "warn": "yellow", "fail": "red", "n/a": "dim"}


def render(report: PreflightReport) -> None:
    """One row per node: verdict, then the checks that did not simply pass."""
    table = Table("node", "address", "verdict", "findings", title=f"preflight ({report.elapsed_s:.1f} s)")
    for node in report.nodes:
        notes = "; ".join(f"{c.id}: {c.detail}" for c in node.checks if c.verdict in ("warn", "fail"))
        table.add_row(node.name, node.address or "-", Text(node.verdict, style=_COLOURS[node.verdict]), notes)
    out.print(table)
    if report.failed_nodes:
        err.print(f"[red]preflight failed on {escape(', '.join(report.failed_nodes))}[/red]", markup=True)
