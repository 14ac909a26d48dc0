"""Every argument and option the commands take, as annotated types (one place, so commands read alike).

Light on purpose: `provision --help`, `version` and shell completion import this and nothing heavy (no pydantic,
paramiko, boto3 or ansible_runner; tests/unit/cli/test_startup.py checks it).
"""
from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from provision import clusters
from provision.errors import UsageError
from provision.files import path_problem, shown
from provision.spec.example import providers

# Defaults the library owns, repeated here so that starting the CLI loads neither slurm_admin nor the preflight
# package (pydantic, paramiko); tests/unit/cli/test_startup.py holds each equal to its source.
DRAIN_TIMEOUT_S = 600.0  # provision.slurm_admin.DEFAULT_DRAIN_TIMEOUT_S
PREFLIGHT_CONCURRENCY = 32  # provision.preflight.DEFAULT_CONCURRENCY


def _usable_path(value: Path | None) -> Path | None:
    """A path the filesystem can take: a name over 255 bytes or a path over 4095 is refused here (exit 2), before
    any command touches it."""
    problem = path_problem(value) if value is not None else None
    if problem:
        raise UsageError(f"{shown(value)}: {problem}", hint="choose a shorter path")
    return value


def _spec_or_name(value: Path) -> Path:
    """A spec file, or the name of a cluster this machine brought up (its spec copy in the state)."""
    return clusters.resolve(_usable_path(value)) if value is not None else value


def complete_spec(incomplete: str) -> list[str]:
    """Shell completion of SPEC: the clusters brought up here, then files and folders (a folder ends in /)."""
    found = [name for name in clusters.names() if name.startswith(incomplete)]
    for path in sorted(glob.glob(glob.escape(incomplete) + "*")):
        found.append(path + "/" if os.path.isdir(path) else path)
    return found


SpecArg = Annotated[Path, typer.Argument(help="the cluster spec (YAML), or the name of a cluster brought up here",
                                         show_default=False, callback=_spec_or_name, autocompletion=complete_spec)]
JsonOpt = Annotated[bool, typer.Option("--json", help="print the result as JSON")]
FindingsJsonOpt = Annotated[bool, typer.Option("--json", help="findings as JSON")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="no progress lines (CI logs)")]

# init
ProviderOpt = Annotated[str, typer.Option("--provider", "-p", help=" | ".join(providers()))]
InitOutputOpt = Annotated[Path | None, typer.Option("--output", "-o", help="write here instead of stdout",
                                                   callback=_usable_path)]
NameOpt = Annotated[str, typer.Option(help="cluster name")]
ForceOpt = Annotated[bool, typer.Option(help="overwrite an existing file")]
# schema
SchemaOutputOpt = Annotated[Path | None, typer.Option("--output", "-o", help="write the schema here instead of stdout",
                                                     callback=_usable_path)]
# inventory
InventoryOutputOpt = Annotated[Path, typer.Option("--output", "-o", help="directory to write the inventory into",
                                                 callback=_usable_path)]
# up
RedoOpt = Annotated[list[str], typer.Option("--redo", help="run a finished stage again (repeatable)")]
SkipPreflightOpt = Annotated[bool, typer.Option("--skip-preflight", help="do not check nodes first")]
SkipCertifyOpt = Annotated[bool, typer.Option("--skip-certify", help="do not certify at the end")]
DrainTimeoutOpt = Annotated[float, typer.Option(
    "--drain-timeout", min=0, help="seconds the jobs on nodes leaving service (removed by the spec, or a rolling "
                                   "batch) may run on; they get no new jobs meanwhile")]
ForceOpt = Annotated[bool, typer.Option(
    "--force", help="cancel the jobs still running on nodes leaving service when --drain-timeout ends")]
# deploy
RollingOpt = Annotated[Optional[str], typer.Option(
    "--rolling", metavar="N|N%", help="change a running cluster a batch of compute nodes at a time (held, jobs "
                                      "waited for, roles applied, certified, released); stop at the first failure")]
# down
OrphansOpt = Annotated[bool, typer.Option(
    "--orphans", help="also remove cloud resources tagged with the cluster's name, whatever cluster id they carry, "
                      "that this machine's state does not record (after a lost state directory), and release the "
                      "name's claim")]
# exec
CommandArg = Annotated[list[str], typer.Argument(help="the command and its arguments (after --)")]
NodesOpt = Annotated[list[str], typer.Option(
    "--node", "-n", metavar="NODES",
    help="nodes: a hostlist such as compute[01-03] or a group name; repeatable (default: the controller)")]
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
