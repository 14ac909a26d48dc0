"""Every argument and option the commands take, as annotated types (one place, so commands read alike)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from provision import clusters
from provision.lifecycle import provider_names


def _spec_or_name(value: Path) -> Path:
    """A spec file, or the name of a cluster this machine brought up (its spec copy in the state)."""
    return clusters.resolve(value) if value is not None else value


SpecArg = Annotated[Path, typer.Argument(help="the cluster spec (YAML), or the name of a cluster brought up here",
                                         show_default=False, callback=_spec_or_name)]
JsonOpt = Annotated[bool, typer.Option("--json", help="print the result as JSON")]
FindingsJsonOpt = Annotated[bool, typer.Option("--json", help="findings as JSON")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="no progress lines (CI logs)")]

# init
ProviderOpt = Annotated[str, typer.Option("--provider", "-p", help=" | ".join(provider_names()))]
InitOutputOpt = Annotated[Path | None, typer.Option("--output", "-o", help="write here instead of stdout")]
NameOpt = Annotated[str, typer.Option(help="cluster name")]
ForceOpt = Annotated[bool, typer.Option(help="overwrite an existing file")]
# inventory
InventoryOutputOpt = Annotated[Path, typer.Option("--output", "-o", help="directory to write the inventory into")]
# up
RedoOpt = Annotated[list[str], typer.Option("--redo", help="run a finished stage again (repeatable)")]
SkipPreflightOpt = Annotated[bool, typer.Option("--skip-preflight", help="do not check nodes first")]
SkipCertifyOpt = Annotated[bool, typer.Option("--skip-certify", help="do not certify at the end")]
DrainTimeoutOpt = Annotated[float, typer.Option(
    "--drain-timeout", min=0, help="seconds nodes the spec removes may finish their running jobs (drained first)")]
ForceOpt = Annotated[bool, typer.Option(
    "--force", help="cancel the jobs still running on nodes to remove when --drain-timeout ends")]
# down
OrphansOpt = Annotated[bool, typer.Option(
    "--orphans", help="also remove cloud resources tagged with the cluster's name that this machine's "
                      "state does not record (after a lost state directory)")]
# exec
CommandArg = Annotated[list[str], typer.Argument(help="the command and its arguments (after --)")]
NodesOpt = Annotated[list[str], typer.Option(
    "--node", "-n", metavar="NODES", help="nodes: a hostlist such as compute[01-03] or a group name; repeatable (default: the controller)")]
# preflight
AcceptOpt = Annotated[bool, typer.Option("--accept-new-host-keys", help="record the host key of a first contact")]
ConcurrencyOpt = Annotated[int, typer.Option(help="nodes checked at once")]
# deploy
TagsOpt = Annotated[str | None, typer.Option("--tags", help="only roles/tasks with these tags")]
LimitOpt = Annotated[str | None, typer.Option("--limit", help="only these hosts (Ansible pattern)")]
CheckOpt = Annotated[bool, typer.Option("--check", help="plan: check mode with diff, change nothing")]
RetryOpt = Annotated[bool, typer.Option("--retry-failed", help="rerun only last run's failed hosts")]
KeepRunsOpt = Annotated[int, typer.Option("--keep-runs", min=1,
                                          help="Ansible run folders kept under the state's runs/ (the newest)")]
# certify
LevelOpt = Annotated[str, typer.Option("--level", "-l", help="quick (under a minute), standard (GPU benchmarks, "
                                                             "NCCL; ~10 min), full (burn-in)")]
DrainOpt = Annotated[bool, typer.Option("--drain-failed", help="drain failed nodes in Slurm, naming the checks")]
