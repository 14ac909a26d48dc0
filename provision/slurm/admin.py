"""What `up` asks of a running Slurm while it changes the cluster, from the controller over SSH.

- removing nodes: drain them with a reason, wait until their jobs end (or cancel them when forced), stop slurmd;
- nodes that joined: the slurm role holds them in a maintenance reservation (HOLD_RESERVATION) that only root and
  the SSH user can run in; certify runs its jobs inside it, and passing nodes are released from it here.

Node names reach the shell quoted, and are validated host names before that (spec.shapes).
"""
from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Sequence

from provision import hostlist
from provision.errors import ConnectionFailure, ProvisionError
from provision.records import ClusterInfo, NodeInfo, Progress, silent
from provision.remote.commands import CommandResult, run_on

HOLD_RESERVATION = "gpu_provision_certify"  # the slurm role's slurm_hold_reservation
REMOVE_REASON = "gpu-provision: removing from the cluster"
DEFAULT_DRAIN_TIMEOUT_S = 600.0
POLL_S = 2.0
WAIT_REPORT_S = 10.0  # while jobs are waited for: a progress line at least this far apart (or when the jobs change)

Runner = Callable[[str], CommandResult]  # runs one command on the controller


class DrainTimeout(ProvisionError):
    """Nodes to remove still run jobs after the drain timeout; nothing was removed."""


def controller_runner(cluster: ClusterInfo) -> Runner:
    """Run commands on the controller as root (sudo -n where the SSH user is not root)."""
    sudo = "" if cluster.ssh_user == "root" else "sudo -n "
    return lambda command: run_on(cluster, cluster.controller, sudo + command, timeout=120.0)


def _checked(run: Runner, command: str) -> str:
    """Run a command that must succeed; its stdout."""
    result = run(command)
    if result.rc != 0:
        raise ProvisionError(f"on the controller, `{command}` failed (exit {result.rc}): "
                             f"{(result.stderr or result.stdout).strip()[:300]}",
                             hint="check slurmctld (`provision exec SPEC -- scontrol ping`), then run `provision up` "
                                  "again")
    return result.stdout


def jobs_on(run: Runner, names: Sequence[str]) -> list[str]:
    """Ids of the jobs that run (or are being set up) on any of these nodes."""
    out = _checked(run, f"squeue -h -o %A -t RUNNING,COMPLETING,CONFIGURING,SUSPENDED "
                        f"-w {shlex.quote(hostlist.compress(list(names)))}")
    return sorted({line.strip() for line in out.splitlines() if line.strip()})


def drain_for_removal(run: Runner, names: Sequence[str], timeout_s: float = DEFAULT_DRAIN_TIMEOUT_S,
                      force: bool = False, progress: Progress = silent,
                      sleep: Callable[[float], None] = time.sleep) -> None:
    """Drain the nodes, then wait until no job runs on them; `force` cancels what still runs at the timeout.

    Raises DrainTimeout (the nodes stay drained, nothing else changed) when jobs outlive the timeout unforced."""
    nodes = hostlist.compress(list(names))
    _checked(run, f"scontrol update nodename={shlex.quote(nodes)} state=drain reason={shlex.quote(REMOVE_REASON)}")
    progress(f"drained {nodes}; waiting for their jobs (up to {timeout_s:.0f} s)")
    wait_for_jobs(run, names, timeout_s, force, progress, sleep, "nothing was removed (the nodes stay drained)")


def wait_for_jobs(run: Runner, names: Sequence[str], timeout_s: float, force: bool, progress: Progress = silent,
                  sleep: Callable[[float], None] = time.sleep, unforced: str = "nothing was changed") -> None:
    """Wait until no job runs on the nodes; at the timeout cancel them when forced, else DrainTimeout. While it waits
    it reports the jobs, the time waited and the timeout (when the jobs change, else every WAIT_REPORT_S)."""
    nodes = hostlist.compress(list(names))
    started = time.monotonic()
    reported: tuple[list[str], float] | None = None
    while (jobs := jobs_on(run, names)) and time.monotonic() < started + timeout_s:
        reported = _report_wait(progress, jobs, nodes, started, timeout_s, reported)
        sleep(POLL_S)
    if not jobs:
        return
    if not force:
        raise DrainTimeout(f"{nodes} still run job(s) {', '.join(jobs)} after {timeout_s:.0f} s; {unforced}",
                           hint="wait and run the command again, raise --drain-timeout, or pass --force to cancel "
                                "those jobs")
    progress(f"cancelling job(s) {', '.join(jobs)} on {nodes} (--force)")
    _checked(run, f"scancel --nodelist={shlex.quote(nodes)}")
    end = time.monotonic() + 60.0
    while jobs_on(run, names) and time.monotonic() < end:
        sleep(POLL_S)


def _report_wait(progress: Progress, jobs: list[str], nodes: str, started: float, timeout_s: float,
                 last: tuple[list[str], float] | None) -> tuple[list[str], float]:
    """`waiting for job(s) 41, 42 on compute[01-02]: 20 s of 600 s`, unless the same jobs were reported lately."""
    now = time.monotonic()
    if last is not None and last[0] == jobs and now - last[1] < WAIT_REPORT_S:
        return last
    progress(f"waiting for job(s) {', '.join(jobs)} on {nodes}: {now - started:.0f} s of {timeout_s:.0f} s "
             "(--drain-timeout)")
    return jobs, now


