"""Commands that act on a cluster's nodes: plan, up, down, status."""
from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

import typer
from rich.table import Table

from provision import lifecycle
from provision.cli.output import err, escape, out, print_json, progress_printer
from provision.cli.spec_cmds import SpecArg
from provision.errors import EXIT_FAILED
from provision.spec import load_spec

JsonOpt = Annotated[bool, typer.Option("--json", help="print the result as JSON")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="no progress lines (CI logs)")]


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


def down(
    spec: SpecArg,
    orphans: Annotated[bool, typer.Option(
        "--orphans", help="also remove cloud resources tagged with the cluster's name that this machine's "
                          "state does not record (after a lost state directory)")] = False,
    quiet: QuietOpt = False,
    json_out: JsonOpt = False,
) -> None:
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
    redo: Annotated[list[str], typer.Option("--redo", help="run a finished stage again (repeatable)")] = [],
    skip_preflight: Annotated[bool, typer.Option("--skip-preflight", help="do not check nodes first")] = False,
    skip_certify: Annotated[bool, typer.Option("--skip-certify", help="do not certify at the end")] = False,
    quiet: QuietOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Create the nodes, render the inventory, then preflight, deploy and certify (resumable)."""
    from provision.cli.stages import later_stages  # deferred: stages import the deploy command

    skip = tuple(s for s, off in (("preflight", skip_preflight), ("certify", skip_certify)) if off)
    result = lifecycle.up(load_spec(spec), later_stages(quiet=quiet or json_out),
                          lifecycle.UpOptions(redo=tuple(redo), skip=skip), progress_printer(quiet or json_out))
    if json_out:
        print_json({"cluster": result.cluster.model_dump(mode="json"), "ran": result.ran, "skipped": result.skipped})
        return
    out.print(f"cluster {result.cluster.name}: {len(result.cluster.nodes)} nodes up; "
              f"ran {', '.join(result.ran)}" + (f"; skipped {', '.join(result.skipped)}" if result.skipped else ""))


def exec_(
    spec: SpecArg,
    command: Annotated[list[str], typer.Argument(help="the command and its arguments (after --)")],
    node: Annotated[str | None, typer.Option("--node", "-n", help="node name (default: the controller)")] = None,
) -> None:
    """Run a command on a node over SSH (host key verified) and pass through its output and exit code."""
    from provision.remote import pick_node, run_on

    cluster = lifecycle.current_cluster(load_spec(spec))
    result = run_on(cluster, pick_node(cluster, node), " ".join(command))
    typer.echo(result.stdout, nl=False)
    if result.stderr:
        typer.echo(result.stderr, nl=False, err=True)
    raise typer.Exit(result.rc)
