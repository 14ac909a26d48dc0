"""Commands that act on a cluster's nodes: plan, up, down, status, exec."""
from __future__ import annotations

from dataclasses import asdict

import typer
from rich.table import Table
from rich.text import Text

from provision.cluster import clusters
from provision.cli.options import (DRAIN_TIMEOUT_S, DrainTimeoutOpt, ForceOpt, JsonOpt, OrphansOpt, QuietOpt,
                                   RebindOpt, RedoOpt, SkipCertifyOpt, SkipPreflightOpt, SpecArg)
from provision.cli.output import err, out, print_json, progress_printer
from provision.errors import EXIT_CHANGES, EXIT_FAILED

# Each command imports the library (lifecycle, the spec loader) when it runs, not when the CLI starts
# (tests/unit/cli/test_startup.py).


def plan(spec: SpecArg, json_out: JsonOpt = False) -> None:
    """Show what `up` would create and its hourly cost or, on a running cluster, the nodes it would add, remove or
    change, each setting that changes (before, after, the nodes it reaches, the daemons it restarts) and the diff of
    the cluster-wide files; changes nothing. Exit 4 when a running cluster would change."""
    from provision.cli import plan_view  # ClusterShell: loaded by the commands that fold hostlists
    from provision.cluster import lifecycle
    from provision.spec.loader import load_spec

    loaded = load_spec(spec)
    result, diff = lifecycle.plan(loaded), lifecycle.plan_change(loaded)
    if json_out:
        print_json({"items": [asdict(i) for i in result.items], "notes": result.notes,
                    "hourly_cost_usd": result.hourly_cost_usd, "change": diff.as_dict()})
    elif diff.running:
        plan_view.print_change(diff)
    else:
        plan_view.print_creation(result)
    if diff.running and diff.changed:
        raise typer.Exit(EXIT_CHANGES)


def list_(json_out: JsonOpt = False) -> None:
    """The clusters brought up on this machine (under the state root): provider, nodes, last certify verdict; each can
    be named instead of its spec file (`provision status NAME`). Clusters taken down are named on one line after
    the table (--json: every cluster, with its state): their spec copies and reports are kept, so `provision up
    NAME` brings one back."""
    found = clusters.known()
    if json_out:
        print_json({"clusters": [c.as_dict() for c in found]})
        return
    table = Table("cluster", "provider", "nodes", "last certify", "spec copy", title="clusters")
    for item in found:
        if item.state == clusters.UP:
            table.add_row(item.name, item.provider, str(item.nodes), item.certified, item.spec)
    out.print(table)
    down = [item.name for item in found if item.state == clusters.DOWN]
    if down:
        out.print(f"taken down: {', '.join(down)} (spec copy and reports kept; `provision up NAME` brings one back)")


def status(spec: SpecArg, json_out: JsonOpt = False) -> None:
    """Show every node's state: provider state and address, Slurm state and reason (who drained it, when; held
    nodes), the health program's last verdict, the last certify verdict, and what it runs; then the alerts firing in
    the cluster's Prometheus. When slurmctld or Prometheus does not answer it says so and still shows the rest."""
    from provision.cli import status_view  # ClusterShell: loaded by the commands that fold hostlists
    from provision.cluster import lifecycle
    from provision.spec.loader import load_spec

    found = lifecycle.status(load_spec(spec))
    if json_out:
        print_json(found.to_dict())
    else:
        status_view.print_status(found)


def down(spec: SpecArg, orphans: OrphansOpt = False, rebind: RebindOpt = False, quiet: QuietOpt = False,
         json_out: JsonOpt = False) -> None:
    """Remove everything the cluster's provider created, then prove nothing is left."""
    from provision.cluster import binding, lifecycle
    from provision.spec.loader import load_spec

    loaded = load_spec(spec)
    binding.enforce(loaded, spec, "down", rebind, err.print)
    teardown = lifecycle.down(loaded, progress_printer(quiet or json_out), orphans=orphans)
    if json_out:
        print_json(asdict(teardown))
    else:
        for item in teardown.removed:
            out.print(f"removed {item}")
        for item in teardown.leftovers:
            err.print(Text(f"left behind: {item}", style="red"))
        if not teardown.leftovers:
            out.print("0 resources left")
    if teardown.leftovers:
        raise typer.Exit(EXIT_FAILED)


def up(
    spec: SpecArg,
    redo: RedoOpt = [],
    skip_preflight: SkipPreflightOpt = False,
    skip_certify: SkipCertifyOpt = False,
    drain_timeout: DrainTimeoutOpt = DRAIN_TIMEOUT_S,
    force: ForceOpt = False,
    rebind: RebindOpt = False,
    quiet: QuietOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Create the nodes, preflight them, render the inventory, deploy and certify (resumable); on a running cluster
    whose spec changed: add the new nodes (held until certify passes), drain and remove the ones it no longer names,
    and deploy again when any setting differs from what the last deploy applied."""
    from provision.cli.up_view import TerminalUpView
    from provision.cluster import lifecycle
    from provision.spec.loader import load_spec

    skip = tuple(s for s, off in (("preflight", skip_preflight), ("certify", skip_certify)) if off)
    options = lifecycle.UpOptions(redo=tuple(redo), skip=skip, drain_timeout_s=drain_timeout, force=force,
                                  source=spec, rebind=rebind)
    result = lifecycle.up(load_spec(spec), options, TerminalUpView(quiet, json_out))
    if json_out:
        print_json({"cluster": result.cluster.model_dump(mode="json"), "ran": result.ran, "skipped": result.skipped})
        return
    out.print(f"cluster {result.cluster.name}: {len(result.cluster.nodes)} nodes up; "
              f"ran {', '.join(result.ran)}" + (f"; skipped {', '.join(result.skipped)}" if result.skipped else ""))
