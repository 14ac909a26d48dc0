"""`provision deploy`: run the roles on the cluster with live progress and a recap."""
from __future__ import annotations

import typer

from provision.cli.options import (DRAIN_TIMEOUT_S, KEEP_RUNS, CheckOpt, DrainTimeoutOpt, ForceOpt, JsonOpt, KeepRunsOpt,
                                   LimitOpt, QuietOpt, RebindOpt, RetryOpt, RollingOpt, SpecArg, TagsOpt)
from provision.cli.output import print_json
from provision.errors import EXIT_FAILED


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
    rebind: RebindOpt = False,
    quiet: QuietOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Install and configure the cluster's software with Ansible; exit 1 if any host fails.

    With --check nothing changes: it lists per host the tasks a real run would change, shows the unified diff of
    each file they would write (a diff many hosts share once, with their hostlist; never a no_log task's), and
    exits 4 when there are any (the cluster drifted from the spec), 0 when there are none.

    With --rolling N (or N%) a running cluster changes a batch of compute nodes at a time: held out of service, its
    jobs waited for (--drain-timeout, --force), the roles applied, certified, released; the roll stops at the first
    batch that fails, which stays held with the reason, and the batches after it are not touched."""
    if rolling is not None:
        _rolling(spec, rolling, drain_timeout, force, keep_runs, quiet, json_out, rebind)
        return
    # The library is imported when the command runs, not when the CLI starts (tests/unit/cli/test_startup.py).
    from provision.cli.deploy_view import DeployWatch, recap
    from provision.cluster import lifecycle
    from provision.deploy.records import DeployOptions

    options = DeployOptions(tags=tags, limit=limit, check=check, retry_failed=retry_failed, keep_runs=keep_runs)
    loaded = _bound(spec, rebind, check)
    with DeployWatch(quiet, json_out) as watch:
        result = lifecycle.deploy(loaded, options, watch.update, source=spec)
    if json_out:
        print_json(result.as_dict())
    else:
        recap(result)
    raise typer.Exit(result.exit_code)


def _bound(spec, rebind: bool, check: bool = False):
    """The spec, after the binding check: a file other than the one the cluster was last applied from is named on
    stderr with its difference, and refused without --rebind unless this is a --check (provision.cluster.binding)."""
    from provision.cli.output import err
    from provision.cluster import binding
    from provision.spec.loader import load_spec

    loaded = load_spec(spec)
    if not check:
        binding.enforce(loaded, spec, "deploy", rebind, err.print)
    return loaded


def _rolling(spec, batch: str, drain_timeout: float, force: bool, keep_runs: int, quiet: bool, json_out: bool,
             rebind: bool = False) -> None:
    """deploy --rolling: the batches, then one line per batch."""
    from provision.cli.deploy_view import DeployWatch
    from provision.cli.output import out
    from provision.cluster import lifecycle
    from provision.cluster.rolling import RollOptions

    options = RollOptions(batch=batch, drain_timeout_s=drain_timeout, force=force, keep_runs=keep_runs)
    loaded = _bound(spec, rebind)
    with DeployWatch(quiet, json_out) as watch:
        result = lifecycle.deploy_rolling(loaded, options, watch.update, watch.line, source=spec)
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
