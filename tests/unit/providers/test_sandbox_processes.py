"""Recorded processes: identified by PID and start time, signalled only while both still match."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from provision.providers.sandbox import processes
from provision.providers.sandbox.record import Proc


def test_identity_of_a_live_process_matches_itself():
    me = processes.identify(os.getpid())
    assert me is not None and processes.is_ours(me) and processes.running(me)


def test_a_reused_pid_is_not_ours():
    me = processes.identify(os.getpid())
    assert not processes.is_ours(Proc(me.pid, me.start + 1))
    assert not processes.signal_proc(Proc(me.pid, me.start + 1), 0)


def test_stop_terminates_and_reaps_our_child(tmp_path):
    proc = processes.spawn([sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "log")
    assert processes.running(proc)
    assert processes.stop([proc], grace=5.0, include_zombies=True) == []
    assert not processes.is_ours(proc)  # gone, not even a zombie


def test_stop_escalates_to_kill_when_term_is_ignored(tmp_path):
    code = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
            "time.sleep(60)")
    log = tmp_path / "log"
    proc = processes.spawn([sys.executable, "-c", code], log)
    deadline = time.monotonic() + 10
    while "ready" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert processes.stop([proc], grace=0.3, include_zombies=True) == []


def test_children_and_namespaces_of_a_process():
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert child.pid in processes.children(os.getpid())
        assert processes.namespaces(child.pid)["net"] == processes.namespace_inode(os.getpid(), "net")
    finally:
        child.kill()
        child.wait()
