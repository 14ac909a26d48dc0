"""`provision health`: the last pass of the node health program on every compute node."""
from __future__ import annotations

import typer

from provision.cli.options import JsonOpt, SpecArg
from provision.cli.output import out, print_json


def health(spec: SpecArg, json_out: JsonOpt = False) -> None:
    """Show each compute node's last health pass: its checks, what it told Slurm, and when.

    The program runs on the nodes (Slurm's HealthCheckProgram and the gpu-provision-health service); a failed check
    drains the node with a reason starting "gpu-provision-health:", a pass resumes only those. Exit 1 when a node
    failed its last pass or has no record."""
    from rich.table import Table

    from provision import health as node_health, lifecycle
    from provision.spec.loader import load_spec

    passes = node_health.last_passes(lifecycle.current_cluster(load_spec(spec)))
    if json_out:
        print_json({"nodes": [p.to_dict() for p in passes]})
    else:
        table = Table(title="node health (last pass)")
        for column in ("node", "result", "failed checks", "action", "Slurm's reason", "when", "by"):
            table.add_column(column)
        for p in passes:
            result = "no record" if p.ok is None else ("healthy" if p.ok else "failed")
            table.add_row(p.node, result, ", ".join(p.failed), p.error or p.action, p.reason,
                          p.started[:19].replace("T", " "), p.trigger)
        out.print(table)
    raise typer.Exit(0 if all(p.ok for p in passes) else 1)
