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

from provision.cluster import clusters
from provision.errors import UsageError
from provision.files import path_problem, shown
from provision.spec.example import providers

# Defaults the library owns, repeated here so that starting the CLI loads neither slurm.admin nor the preflight
# package (pydantic, paramiko); tests/unit/cli/test_startup.py holds each equal to its source.
DRAIN_TIMEOUT_S = 600.0  # provision.slurm.admin.DEFAULT_DRAIN_TIMEOUT_S
KEEP_RUNS = 20  # provision.deploy.records.KEEP_RUNS
EXEC_TIMEOUT_S = 300.0  # provision.remote.commands.DEFAULT_TIMEOUT_S
PREFLIGHT_CONCURRENCY = 32  # provision.preflight.DEFAULT_CONCURRENCY


def _usable_path(value: Path | None) -> Path | None:
    """A path the filesystem can take: a name over 255 bytes or a path over 4095 is refused here (exit 2), before
    any command touches it."""
    problem = path_problem(value) if value is not None else None
    if problem:
        raise UsageError(f"{shown(value)}: {problem}", hint="choose a shorter path")
    return value


def _spec_or_name(value: Path) -> Path:
    """A spec file, or the name of a cluster this machine brought up (its spec copy in the state); neither is
    refused here with "did you mean" from the clusters' names."""
    if value is None:
        return value
    found = clusters.resolve(_usable_path(value))
    if not os.path.lexists(found):
        also = ", and no cluster of that name here" if clusters.NAME.match(str(value)) else ""
        raise UsageError(f"{shown(value)}: no such file{also}", hint=clusters.suggestion(value))
    return found


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
ProviderOpt = Annotated[str, typer.Option("--provider", "-p", metavar="PROVIDER",
                                          help="where the nodes come from: " + " | ".join(providers()))]
InitOutputOpt = Annotated[Path | None, typer.Option("--output", "-o", help="write here instead of stdout",
                                                   callback=_usable_path)]
NameOpt = Annotated[Optional[str], typer.Option(
    metavar="NAME", help="cluster name written into the spec (default: demo, or the first free demo-2, demo-3, ... "
                         "when a cluster of that name exists on this machine)", show_default=False)]
OverwriteOpt = Annotated[bool, typer.Option("--force", help="overwrite the file -o names if it exists")]
# schema
SchemaOutputOpt = Annotated[Path | None, typer.Option("--output", "-o", help="write the schema here instead of stdout",
                                                     callback=_usable_path)]
# inventory
InventoryOutputOpt = Annotated[Path, typer.Option("--output", "-o", help="directory to write the inventory into",
                                                 callback=_usable_path)]
# up
RedoOpt = Annotated[list[str], typer.Option(
    "--redo", metavar="STAGE", help="run a finished stage again: nodes, preflight, inventory, deploy or certify "
                                    "(repeatable)")]
SkipPreflightOpt = Annotated[bool, typer.Option("--skip-preflight", help="do not check nodes first")]
SkipCertifyOpt = Annotated[bool, typer.Option("--skip-certify", help="do not certify at the end")]
DrainTimeoutOpt = Annotated[float, typer.Option(
    "--drain-timeout", min=0, metavar="SECONDS", help="seconds the jobs on nodes leaving service (removed by the spec, or a rolling "
                                   "batch) may run on; they get no new jobs meanwhile")]
ForceOpt = Annotated[bool, typer.Option(
    "--force", help="cancel the jobs still running on nodes leaving service when --drain-timeout ends")]
# deploy
RollingOpt = Annotated[Optional[str], typer.Option(
    "--rolling", metavar="N|N%", help="change a running cluster a batch of compute nodes at a time (held, jobs "
                                      "waited for, roles applied, certified, released); stop at the first failure")]
# up, deploy, down
RebindOpt = Annotated[bool, typer.Option(
    "--rebind", help="the cluster of this spec's name was last applied from another file: apply this one anyway "
                     "(after its difference to the spec copy is shown) and bind the cluster to it from now on; "
                     "without it, removing nodes or changing the configuration from another file is refused")]
# down
OrphansOpt = Annotated[bool, typer.Option(
    "--orphans", help="also remove cloud resources tagged with the cluster's name, whatever cluster id they carry, "
                      "that this machine's state does not record (after a lost state directory), and release the "
                      "name's claim")]
# exec
CommandArg = Annotated[list[str], typer.Argument(help="the command and its arguments (after --)")]
NodesOpt = Annotated[list[str], typer.Option(
    "--node", "-n", metavar="NODES",
    help="nodes: a hostlist such as compute[01-03], a group name, or all; repeatable (default: the controller)")]
ExecTimeoutOpt = Annotated[float, typer.Option(
    "--timeout", min=1, metavar="SECONDS",
    help="how long the command may run on each node; then it is stopped there (its process group gets SIGTERM, "
         "then SIGKILL) and the node exits 124")]
# ssh
NodeArg = Annotated[str, typer.Argument(help="the node to log in to (a node name such as compute01)",
                                        show_default=False)]
SshCommandArg = Annotated[Optional[list[str]], typer.Argument(
    help="a command to run instead of a shell (after --)", show_default=False)]
# preflight
AcceptOpt = Annotated[bool, typer.Option("--accept-new-host-keys", help="record the host key of a first contact")]
ConcurrencyOpt = Annotated[int, typer.Option(metavar="N", help="how many nodes are checked at once")]
# deploy
TagsOpt = Annotated[str | None, typer.Option("--tags", metavar="TAGS",
                                             help="only the roles and tasks with these tags (comma-separated)")]
LimitOpt = Annotated[str | None, typer.Option("--limit", metavar="HOSTS",
                                              help="only these hosts (an Ansible pattern such as compute01,compute02)")]
CheckOpt = Annotated[bool, typer.Option("--check", help="change nothing: list per host the tasks a deploy would "
                                                      "change and the diff of each file; exit 4 on drift")]
RetryOpt = Annotated[bool, typer.Option("--retry-failed", help="rerun only the hosts that failed or were "
                                                              "unreachable in the last deploy")]
KeepRunsOpt = Annotated[int, typer.Option("--keep-runs", min=1, metavar="N",
                                          help="Ansible run folders kept under the state's runs/ (the newest)")]
# certify
LevelOpt = Annotated[str, typer.Option(
    "--level", "-l", metavar="quick|standard|full",
    help="how deep: quick (health, Slurm, MPI, network, filesystem; under a minute), standard (adds GPU benchmarks, "
         "NCCL, a longer DCGM diagnostic; ~10 min), full (adds a 30-minute GPU burn-in); certify says what the level "
         "adds on this cluster")]
DrainOpt = Annotated[bool, typer.Option("--drain-failed", help="drain failed nodes in Slurm, naming the checks")]
# health
NowOpt = Annotated[bool, typer.Option("--now", help="run a pass on every compute node now (it drains or resumes "
                                                    "nodes as any pass does) and show it")]
ActiveOpt = Annotated[bool, typer.Option("--active", help="show each compute node's last pass of the active checks "
                                                          "(health.active) instead, and record them in the report index")]
