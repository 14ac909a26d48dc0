"""provision status's live columns: a node's OS and Slurm version, parsed from what the nodes print."""
from __future__ import annotations

import subprocess

from provision.node.software import COMMAND, NodeSoftware, parse, read
from provision.records import ClusterInfo, NodeInfo
from provision.remote.commands import CommandResult


def _run_here(os_release: str, sinfo: str | None, tmp_path) -> CommandResult:
    """COMMAND itself, run by a real shell against a stand-in os-release and sinfo."""
    (tmp_path / "os-release").write_text(os_release)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if sinfo is not None:
        (bin_dir / "sinfo").write_text(f"#!/bin/sh\necho '{sinfo}'\n")
        (bin_dir / "sinfo").chmod(0o755)
    command = COMMAND.replace("/etc/os-release", str(tmp_path / "os-release"))
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    return CommandResult("node01", done.returncode, done.stdout, done.stderr)


def test_debian_and_schedmd_builds_both_give_the_version(tmp_path):
    debian = 'NAME="Debian GNU/Linux"\nVERSION_ID="13"\nPRETTY_NAME="Debian GNU/Linux 13 (trixie)"\n'
    assert parse(_run_here(debian, "slurm-wlm 24.11.5", tmp_path)) == NodeSoftware("node01", "Debian 13", "24.11.5")
    ubuntu = 'NAME="Ubuntu"\nVERSION_ID="24.04"\n'
    (tmp_path / "u").mkdir()
    assert parse(_run_here(ubuntu, "slurm 25.05.1", tmp_path / "u")) == NodeSoftware("node01", "Ubuntu 24.04",
                                                                                      "25.05.1")


def test_a_node_without_slurm_or_unreachable_says_so(tmp_path):
    bare = parse(_run_here('NAME="Debian GNU/Linux"\nVERSION_ID="12"\n', None, tmp_path))
    assert bare == NodeSoftware("node01", "Debian 12", None)
    gone = parse(CommandResult("node02", 255, "", "ssh: connect to host 10.0.0.2 port 22: Connection refused\n"))
    assert gone.error == "ssh: connect to host 10.0.0.2 port 22: Connection refused" and gone.slurm is None


def test_only_nodes_that_may_be_up_are_asked(monkeypatch):
    asked = []

    def fake_across(cluster, nodes, command):
        asked.extend(n.name for n in nodes)
        return [CommandResult(n.name, 0, "os Debian 13\nslurm slurm-wlm 24.11.5\n", "") for n in nodes]
    monkeypatch.setattr("provision.node.software.run_across", fake_across)
    cluster = ClusterInfo(name="c", provider="static", nodes=(
        NodeInfo(name="a", group="g", roles=("controller",), address="10.0.0.1", state="running"),
        NodeInfo(name="b", group="g", roles=("compute",), address="10.0.0.2", state="stopped"),
        NodeInfo(name="c", group="g", roles=("compute",), address=None, state="planned"),
        NodeInfo(name="d", group="g", roles=("compute",), address="10.0.0.4", state="unknown")))
    assert set(read(cluster)) == {"a", "d"} and asked == ["a", "d"]
