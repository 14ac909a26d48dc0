"""One operation per cluster at a time: the lock every command that changes a cluster or its state takes.

`up`, `deploy`, `down` and `certify --drain-failed` (and any later command that changes nodes or state) run
inside `cluster_lock(state, operation)`. The lock is a flock on <state root>/locks/<cluster>.lock: the kernel
drops it when its holder exits, however it exits (kill -9 included), so a dead process never keeps it. The file
holds the holder's record (operation, PID, host, start time) while it is held; a second command is refused with
that record, and a holder that finds a record left behind says it takes over from a process that ended without
releasing the lock. The lock is re-entrant within one thread, so `up` can run its deploy stage while holding it.
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from provision.errors import ClusterBusyError, StateError
from provision.state import ClusterState

_RECORD_BYTES = 4096


@dataclass(frozen=True)
class Holder:
    """Who holds a cluster's lock."""

    operation: str  # e.g. "up", "certify --drain-failed"
    pid: int
    host: str
    started: str  # local time, ISO 8601

    def describe(self) -> str:
        """e.g. `provision up` (PID 4242 on ctl, since 2025-01-01T10:00:00+00:00)."""
        return f"`provision {self.operation}` (PID {self.pid} on {self.host}, since {self.started})"


@dataclass
class _Held:
    """A lock this process holds: its descriptor, the thread that took it and how often it was re-entered."""

    fd: int
    thread: int
    holder: Holder
    depth: int = 1


_held: dict[str, _Held] = {}
_guard = threading.Lock()


def lock_path(state: ClusterState) -> Path:
    """Where a cluster's lock lives: beside the clusters, so taking it creates no cluster state."""
    return state.root / "locks" / f"{state.cluster}.lock"


@contextmanager
def cluster_lock(state: ClusterState, operation: str,
                 progress: Callable[[str], None] = lambda _: None) -> Iterator[Holder]:
    """Hold the cluster's lock for the block; ClusterBusyError (exit 3) naming the holder if another has it."""
    key = str(lock_path(state))
    with _guard:
        mine = _held.get(key)
        reentered = mine is not None and mine.thread == threading.get_ident()
        if reentered:
            mine.depth += 1
    if reentered:
        try:
            yield mine.holder
        finally:
            mine.depth -= 1
        return
    state.shared_dir("locks")  # made 0700, or checked to be this user's and closed to others' writes
    held = _acquire(lock_path(state), state.cluster, operation, progress)
    with _guard:
        _held[key] = held
    try:
        yield held.holder
    finally:
        with _guard:
            del _held[key]
        _release(held.fd)


def recorded_holder(state: ClusterState) -> Holder | None:
    """The holder the lock file names (read only, never locking): the live holder, or one that died holding it."""
    try:
        fd = os.open(lock_path(state), os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        return _read(fd)
    finally:
        os.close(fd)


def _acquire(path: Path, cluster: str, operation: str, progress: Callable[[str], None]) -> _Held:
    """Take the lock without waiting; record this process as the holder."""
    fd = _open(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _current_holder(fd)
        os.close(fd)
        who = holder.describe() if holder else "another command"
        raise ClusterBusyError(f"cluster '{cluster}' is busy: {who} holds its lock",
                               hint="wait for that command to finish, then run this one again") from None
    previous = _read(fd)
    if previous is not None:
        progress(f"took over the lock of {previous.describe()}, which ended without releasing it")
    holder = Holder(operation, os.getpid(), socket.gethostname(), datetime.now().astimezone().isoformat("T", "seconds"))
    _write(fd, holder)
    return _Held(fd, threading.get_ident(), holder)


def _current_holder(fd: int, wait_s: float = 2.0) -> Holder | None:
    """The live holder's record: a holder that has just taken the lock writes it a moment later, and until then the
    file is empty or still names the dead process it takes over from; read again for a little while."""
    deadline = time.monotonic() + wait_s
    while True:
        holder = _read(fd)
        if (holder is not None and _alive(holder)) or time.monotonic() >= deadline:
            return holder
        time.sleep(0.02)


def _alive(holder: Holder) -> bool:
    """Whether the recorded process still runs (a holder on another host is taken as alive)."""
    if holder.host != socket.gethostname():
        return True
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _open(path: Path) -> int:
    """Open (or create, 0600) the lock file in its checked directory; never follow a link."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise StateError(f"cannot open the cluster lock {path} ({exc.strerror})",
                         hint="check the state directory's permissions") from exc


def _read(fd: int) -> Holder | None:
    """The record in the lock file, or None when there is none (released, or being written)."""
    try:
        data = json.loads(os.pread(fd, _RECORD_BYTES, 0) or b"null")
        return Holder(**data) if isinstance(data, dict) else None
    except (ValueError, TypeError):
        return None


def _write(fd: int, holder: Holder) -> None:
    """Replace the record with this holder's."""
    data = json.dumps(asdict(holder)).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def _release(fd: int) -> None:
    """Clear the record (a clean release leaves none), then unlock."""
    try:
        os.ftruncate(fd, 0)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
