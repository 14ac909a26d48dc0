"""`provision preflight`: a per-node table of what the nodes are, before anything is installed."""
from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from provision import lifecycle
from provision.cli.cluster_cmds import JsonOpt
from provision.cli.output import err, escape, out, print_json
from provision.cli.spec_cmds import SpecArg
from provision.errors import EXIT_FAILED
from provision.preflight import DEFAULT_CONCURRENCY
from provision.preflight.records import PreflightReport
from provision.spec import load_spec

_COLOURS = {"pass": "green", "warn": "yellow", "fail": "red", "n/a": "dim"}

AcceptOpt = Annotated[bool, typer.Option("--accept-new-host-keys", help="record the host key of a first contact")]


def render(report: PreflightReport) -> None:
    """One row per node: verdict, then the checks that did not simply pass."""
    table = Table("node", "address", "verdict", "findings", title=f"preflight ({report.elapsed_s:.1f} s)")
    for node in report.nodes:
        notes = "; ".join(f"{c.id}: {c.detail}" for c in node.checks if c.verdict in ("warn", "fail"))
        table.add_row(node.name, node.address or "-", Text(node.verdict, style=_COLOURS[node.verdict]), notes)
    out.print(table)
    if report.failed_nodes:
        err.print(f"[red]preflight failed on {escape(', '.join(report.failed_nodes))}[/red]", markup=True)


def preflight(
    spec: SpecArg,
    accept_new_host_keys: AcceptOpt = False,
    concurrency: Annotated[int, typer.Option(help="nodes checked at once")] = DEFAULT_CONCURRENCY,
    json_out: JsonOpt = False,
) -> None:
    """Check every node over SSH (reachability, keys, OS, disk, clock, GPUs, fabric); exit 1 on a fail."""
    report = lifecycle.preflight(load_spec(spec), accept_new_host_keys=accept_new_host_keys,
                                 concurrency=concurrency)
    if json_out:
        print_json(report.as_dict())
    else:
        render(report)
    if report.failed_nodes:
        raise typer.Exit(EXIT_FAILED)
