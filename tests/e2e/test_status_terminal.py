"""`provision status` on a real 80-column terminal (tmux) on the shared cluster: every node's row with its address
whole and its Slurm state, and a node drained by hand shows the whole reason, who drained it and when."""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import time

import pytest

from conftest import provision

pytestmark = pytest.mark.e2e

REASON = "admin: replacing the fan tray, ticket=4711 | back after burn-in (rack 12, slot 3)"


def _tmux(server, *args: str) -> subprocess.CompletedProcess:
    """A tmux command to our own server (its socket is a file in the test's temporary folder)."""
    return subprocess.run(["tmux", "-S", str(server), *args], capture_output=True, text=True, timeout=30)


def _status_screen(spec_path, tmp_path) -> str:
    """What `provision status` printed in an 80x60 tmux pane, once it ended."""
    server, rc_file = tmp_path / "tmux.sock", tmp_path / "rc"
    command = shlex.join([sys.executable, "-m", "provision", "status", str(spec_path)])
    try:
        started = _tmux(server, "new-session", "-d", "-s", "status", "-x", "80", "-y", "60",
                        f"{command}; echo $? > {shlex.quote(str(rc_file))}; sleep 600")
        assert started.returncode == 0, started.stderr
        deadline = time.monotonic() + 120
        while not rc_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        screen = _tmux(server, "capture-pane", "-p", "-t", "status").stdout
    finally:
        _tmux(server, "kill-server")  # our server only, by its socket
    assert rc_file.exists() and rc_file.read_text().strip() == "0", screen
    return screen


def test_status_at_80_columns_shows_every_node_and_a_drain_reason_whole(slurm_cluster, tmp_path):
    assert shutil.which("tmux"), "tmux is missing: `make deps` installs it (Makefile APT_PACKAGES)"
    victim = slurm_cluster.compute[0]
    ctl = slurm_cluster.controller
    slurm_cluster.ssh(ctl, f"scontrol update nodename={victim} state=drain reason={shlex.quote(REASON)}")
    try:
        screen = _status_screen(slurm_cluster.spec_path, tmp_path)
        document = json.loads(provision("status", str(slurm_cluster.spec_path), "--json").stdout)
    finally:
        slurm_cluster.ssh(ctl, f"scontrol update nodename={victim} state=resume")
    lines = screen.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80 and "…" not in screen, screen
    slurm = {n["name"]: n["slurm"] for n in document["nodes"]}
    for node in slurm_cluster.info.nodes:
        row = next((line for line in lines if line.startswith(node.name + " ")), "")
        assert node.address in row, (node.name, screen)  # the address whole, on the node's own row
        if node.has_role("compute"):
            assert slurm[node.name]["state"] in row, (node.name, screen)  # its Slurm state on the row
    flat = re.sub(r"\s+", " ", screen)
    assert slurm[victim]["flags"] == ["drain"] and slurm[victim]["reason"] == REASON
    assert f"{victim} drained by root at " in flat and REASON in flat, screen  # who, and the reason whole
    assert re.search(r"\d+ nodes, \d+ in Slurm: \d+ idle, \d+ alloc, 1 drain, \d+ down", flat), screen
