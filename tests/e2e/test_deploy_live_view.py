"""`provision deploy` on a real terminal (tmux) shows the live per-stage view: hosts done / running / failed per
stage, each stage's elapsed time and the task running now; the per-stage summary and the recap replace it at the end."""
from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.e2e

# A row of the live table: stage │ done │ running │ failed │ elapsed │ task
ROW = re.compile(r"│ (?P<stage>.+?) +│ +(?P<done>\d+) │ +(?P<running>\d+) │ +(?P<failed>\d+) │ +(?P<elapsed>\S+ ?s) │")


def _tmux(server, *args: str) -> subprocess.CompletedProcess:
    """A tmux command to our own server (its socket is a file in the test's temporary folder)."""
    return subprocess.run(["tmux", "-S", str(server), *args], capture_output=True, text=True, timeout=30)


def _watch(server, rc_file, deadline: float) -> list[str]:
    """Every distinct screen of the pane until the command wrote its exit status (or the deadline)."""
    screens: list[str] = []
    while time.monotonic() < deadline and not rc_file.exists():
        screen = _tmux(server, "capture-pane", "-p", "-t", "deploy").stdout
        if not screens or screen != screens[-1]:
            screens.append(screen)
        time.sleep(0.2)
    screens.append(_tmux(server, "capture-pane", "-p", "-t", "deploy").stdout)
    return screens


def test_a_deploy_on_a_terminal_shows_per_stage_host_counts_and_elapsed_time(slurm_cluster, tmp_path):
    assert shutil.which("tmux"), "tmux is missing: `make deps` installs it (Makefile APT_PACKAGES)"
    server, rc_file = tmp_path / "tmux.sock", tmp_path / "rc"
    command = shlex.join([sys.executable, "-m", "provision", "deploy", str(slurm_cluster.spec_path)])
    try:
        started = _tmux(server, "new-session", "-d", "-s", "deploy", "-x", "150", "-y", "45",
                        f"{command}; echo $? > {shlex.quote(str(rc_file))}; sleep 600")
        assert started.returncode == 0, started.stderr
        screens = _watch(server, rc_file, time.monotonic() + 900)
    finally:
        _tmux(server, "kill-server")  # our server only, by its socket
    assert rc_file.exists() and rc_file.read_text().strip() == "0", screens[-1]
    live = [screen for screen in screens if "deploy summary" not in screen]  # the summary's rows look alike
    rows = [m.groupdict() for screen in live for m in ROW.finditer(screen)]
    hosts = len(slurm_cluster.info.nodes)
    first = [r for r in rows if r["stage"].startswith("Prepare every node")]
    assert {(r["done"], r["running"], r["failed"]) for r in first} >= {(str(hosts), "0", "0")}, screens
    assert any(int(r["running"]) > 0 for r in rows), "no screen showed a stage with hosts running"
    assert all(re.fullmatch(r"\d+ s|\d+m\d\ds|\d+h\d\dm", r["elapsed"]) for r in rows)
    assert any("stage" in s and "elapsed" in s and "task" in s for s in live)
    # The live view gave way to the summary (per stage: hosts ok, changed, failed, time) and the per-host recap.
    final = screens[-1]
    assert "deploy summary" in final and "deploy recap" in final, final
    assert not any("running" in line and "elapsed" in line for line in final.splitlines()), final
    summary = [m.groupdict() for m in ROW.finditer(final)]
    counts = {r["stage"]: sum(int(r[k]) for k in ("done", "running", "failed")) for r in summary}  # ok+changed+failed
    assert all(0 < count <= hosts for count in counts.values()), final
    assert [count for stage, count in counts.items() if stage.startswith("Prepare every node")] == [hosts], final
