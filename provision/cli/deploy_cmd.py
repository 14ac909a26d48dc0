"""`provision deploy`: run the roles on the cluster with live progress and a recap."""
from __future__ import annotations

import typer

from provision.cli.options import (DRAIN_TIMEOUT_S, CheckOpt, DrainTimeoutOpt, ForceOpt, JsonOpt, KeepRunsOpt, LimitOpt,
                                   QuietOpt, RetryOpt, RollingOpt, SpecArg, TagsOpt)
from provision.cli.output import print_json
from provision.deploy.records import KEEP_RUNS, DeployOptions
from provision.errors import EXIT_CHANGES, EXIT_FAILED


def deploy(
    spec: SpecArg,
    tags: TagsOpt = None,
    limit: LimitOpt = None,
    check: CheckOpt = False,
    retry_failed: RetryOpt = False,
    keep_runs: KeepRunsOpt = KEEP_RUNS,
    rolling: RollingOpt = None,
    drain_timeout: DrainTimeoutOpt = DRAIN_TIMEOUT_S,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Install and configure the cluster's software with Ansible; exit 1 if any host fails.

    With --check nothing changes: it lists per host the tasks a real run would change and exits 4 when there
    are any (the cluster drifted from the spec), 0 when there are none.

    With --rolling N (or N%) a running cluster changes a batch of compute nodes at a time: held out of service, its
    jobs waited for (--drain-timeout, --force), the roles applied, certified, released; the roll stops at the first
    batch that fails, which stays held with the reason, and the batches after it are not touched."""
    if rolling is not None:
        _rolling(spec, rolling, drain_timeout, force, keep_runs, quiet, json_out)
        return
    # The library is imported when the command runs, not when the CLI starts (tests/unit/cli/test_startup.py).
    from provision import lifecycle
    from provision.cli.deploy_view import DeployWatch, recap
    from provision.spec.loader import load_spec

    options = DeployOptions(tags=tags, limit=limit, check=check, retry_failed=retry_failed, keep_runs=keep_runs)
    with DeployWatch(quiet, json_out) as watch:
        result = lifecycle.deploy(load_spec(spec), options, watch.update)
    if json_out:
        print_json(result.as_dict())
    else:
        recap(result)
    if not result.ok:
        raise typer.Exit(EXIT_FAILED)
    if result.check_mode and result.changed_hosts:
        raise typer.Exit(EXIT_CHANGES)


def _rolling(spec, batch: str, drain_timeout: float, force: bool, keep_runs: int, quiet: bool, json_out: bool) -> None:
    """deploy --rolling: the batches, then one line per batch."""
    from provision import lifecycle
    from provision.cli.deploy_view import DeployWatch
    from provision.cli.output import out, progress_printer
    from provision.rolling import RollOptions
    from provision.spec.loader import load_spec

    options = RollOptions(batch=batch, drain_timeout_s=drain_timeout, force=force, keep_runs=keep_runs)
    with DeployWatch(quiet, json_out) as watch:
        result = lifecycle.deploy_rolling(load_spec(spec), options, watch.update, progress_printer(quiet or json_out))
    if json_out:
        print_json(result.as_dict())
    else:
        if result.first_step:
            out.print(f"controller and other service nodes: {result.first_step}")
        for o in result.outcomes:
            out.print(f"batch {o.index} ({', '.join(o.nodes)}): {o.stage}{': ' + o.detail if o.detail else ''}")
        if result.untouched:
            out.print(f"not touched: {', '.join(result.untouched)}")
    if not result.ok:
        raise typer.Exit(EXIT_FAILED)
