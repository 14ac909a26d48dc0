"""Every node as slurmctld has it, in one query from the controller (never one per node).

One SSH command asks sinfo for all nodes at once and the hold reservation for its nodes. `sinfo -O` with a `|` after
each field prints every field whole (no width, no padding) on Slurm 22.05 and 24.11 alike; the reason comes last, so a
`|` inside it is kept (tests/fixtures/slurm/status holds outputs recorded on both versions). `scontrol show node
--json` would do too on both, but its layout changed between the two (v0.0.38: "state" a string with "state_flags";
v0.0.42: "state" a list, times in {"number": ...}) and `sinfo --json` does not exist on 22.05.

StateComplete is the base state and every flag, lower case, joined by '+' ("allocated+drain",
"idle+maintenance+reserved", "down+not_responding"); User and TimeStamp say who set the reason and when ("Unknown"
when there is none); Reason is "none" when there is none.
"""
from __future__ import annotations

import re
import shlex

from provision.errors import ProvisionError
from provision.records import ClusterInfo
from provision.remote.commands import run_on
from provision.slurm import admin
from provision.status.records import SlurmNode, SlurmView

FIELDS = ("NodeList", "StateComplete", "User", "TimeStamp", "Reason")
QUERY_TIMEOUT_S = 15  # sinfo waits this long at most for a slurmctld that does not answer
END = "@@ sinfo exit"  # the line after sinfo's output, with its exit status
COMMAND = (f"timeout {QUERY_TIMEOUT_S} sinfo -h -N -O '{','.join(f + ':|' for f in FIELDS[:-1])},{FIELDS[-1]}:'; "
           f"echo \"{END} $?\"; "
           f"scontrol -o show reservation {admin.HOLD_RESERVATION} 2>/dev/null; true")
_UNSET = ("", "Unknown", "none", "(null)", "N/A")
_END = re.compile(rf"^{re.escape(END)} (?P<rc>\d+)$", re.MULTILINE)


def read(cluster: ClusterInfo) -> SlurmView:
    """Ask the controller (sudo where the SSH user is not root); a view with `error` when it cannot answer."""
    controller = cluster.controller
    sudo = "" if cluster.ssh_user == "root" else "sudo -n "
    try:
        result = run_on(cluster, controller, sudo + "sh -c " + shlex.quote(COMMAND), timeout=QUERY_TIMEOUT_S + 15.0)
    except ProvisionError as exc:
        return SlurmView(error=f"cannot reach the controller {controller.name}: {exc}", asked=controller.name)
    return parse(result.stdout, result.stderr, asked=controller.name)


def parse(stdout: str, stderr: str = "", asked: str = "") -> SlurmView:
    """The view from COMMAND's output: the nodes, or why sinfo had none (its own error line)."""
    end = _END.search(stdout)
    if end is None:
        return SlurmView(error=f"the query did not run on {asked or 'the controller'}: {_last_line(stderr, stdout)}",
                         asked=asked)
    rc = int(end["rc"])
    if rc != 0:
        why = f"no answer within {QUERY_TIMEOUT_S} s" if rc == 124 else _last_line(stderr, f"exit {rc}")
        return SlurmView(error=f"slurmctld did not answer sinfo on {asked or 'the controller'}: {why}", asked=asked)
    held = set(admin.reservation_nodes(stdout[end.end():]))
    nodes = {}
    for line in stdout[:end.start()].splitlines():
        node = parse_line(line, held)
        if node is not None and node.name not in nodes:  # a node in two partitions is listed twice
            nodes[node.name] = node
    return SlurmView(nodes=nodes, asked=asked)


def parse_line(line: str, held: set[str] = frozenset()) -> SlurmNode | None:
    """One sinfo line: name|state+flags|user|time|reason (None for a line that is not one)."""
    parts = line.split("|", len(FIELDS) - 1)
    if len(parts) < len(FIELDS) or not parts[0].strip():
        return None
    name, state, user, when, reason = (p.strip() for p in parts)
    base, *flags = state.lower().split("+")
    return SlurmNode(name=name, state=base.rstrip("*~#!%$@^-"), flags=tuple(flags), reason=_value(reason),
                     reason_user=_value(user), reason_time=_value(when), held=name in held)


def _value(text: str) -> str:
    """A field, or "" where Slurm prints a placeholder for nothing."""
    return "" if text in _UNSET else text


def _last_line(text: str, default: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else default

