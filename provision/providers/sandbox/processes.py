"""Processes the sandbox started, tracked by PID plus start time; signalled only after both match."""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from provision.providers.sandbox.record import Proc

NAMESPACE_KINDS = ("pid", "net", "mnt", "uts", "ipc")


def spawn(argv: list[str], log: Path) -> Proc | None:
    """Start a daemon in its own session, output appended to log; its identity, or None if it died at once."""
    with open(log, "ab") as handle:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    # Reap the child the moment it exits, even when this Python process lives on (a test run calling the
    # faults API): otherwise it stays a zombie that only this process could collect, and a teardown audit
    # run from another process would find it.
    threading.Thread(target=process.wait, name=f"reap-{process.pid}", daemon=True).start()
    return identify(process.pid)


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its closing ')'.
    return int(stat.rsplit(")", 1)[1].split()[19])


def state_letter(pid: int) -> str | None:
    """R, S, Z, ... from /proc/PID/stat, or None if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def identify(pid: int) -> Proc | None:
    """The identity of a live process, to record before relying on it."""
    start = start_time(pid)
    return Proc(pid, start) if start is not None else None


def is_ours(proc: Proc | None) -> bool:
    """Whether the recorded process still exists (the PID was not reused by someone else)."""
    return proc is not None and start_time(proc.pid) == proc.start


def running(proc: Proc | None) -> bool:
    """Whether the recorded process is ours and not a zombie."""
    return is_ours(proc) and state_letter(proc.pid) != "Z"


def signal_proc(proc: Proc | None, sig: int) -> bool:
    """Send a signal to a recorded process only if it is still ours; whether it was sent."""
    if not running(proc):
        return False
    try:
        os.kill(proc.pid, sig)
        return True
    except ProcessLookupError:
        return False


def wait_gone(procs: list[Proc], timeout: float, include_zombies: bool = False) -> list[Proc]:
    """Wait until the processes have exited (and, if asked, been reaped); return those still there."""
    deadline = time.monotonic() + timeout
    while True:
        left = [p for p in procs if (is_ours(p) if include_zombies else running(p))]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


def stop(procs: list[Proc], grace: float, include_zombies: bool = False) -> list[Proc]:
    """SIGTERM, wait up to grace seconds, then SIGKILL; return any that still would not go."""
    for proc in procs:
        signal_proc(proc, signal.SIGTERM)
    left = wait_gone(procs, grace)
    for proc in left:
        signal_proc(proc, signal.SIGKILL)
    return wait_gone(procs, 10.0, include_zombies)


def children(pid: int) -> list[int]:
    """Direct children of a process (from /proc/PID/task/*/children)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return out


def namespace_inode(pid: int, kind: str) -> int | None:
    """The inode of a process's namespace of a kind (pid, net, mnt, ...), None if unreadable."""
    try:
        return os.stat(f"/proc/{pid}/ns/{kind}").st_ino
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def namespaces(pid: int) -> dict[str, int]:
    """Every namespace inode of a process, for the audit after teardown."""
    found = {kind: namespace_inode(pid, kind) for kind in NAMESPACE_KINDS}
    return {kind: inode for kind, inode in found.items() if inode is not None}


def in_namespaces(inodes: set[int]) -> list[tuple[int, str]]:
    """Every process (pid, command) that lives in one of the given namespaces."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if any(namespace_inode(pid, kind) in inodes for kind in ("pid", "net", "mnt")):
            found.append((pid, command_name(pid)))
    return found


def command_name(pid: int) -> str:
    """The process's short command name, '?' if gone."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except (FileNotFoundError, ProcessLookupError):
        return "?"
