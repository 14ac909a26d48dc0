"""`provision preflight`: a per-node table of what the nodes are, before anything is installed."""
from __future__ import annotations

import typer

from provision import lifecycle
from provision.cli.options import AcceptOpt, ConcurrencyOpt, JsonOpt, SpecArg
from provision.cli.output import print_json
from provision.cli.preflight_view import render
from provision.errors import EXIT_FAILED
from provision.preflight import DEFAULT_CONCURRENCY
from provision.spec.loader import load_spec


def preflight(
    spec: SpecArg,
    accept_new_host_keys: AcceptOpt = False,
    concurrency: ConcurrencyOpt = DEFAULT_CONCURRENCY,
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
