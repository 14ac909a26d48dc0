"""Through paramiko to a real SSH server on 127.0.0.1: exec and preflight reach a node by an alias of the user's
ssh config, through a ProxyJump bastion known from the user's own known_hosts; host keys stay checked."""
from __future__ import annotations

from pathlib import Path

import pytest

from provision.errors import ConnectionFailure
from provision.preflight import check_node
from provision.records import ClusterInfo, NodeInfo
from provision.remote import commands, ssh_options


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv(ssh_options.CONFIG_ENV, raising=False)
    (tmp_path / ".ssh").mkdir()
    return tmp_path


def cluster(home: Path, address: str) -> ClusterInfo:
    node = NodeInfo(name="node01", group="node", roles=("controller", "compute"), address=address)
    return ClusterInfo(name="lab", provider="static", nodes=(node,), ssh_user="root",
                       ssh_key_path=home / "cluster_key", known_hosts_path=home / "state_known_hosts")


def test_exec_and_preflight_reach_a_node_by_its_ssh_config_alias(home, sshd_factory, key_file):
    server = sshd_factory({"root": key_file(home / "cluster_key")})
    (home / ".ssh" / "config").write_text(f"Host myalias\n  HostName 127.0.0.1\n  Port {server.port}\n")
    (home / "state_known_hosts").write_text(server.known_hosts_line())
    lab = cluster(home, "myalias")

    result = commands.run_on(lab, lab.controller, "echo reached $((6 * 7))")
    assert (result.rc, result.stdout) == (0, "reached 42\n")
    report = check_node(lab, lab.controller)
    assert report.check("ssh").verdict == "pass" and report.facts  # the probe ran and answered
    assert server.logins == ["root", "root"]


def test_the_alias_does_not_bypass_host_key_checking(home, sshd_factory, key_file):
    server = sshd_factory({"root": key_file(home / "cluster_key")})
    (home / ".ssh" / "config").write_text(f"Host myalias\n  HostName 127.0.0.1\n  Port {server.port}\n"
                                          "  StrictHostKeyChecking no\n")
    (home / "state_known_hosts").write_text("")
    lab = cluster(home, "myalias")
    with pytest.raises(ConnectionFailure, match=r"127.0.0.1:\d+ \(myalias in your ssh config\): host key unknown"):
        commands.run_on(lab, lab.controller, "true")
    assert server.logins == []


def test_a_proxy_jump_bastion_logs_in_with_its_own_user_key_and_known_hosts(home, sshd_factory, key_file):
    node = sshd_factory({"root": key_file(home / "cluster_key")})
    bastion = sshd_factory({"jumper": key_file(home / ".ssh" / "id_site")})
    (home / ".ssh" / "config").write_text(
        f"Host myalias\n  HostName 127.0.0.1\n  Port {node.port}\n  ProxyJump gw\n"
        f"Host gw\n  HostName 127.0.0.1\n  Port {bastion.port}\n  User jumper\n  IdentityFile ~/.ssh/id_site\n")
    (home / "state_known_hosts").write_text(node.known_hosts_line())  # the cluster's: the node only
    (home / ".ssh" / "known_hosts").write_text(bastion.known_hosts_line())  # the user's: the bastion
    lab = cluster(home, "myalias")

    result = commands.run_on(lab, lab.controller, "echo through")
    assert (result.rc, result.stdout) == (0, "through\n")
    assert (bastion.logins, node.logins) == (["jumper"], ["root"])


def test_an_unknown_bastion_key_stops_the_login(home, sshd_factory, key_file):
    node = sshd_factory({"root": key_file(home / "cluster_key")})
    bastion = sshd_factory({"jumper": key_file(home / ".ssh" / "id_site")})
    (home / ".ssh" / "config").write_text(
        f"Host myalias\n  HostName 127.0.0.1\n  Port {node.port}\n  ProxyJump jumper@127.0.0.1:{bastion.port}\n"
        "Host 127.0.0.1\n  IdentityFile ~/.ssh/id_site\n")
    (home / "state_known_hosts").write_text(node.known_hosts_line())
    lab = cluster(home, "myalias")
    with pytest.raises(ConnectionFailure, match="host key unknown"):
        commands.run_on(lab, lab.controller, "true")
    assert node.logins == []
