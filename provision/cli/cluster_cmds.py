"""Commands that act on a cluster's nodes: plan, up, down, status, exec."""
from __future__ import annotations

from dataclasses import asdict

import typer
from rich.table import Table

from provision import lifecycle
from provision.cli.options import (CommandArg, JsonOpt, NodeOpt, OrphansOpt, QuietOpt, RedoOpt, SkipCertifyOpt,
                                   SkipPreflightOpt, SpecArg)
from provision.cli.output import err, escape, out, print_json, progress_printer
from provision.cli.up_view import TerminalUpView
from provision.errors import EXIT_FAILED
from provision.spec.loader import load_spec


def plan(spec: SpecArg, json_out: JsonOpt = False) -> None:
    """Show what `up` would create and its hourly cost; changes nothing."""
    result = lifecycle.plan(load_spec(spec))
    if json_out:
        print_json({"items": [asdict(i) for i in result.items], "notes": result.notes,
                    "hourly_cost_usd": result.hourly_cost_usd})
        return
    table = Table("kind", "name", "detail", "USD/hour", title="plan")
    for item in result.items:
        cost = "" if item.hourly_cost_usd is None else f"{item.hourly_cost_usd:.2f}"
        table.add_row(item.kind, item.name, item.detail, cost)
    out.print(table)
    for note in result.notes:
        out.print(f"note: {note}")
    if result.hourly_cost_usd is not None:
        out.print(f"estimated cost: {result.hourly_cost_usd:.2f} USD/hour")


def status(spec: SpecArg, json_out: JsonOpt = False) -> None:
    """List the cluster's nodes with address and state."""
    cluster = lifecycle.status(load_spec(spec))
    if json_out:
        print_json(cluster.model_dump(mode="json"))
        return
    table = Table("node", "group", "roles", "address", "state", title=f"{cluster.name} ({cluster.provider})")
    for node in cluster.nodes:
        table.add_row(node.name, node.group, ",".join(node.roles), node.address or "-", node.state)
    out.print(table)


def down(spec: SpecArg, orphans: OrphansOpt = False, quiet: QuietOpt = False, json_out: JsonOpt = False) -> None:
    """Remove everything the cluster's provider created, then prove nothing is left."""
    teardown = lifecycle.down(load_spec(spec), progress_printer(quiet or json_out), orphans=orphans)
    if json_out:
        print_json(asdict(teardown))
    else:
        for item in teardown.removed:
            out.print(f"removed {item}")
        for item in teardown.leftovers:
            err.print(f"[red]left behind: {escape(item)}[/red]", markup=True)
        if not teardown.leftovers:
            out.print("0 resources left")
    if teardown.leftovers:
        raise typer.Exit(EXIT_FAILED)


def up(
    spec: SpecArg,
    redo: RedoOpt = [],
    skip_preflight: SkipPreflightOpt = False,
    skip_certify: SkipCertifyOpt = False,
    quiet: QuietOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Create the nodes, preflight them, render the inventory, deploy and certify (resumable)."""
    skip = tuple(s for s, off in (("preflight", skip_preflight), ("certify", skip_certify)) if off)
    result = lifecycle.up(load_spec(spec), lifecycle.UpOptions(redo=tuple(redo), skip=skip),
                          TerminalUpView(quiet=quiet or json_out))
    if json_out:
        print_json({"cluster": result.cluster.model_dump(mode="json"), "ran": result.ran, "skipped": result.skipped})
        return
    out.print(f"cluster {result.cluster.name}: {len(result.cluster.nodes)} nodes up; "
              f"ran {', '.join(result.ran)}" + (f"; skipped {', '.join(result.skipped)}" if result.skipped else ""))


def exec_(spec: SpecArg, command: CommandArg, node: NodeOpt = None) -> None:
    """Run a command on a node over SSH (host key verified) and pass through its output and exit code."""
    result = lifecycle.run_command(load_spec(spec), node, " ".join(command))
    typer.echo(result.stdout, nl=False)
    if result.stderr:
        typer.echo(result.stderr, nl=False, err=True)
    raise typer.Exit(result.rc)