def stop_slurmd(cluster: ClusterInfo, nodes: Sequence[NodeInfo], progress: Progress = silent) -> list[str]:
    """Stop and disable slurmd on nodes leaving the cluster (a static host keeps everything else); the nodes that
    could not be reached (a node already gone needs nothing)."""
    sudo = "" if cluster.ssh_user == "root" else "sudo -n "
    missed = []
    for node in nodes:
        try:
            run_on(cluster, node, f"{sudo}systemctl disable --now slurmd", timeout=60.0)
        except ConnectionFailure:
            missed.append(node.name)
    if nodes:
        progress(f"slurmd stopped on {hostlist.compress([n.name for n in nodes if n.name not in missed]) or 'none'}")
    return missed


def held_nodes(run: Runner) -> list[str]:
    """The nodes in the hold reservation now (empty when there is none)."""
    result = run(f"scontrol -o show reservation {HOLD_RESERVATION}")
    return reservation_nodes(result.stdout) if result.rc == 0 else []


def reservation_nodes(text: str) -> list[str]:
    """The nodes of a reservation as `scontrol -o show reservation` prints it (empty when it has none)."""
    value = _reservation_field(text, "Nodes")
    return hostlist.expand(value) if value and value != "(null)" else []


def _reservation_field(text: str, name: str) -> str:
    """One field of `scontrol -o show reservation` (empty when it is not there)."""
    return next((field.split("=", 1)[1] for field in text.split() if field.startswith(f"{name}=")), "")


def hold(run: Runner, names: Sequence[str], users: str = "root") -> None:
    """Put nodes in the hold reservation (made when there is none): no new user job starts there, running jobs go
    on (IGNORE_JOBS), root and `users` can run jobs inside it (certify); `users` missing from a reservation made
    earlier are added to it."""
    shown = run(f"scontrol -o show reservation {HOLD_RESERVATION}")
    if shown.rc != 0:
        _checked(run, f"scontrol create reservation ReservationName={HOLD_RESERVATION} "
                      f"Nodes={shlex.quote(hostlist.compress(sorted(set(names))))} StartTime=now Duration=infinite "
                      f"Users={shlex.quote(users)} Flags=MAINT,IGNORE_JOBS")
        return
    held = reservation_nodes(shown.stdout)
    wanted = sorted(set(held) | set(names))
    if wanted != sorted(held):
        _checked(run, f"scontrol update ReservationName={HOLD_RESERVATION} "
                      f"Nodes={shlex.quote(hostlist.compress(wanted))}")
    admitted = _reservation_field(shown.stdout, "Users").split(",")
    missing = [user for user in users.split(",") if user and user not in admitted]
    if missing:
        _checked(run, f"scontrol update ReservationName={HOLD_RESERVATION} Users+={shlex.quote(','.join(missing))}")


def node_reasons(run: Runner, names: Sequence[str]) -> dict[str, tuple[str, str]]:
    """node -> (state, reason) as sinfo has them now."""
    out = _checked(run, f"sinfo -h -N -o '%N|%T|%E' -n {shlex.quote(hostlist.compress(list(names)))}")
    found = {}
    for line in out.splitlines():
        node, _, rest = line.partition("|")
        state, _, reason = rest.partition("|")
        found[node.strip()] = (state.strip(), reason.strip())
    return found


def resume_drained(run: Runner, names: Sequence[str], prefix: str, progress: Progress = silent,
                   sleep: Callable[[float], None] = time.sleep) -> list[str]:
    """Resume the nodes drained with a reason that starts with `prefix` (never another drain); those resumed."""
    drained = [n for n, (state, reason) in node_reasons(run, names).items()
               if "drain" in state and reason.startswith(prefix)]
    if drained:
        _checked(run, f"scontrol update nodename={shlex.quote(hostlist.compress(drained))} state=resume")
        progress(f"resumed {hostlist.compress(drained)} (drained by '{prefix}') to certify them again")
        wait_responding(run, drained, sleep=sleep)
    return drained


def wait_responding(run: Runner, names: Sequence[str], timeout_s: float = 30.0,
                    sleep: Callable[[float], None] = time.sleep) -> None:
    """Wait until slurmctld has heard from the nodes again (a resumed node is "not responding", `*`, until its next
    ping); at the timeout, go on (certify reports such a node)."""
    end = time.monotonic() + timeout_s
    while any(state.endswith("*") for state, _ in node_reasons(run, names).values()) and time.monotonic() < end:
        sleep(1.0)


def release(run: Runner, passed: Sequence[str], progress: Progress = silent) -> list[str]:
    """Take nodes that passed certify out of the hold reservation (deleting it once empty); the nodes still held."""
    held = held_nodes(run)
    keep = [n for n in held if n not in set(passed)]
    if held and not keep:
        _checked(run, f"scontrol delete ReservationName={HOLD_RESERVATION}")
    elif len(keep) < len(held):
        _checked(run, f"scontrol update ReservationName={HOLD_RESERVATION} "
                      f"Nodes={shlex.quote(hostlist.compress(keep))}")
    released = [n for n in held if n not in keep]
    if released:
        progress(f"released {hostlist.compress(released)} into service")
    return keep
