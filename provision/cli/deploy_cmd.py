"""`provision deploy`: run the roles on the cluster with live progress and a recap."""
from __future__ import annotations

from typing import Annotated

import typer

from provision import lifecycle
from provision.cli.cluster_cmds import JsonOpt, QuietOpt
from provision.cli.deploy_view import LiveDeployView, quiet_lines, recap
from provision.cli.output import err, print_json
from provision.cli.spec_cmds import SpecArg
from provision.deploy.engine import DeployOptions, deploy as run_deploy
from provision.deploy.records import DeployResult
from provision.errors import EXIT_CHANGES, EXIT_FAILED
from provision.spec import load_spec


def run_with_view(spec, cluster, options: DeployOptions, quiet: bool, json_out: bool) -> DeployResult:
    """Run a deploy with the live view (or quiet task lines) and print the recap unless --json."""
    seen: set[str] = set()
    live = not quiet and not json_out and err.is_terminal
    with LiveDeployView(live) as view:
        on_update = view.update if live else (lambda p: quiet_lines(p, seen)) if not json_out else None
        result = run_deploy(spec, cluster, options, on_update)
    if json_out:
        print_json(result.as_dict())
    else:
        recap(result)
    return result


def deploy(
    spec: SpecArg,
    tags: Annotated[str | None, typer.Option("--tags", help="only roles/tasks with these tags")] = None,
    limit: Annotated[str | None, typer.Option("--limit", help="only these hosts (Ansible pattern)")] = None,
    check: Annotated[bool, typer.Option("--check", help="plan: check mode with diff, change nothing")] = False,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="rerun only last run's failed hosts")] = False,
    quiet: QuietOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Install and configure the cluster's software with Ansible; exit 1 if any host fails.

    With --check nothing changes: it lists per host the tasks a real run would change and exits 4 when there
    are any (the cluster drifted from the spec), 0 when there are none."""
    cluster_spec = load_spec(spec)
    cluster = lifecycle.current_cluster(cluster_spec)
    options = DeployOptions(tags=tags, limit=limit, check=check, retry_failed=retry_failed)
    result = run_with_view(cluster_spec, cluster, options, quiet, json_out)
    if not result.ok:
        raise typer.Exit(EXIT_FAILED)
    if result.check_mode and result.changed_hosts:
        raise typer.Exit(EXIT_CHANGES)
