"""`provision certify`: measure the running cluster, show a per-node table, write JSON, JUnit and HTML reports."""
from __future__ import annotations

import typer

from provision import lifecycle
from provision.certify.control.run import CertifyOptions
from provision.certify.report import json_report
from provision.cli.certify_view import render
from provision.cli.options import DrainOpt, JsonOpt, LevelOpt, QuietOpt, SpecArg
from provision.cli.output import print_json, progress_printer
from provision.errors import EXIT_FAILED
from provision.spec.loader import load_spec


def certify(
    spec: SpecArg,
    level: LevelOpt = "quick",
    drain_failed: DrainOpt = False,
    quiet: QuietOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Certify the running cluster (GPU, NCCL, network, Slurm, filesystem); exit 1 if a check fails."""
    options = CertifyOptions(level=level, drain_failed=drain_failed)
    run = lifecycle.certify(load_spec(spec), options, progress_printer(quiet or json_out))
    if json_out:
        print_json(json_report.to_document(run.report))
    else:
        render(run)
    if not run.ok:
        raise typer.Exit(EXIT_FAILED)
