"""`provision certify`: measure the running cluster, show a per-node table, write JSON, JUnit and HTML reports."""
from __future__ import annotations

import typer

from provision.cli.options import DrainOpt, JsonOpt, LevelOpt, QuietOpt, SpecArg
from provision.cli.output import print_json, progress_printer
from provision.errors import EXIT_FAILED


def certify(
    spec: SpecArg,
    level: LevelOpt = "quick",
    drain_failed: DrainOpt = False,
    release: bool = typer.Option(False, "--release", help="certify only the nodes held out of service (the hold "
                                 "reservation) and return those that pass to service; failing ones stay held, "
                                 "drained with their failed checks as the reason"),
    network_seed: int | None = typer.Option(None, "--network-seed", help="draw the network matrix's sampled pairs "
                                            "(quick, standard) from this seed: a past report's network seed replays "
                                            "its pairs; default a fresh one"),
    quiet: QuietOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Certify the running cluster (GPU, NCCL, network, Slurm, filesystem); exit 1 if a check fails.

    It first says what the level adds on this cluster, and what of that is skipped here and why (standard on a
    cluster without GPU nodes: the GPU benchmarks and NCCL)."""
    # The library is imported when the command runs, not when the CLI starts (tests/unit/cli/test_startup.py).
    from provision.certify import levels
    from provision.certify.control.run import CertifyOptions
    from provision.certify.report import json_report
    from provision.cli.certify_view import render, show_notes
    from provision.cluster import lifecycle
    from provision.spec.loader import load_spec

    options = CertifyOptions(level=level, drain_failed=drain_failed, network_seed=network_seed)
    progress = progress_printer(quiet or json_out)
    loaded = load_spec(spec)
    for note in levels.explain(options.level, loaded):
        progress(note.line())
    if release:
        run = lifecycle.certify_release(loaded, options, progress)
        if run is None:
            if json_out:
                print_json({"held": [], "verdict": None})
            raise typer.Exit(0)
    else:
        run = lifecycle.certify(loaded, options, progress)
    if json_out:
        print_json(json_report.to_document(run.report))
        show_notes(run)  # stderr: stdout holds only the report
    else:
        render(run)
    if not run.ok:
        raise typer.Exit(EXIT_FAILED)
