"""`provision health`: the node health program's pass on every compute node, the last one or (`--now`) one run now."""
from __future__ import annotations

import typer

from provision.cli.options import ActiveOpt, JsonOpt, NowOpt, SpecArg
from provision.cli.output import out, print_json


def health(spec: SpecArg, now: NowOpt = False, active: ActiveOpt = False, json_out: JsonOpt = False) -> None:
    """Show each compute node's last health pass: its checks, what it told Slurm, and when; `--now` runs a pass on
    every compute node first (all at once, each bounded in time).

    The program runs on the nodes (Slurm's HealthCheckProgram and the gpu-provision-health service); a failed check
    drains the node with a reason that names the check first ("hc:munge: ... (gpu-provision-health)"), a pass
    resumes only those. `--active`: the last pass of the active checks (health.active: measurements on idle nodes,
    "ac:<check>: ... (gpu-provision-active)" drains), where it ran (a job, or directly on a node they drained) and
    why a pass gave no verdict; what it read joins the report index (reports/index.html: each node's latest pass, and
    the passes that failed or drained). Exit 1 when a node failed its pass or (without --active) has no record."""
    from provision.cluster import lifecycle
    from provision.node import health as node_health
    from provision.spec.loader import load_spec

    loaded = load_spec(spec)
    cluster = lifecycle.current_cluster(loaded)
    if active:
        from provision.certify.report import record_active
        from provision.state import ClusterState

        passes, title = node_health.last_active(cluster), "active checks (last pass)"
        record_active([p.to_dict() for p in passes], ClusterState.for_spec(loaded))
    else:
        passes = node_health.run_now(loaded, cluster) if now else node_health.last_passes(cluster)
        title = "node health (a pass now)" if now else "node health (last pass)"
    if json_out:
        print_json({"nodes": [p.to_dict() for p in passes]})
    else:
        out.print(table(passes, title))
    failed = any(p.ok is False for p in passes) if active else not all(p.ok for p in passes)
    raise typer.Exit(1 if failed else 0)


def table(passes, title: str):
    """One row per node: result, failed checks, what the pass told Slurm (or why there is no record), when and who
    ran it; then Slurm's reason of each node that has one, whole. Fits 80 columns: long values fold, never cut."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from provision import hostlist

    grid = Table(title=title, box=None, pad_edge=False, title_justify="left", header_style="bold underline")
    for column in ("node", "result", "failed checks", "told Slurm", "when", "by"):
        grid.add_column(column, overflow="fold", no_wrap=column == "when")
    reasons: dict[str, list[str]] = {}
    for p in passes:
        result = "no record" if p.ok is None else ("healthy" if p.ok else "failed")
        cells = (p.node, result, ", ".join(p.failed), p.error or p.action, p.started[5:19].replace("T", " "), p.trigger)
        grid.add_row(*(Text(cell) for cell in cells))  # plain text: a reason is never read as markup
        if p.reason:
            reasons.setdefault(p.reason, []).append(p.node)
    if not reasons:
        return grid
    listed = Table.grid(padding=(0, 2))
    listed.add_column(overflow="fold")
    listed.add_column(overflow="fold")
    for reason, nodes in reasons.items():
        listed.add_row(Text(hostlist.compress(nodes)), Text(reason))
    return Group(grid, Text("Slurm's reason"), listed)
