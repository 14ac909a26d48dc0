"""`provision deploy`: run the roles on the cluster with live progress and a recap."""
from __future__ import annotations

import typer

from provision import lifecycle
from provision.cli.deploy_view import DeployWatch, recap
from provision.cli.options import CheckOpt, JsonOpt, KeepRunsOpt, LimitOpt, QuietOpt, RetryOpt, SpecArg, TagsOpt
from provision.cli.output import print_json
from provision.deploy.engine import KEEP_RUNS, DeployOptions
from provision.errors import EXIT_CHANGES, EXIT_FAILED
from provision.spec.loader import load_spec


def deploy(
    spec: SpecArg,
    tags: TagsOpt = None,
    limit: LimitOpt = None,
    check: CheckOpt = False,
    retry_failed: RetryOpt = False,
    keep_runs: KeepRunsOpt = KEEP_RUNS,
    quiet: QuietOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Install and configure the cluster's software with Ansible; exit 1 if any host fails.

    With --check nothing changes: it lists per host the tasks a real run would change and exits 4 when there
    are any (the cluster drifted from the spec), 0 when there are none."""
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
