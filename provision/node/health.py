"""`provision health`: each compute node's health pass, the last one it recorded or one run now, over SSH.

The program itself runs on the nodes (provision/certify/probe/nodehealth); this side reads what it recorded, or starts
it on every compute node at once (`pass_now`) and reads what it printed: the same record either way.
"""
from __future__ import annotations

import json
import shlex
from datetime import datetime, timezone
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from provision.errors import UsageError
from provision.records import ClusterInfo, NodeInfo
from provision.remote.commands import CommandResult, run_across, run_on

if TYPE_CHECKING:
    from provision.spec.model import ClusterSpec

STATE_DIR = "/var/lib/gpu-provision/health"  # the slurm role's slurm_health_state_dir
PROGRAM = "/usr/local/sbin/gpu-provision-health"  # the slurm role's slurm_health_program
PASS_TIMEOUT_S = 30  # a pass ends within its own deadline (8 s); this bounds a node that hangs anyway
READ_TIMEOUT_S = 20.0
# One pass now. A pass already running (the service's or Slurm's) holds the program's lock and this one is skipped:
# try again until it has ended. The launcher prints nothing where the program is not installed yet.
_NOW = ("for try in 1 2 3 4 5 6 7 8 9 10; do out=$(timeout {timeout} {program} --json --trigger once); rc=$?; "
        "case $out in *'\"skipped\"'*) sleep 1 ;; *) break ;; esac; done; printf '%s\\n' \"$out\"; exit $rc")


@dataclass(frozen=True)
class NodeHealth:
    """One node's pass (the last one, or the one just run), or why there is none."""

    node: str
    ok: bool | None  # None: no record (not installed yet, node unreachable)
    failed: tuple[str, ...] = ()
    action: str = ""
    reason: str = ""
    started: str = ""
    seconds: float | None = None
    trigger: str = ""
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for --json."""
        return {**self.__dict__, "failed": list(self.failed)}


def parse(result: CommandResult) -> NodeHealth:
    """A node's last.json as its `cat` returned it."""
    if result.rc != 0:
        why = failure(result)
        return NodeHealth(result.node, None, error="no health record yet" if "No such file" in why else why)
    return from_record(result.node, result.stdout)


def parse_pass(result: CommandResult, timeout_s: int = PASS_TIMEOUT_S) -> NodeHealth:
    """What `gpu-provision-health --json` printed (exit 0 healthy, 1 a check failed: a record either way)."""
    if result.rc in (0, 1) and result.stdout.strip().startswith("{"):
        return from_record(result.node, result.stdout)
    if result.rc == 0 and not result.stdout.strip():
        return NodeHealth(result.node, None, error="the health program is not installed on the node yet (the "
                                                   "certify role brings it: run `provision deploy SPEC`)")
    if result.rc == 124 and not getattr(result, "error", None):
        return NodeHealth(result.node, None, error=f"no pass ran: it did not end within {timeout_s} s")
    return NodeHealth(result.node, None, error=f"no pass ran: {failure(result)}")


def failure(result: CommandResult) -> str:
    """Why a command gave no record: the reason its run recorded (the node unreachable, out of time), else the last
    line it wrote, else its exit status."""
    lines = (getattr(result, "error", None) or result.stderr.strip() or result.stdout.strip()).splitlines()
    return lines[-1].strip() if lines else f"exit {result.rc}"


def from_record(node: str, text: str) -> NodeHealth:
    """A pass record (last.json, or the program's --json output)."""
    try:
        data = json.loads(text)
        if "skipped" in data:
            return NodeHealth(node, None, error=f"no pass ran: {data['skipped']}")
        failed = tuple(f"{c['check']}[{c['subject']}]" if c.get("subject") else c["check"]
                       for c in data["checks"] if c["verdict"] == "fail")
        return NodeHealth(node, bool(data["ok"]), failed, str(data.get("action", "")),
                          str(data.get("reason", "")), str(data.get("started", "")), data.get("seconds"),
                          str(data.get("trigger", "")))
    except (ValueError, KeyError, TypeError) as exc:
        return NodeHealth(node, None, error=f"unreadable health record ({exc})")


def last_passes(cluster: ClusterInfo, state_dir: str = STATE_DIR,
                nodes: list[NodeInfo] | None = None) -> list[NodeHealth]:
    """Every compute node's last pass (or those of `nodes`), read at once."""
    command = f"cat {shlex.quote(state_dir + '/last.json')}"
    return [parse(r) for r in run_across(cluster, cluster.with_role("compute") if nodes is None else nodes, command,
                                         runner=_bounded(READ_TIMEOUT_S))]


def last_active(cluster: ClusterInfo, state_dir: str = STATE_DIR) -> list[NodeHealth]:
    """Every compute node's last pass of the active checks (active.json), read at once."""
    command = f"cat {shlex.quote(state_dir + '/active.json')}"
    return [parse_active(r) for r in run_across(cluster, cluster.with_role("compute"), command,
                                                runner=_bounded(READ_TIMEOUT_S))]


def parse_active(result: CommandResult) -> NodeHealth:
    """An active pass's record as `cat` returned it: ok None when it gave no verdict (skipped, preempted), `trigger`
    says where it ran (job, direct, skipped), `error` why there is no verdict."""
    if result.rc != 0:
        why = failure(result)
        return NodeHealth(result.node, None, error="no active pass yet" if "No such file" in why else why)
    try:
        data = json.loads(result.stdout)
        checks = data["checks"]
        failed = tuple(f"{c['check']}[{c['subject']}]" if c.get("subject") else c["check"]
                       for c in checks if c["verdict"] == "fail")
        started = datetime.fromtimestamp(float(data["started"]), timezone.utc).strftime("%Y-%m-%dT%H:%M:%S%z")
        return NodeHealth(result.node, None if not checks else not failed, failed, str(data.get("action", "")),
                          str(data.get("reason", "")), started, data.get("seconds"), str(data.get("where", "")),
                          "" if checks else str(data.get("why", "")) or "no verdict")
    except (ValueError, KeyError, TypeError) as exc:
        return NodeHealth(result.node, None, error=f"unreadable active record ({exc})")


def run_now(spec: ClusterSpec, cluster: ClusterInfo) -> list[NodeHealth]:
    """`provision health --now`: a pass on every compute node of a cluster whose spec has the program switched on."""
    if not spec.health.enabled:
        raise UsageError(f"{spec.name}: the node health program is switched off in the spec (health.enabled: false), "
                         "so no pass can run", hint="set health.enabled: true and run `provision up`, or leave out "
                                                    "--now to see the last passes")
    return pass_now(cluster)


def pass_now(cluster: ClusterInfo, program: str = PROGRAM, timeout_s: int = PASS_TIMEOUT_S) -> list[NodeHealth]:
    """Run a pass on every compute node now, all at once (it drains or resumes the node as any pass does); each
    node's record. A node that cannot be reached, or where no pass ran, has the reason instead."""
    sudo = "" if cluster.ssh_user == "root" else "sudo -n "
    command = sudo + "sh -c " + shlex.quote(_NOW.format(timeout=int(timeout_s), program=shlex.quote(program)))
    results = run_across(cluster, cluster.with_role("compute"), command, runner=_bounded(timeout_s + 30))
    return [parse_pass(r, timeout_s) for r in results]


def _bounded(seconds: float):
    """A runner whose command may run for `seconds` at most (the default lets a command run for minutes)."""
    return lambda cluster, node, command: run_on(cluster, node, command, timeout=seconds)
