"""The per-cluster lock: a second changing command is refused naming the holder; a killed holder's lock is taken over.

The holder is a real second process (the lock is a flock, which only another process can contend for).
"""
from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
from contextlib import redirect_stderr, redirect_stdout

import pytest

from provision.cli.main import run
from provision.cluster.lock import cluster_lock, lock_path, recorded_holder
from provision.errors import EXIT_ENVIRONMENT, ClusterBusyError
from provision.state import ClusterState

HOLDER = """\
import sys, time
from pathlib import Path
from provision.cluster.lock import cluster_lock
from provision.state import ClusterState
with cluster_lock(ClusterState(Path(sys.argv[1]), sys.argv[2]), sys.argv[3]):
    print("held", flush=True)
    time.sleep(120)
"""

# Loopback addresses: if the lock ever failed to refuse, nothing but this machine would be contacted.
SPEC = """\
name: locked
provider: {type: static}
state_dir: STATE
node_groups:
  - {name: head, roles: [controller], hosts: head01, addresses: [127.0.0.10]}
  - {name: gpu, roles: [compute], hosts: "gpu[01-02]", addresses: "127.0.0.[11-12]"}
"""


@pytest.fixture
def state(tmp_path) -> ClusterState:
    return ClusterState(tmp_path / "state", "locked")


@pytest.fixture
def holder(state):
    """Start a process that holds the cluster's lock as `provision up`; yields it; kills it at the end."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(state.root), state.cluster, "up"],
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    yield process
    process.kill()
    process.wait(timeout=10)


def test_a_second_command_is_refused_with_exit_3_naming_the_holder(state, holder):
    with pytest.raises(ClusterBusyError) as caught:
        with cluster_lock(state, "deploy"):
            pytest.fail("the lock was taken twice")
    assert caught.value.exit_code == EXIT_ENVIRONMENT == 3
    assert f"cluster 'locked' is busy: `provision up` (PID {holder.pid} on " in str(caught.value)
    assert "holds its lock; wait for that command to finish" in str(caught.value)


def test_kill_9_of_the_holder_leaves_a_lock_the_next_command_takes_over(state, holder):
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=10)
    assert recorded_holder(state).pid == holder.pid  # its record is still there...
    dead = recorded_holder(state)
    lines: list[str] = []
    with cluster_lock(state, "down", lines.append) as mine:  # ...but the kernel released the flock
        assert mine.pid == os.getpid() and recorded_holder(state).operation == "down"
    assert lines == [f"took over the lock of {dead.describe()}, which ended without releasing it"]
    assert lines[0].startswith(f"took over the lock of `provision up` (PID {holder.pid} on ")
    assert recorded_holder(state) is None  # a clean release leaves no record


def test_re_entrant_in_one_thread_refused_in_another(state):
    errors: list[BaseException] = []

    def other_thread():
        try:
            with cluster_lock(state, "deploy"):
                pass
        except ClusterBusyError as exc:
            errors.append(exc)

    with cluster_lock(state, "up") as outer:
        with cluster_lock(state, "deploy") as inner:  # `up` running its deploy stage
            assert inner is outer
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join(10)
    assert len(errors) == 1 and f"`provision up` (PID {os.getpid()} on " in str(errors[0])
    with cluster_lock(state, "deploy"):  # released by the outer block
        pass


def test_taking_the_lock_creates_no_cluster_state(state):
    with cluster_lock(state, "down"):
        assert lock_path(state).is_file() and lock_path(state).stat().st_mode & 0o777 == 0o600
    assert not state.exists()  # `down` of a cluster never created must still see "nothing here"


def _cli(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        try:
            run(list(argv))
            code = 0
        except SystemExit as exc:
            code = exc.code
    return code, err.getvalue()


@pytest.mark.parametrize("argv", [["up", "--skip-preflight", "--skip-certify"], ["deploy"], ["down"],
                                  ["certify", "--drain-failed"]])
def test_every_changing_command_exits_3_while_another_holds_the_lock(tmp_path, state, holder, argv):
    spec = tmp_path / "cluster.yaml"
    spec.write_text(SPEC.replace("STATE", str(state.root)))
    state.ensure()  # the static cluster exists, so certify gets as far as draining
    code, err = _cli(argv[0], str(spec), *argv[1:])
    assert code == 3, err
    assert f"error: cluster 'locked' is busy: `provision up` (PID {holder.pid} on " in err
    assert "Traceback" not in err


def test_commands_that_change_nothing_do_not_wait_for_the_lock(tmp_path, state, holder):
    spec = tmp_path / "cluster.yaml"
    spec.write_text(SPEC.replace("STATE", str(state.root)))
    for argv in (["validate"], ["plan"], ["status"], ["inventory", "-o", str(tmp_path / "inv")]):
        code, err = _cli(argv[0], str(spec), *argv[1:])
        assert code == 0, (argv, err)


# A holder that has taken the flock but writes its record only later, over the record of a dead process: the
# moment in which a second command used to say "another command holds its lock" instead of naming the holder.
SLOW_WRITER = """\
import fcntl, json, os, socket, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
os.pwrite(fd, json.dumps({"operation": "up", "pid": int(sys.argv[2]), "host": socket.gethostname(),
                          "started": "2026-01-01T00:00:00+00:00"}).encode(), 0)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(0.5)
os.ftruncate(fd, 0)
os.pwrite(fd, json.dumps({"operation": "deploy", "pid": os.getpid(), "host": socket.gethostname(),
                          "started": "2026-01-01T00:00:01+00:00"}).encode(), 0)
time.sleep(120)
"""


def test_a_holder_that_has_not_written_its_record_yet_is_still_named(tmp_path):
    state = ClusterState(tmp_path, "race")
    path = lock_path(state)
    path.parent.mkdir(parents=True, mode=0o700)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    holder = subprocess.Popen([sys.executable, "-c", SLOW_WRITER, str(path), dead.stdout.strip()],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(ClusterBusyError, match=f"`provision deploy` \\(PID {holder.pid} "):
            with cluster_lock(state, "up"):
                pass
    finally:
        holder.kill()  # the process this test started
        holder.wait()
