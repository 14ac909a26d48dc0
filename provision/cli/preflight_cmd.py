"""`provision preflight`: a per-node table of what the nodes are, before anything is installed."""
from __future__ import annotations

import typer

from provision.cli.options import PREFLIGHT_CONCURRENCY, AcceptOpt, ConcurrencyOpt, JsonOpt, SpecArg
from provision.cli.output import print_json
from provision.errors import EXIT_FAILED


def preflight(
    spec: SpecArg,
    accept_new_host_keys: AcceptOpt = False,
    concurrency: ConcurrencyOpt = PREFLIGHT_CONCURRENCY,
    json_out: JsonOpt = False,
) -> None:
    """Check every node over SSH (reachability, keys, OS, disk, clock, GPUs, fabric); exit 1 on a fail."""
    # The library is imported when the command runs, not when the CLI starts (tests/unit/cli/test_startup.py).
    from provision.cli.preflight_view import render
    from provision.cluster import lifecycle
    from provision.spec.loader import load_spec

    report = lifecycle.preflight(load_spec(spec), accept_new_host_keys=accept_new_host_keys,
                                 concurrency=concurrency)
    if json_out:
        print_json(report.as_dict())
    else:
        render(report)
    if report.failed_nodes:
        raise typer.Exit(EXIT_FAILED)
