"""`provision ssh SPEC NODE [-- CMD]`: the system ssh with the cluster's key, host keys checked against the
cluster's known_hosts, the spec's user and port and the provider's jump host, as Ansible logs in; an unknown node
gets "did you mean"."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from provision.cli import main
from provision.errors import UsageError
from provision.records import ClusterInfo, NodeInfo
from provision.remote import login, ssh_options


def _cluster(tmp_path: Path, port: int = 22, jump: str | None = None) -> ClusterInfo:
    nodes = (NodeInfo(name="ctl01", group="ctl", roles=("controller",), address="10.0.0.10", ssh_port=port),
             NodeInfo(name="compute01", group="compute", roles=("compute",), address="10.0.0.11", ssh_port=port))
    return ClusterInfo(name="lab", provider="static", nodes=nodes, ssh_user="admin", ssh_key_path=tmp_path / "key",
                       known_hosts_path=tmp_path / "known_hosts", vars={"ssh_jump_host": jump} if jump else {})


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch):
    monkeypatch.delenv(ssh_options.CONFIG_ENV, raising=False)


def test_the_command_line_checks_host_keys_first_and_uses_the_cluster_key_and_user(tmp_path):
    assert login.ssh_argv(_cluster(tmp_path), "compute01") == [
        "ssh", "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={tmp_path / 'known_hosts'}",
        "-i", str(tmp_path / "key"), "-l", "admin", "--", "10.0.0.11"]


def test_a_command_arrives_as_exec_sends_it_and_the_spec_s_port_is_used(tmp_path):
    argv = login.ssh_argv(_cluster(tmp_path, port=2222), "ctl01", ["bash", "-c", "echo a b"])
    assert argv[-5:] == ["-l", "admin", "--", "10.0.0.10", "bash -c 'echo a b'"]
    assert argv[argv.index("-p") + 1] == "2222"
    assert login.ssh_argv(_cluster(tmp_path), "ctl01", ["ls /dev | wc -l"])[-1] == "ls /dev | wc -l"


def test_the_provider_s_jump_host_is_a_verifying_proxy_command(tmp_path):
    lab = _cluster(tmp_path, jump="203.0.113.7")
    argv = login.ssh_argv(lab, "compute01")
    assert f"ProxyCommand={ssh_options.proxy_command(lab, '203.0.113.7')}" in argv
    assert argv.index("StrictHostKeyChecking=yes") < argv.index(next(a for a in argv if a.startswith("ProxyCommand")))
    assert "ProxyCommand" not in " ".join(login.ssh_argv(_cluster(tmp_path, jump="10.0.0.11"), "compute01"))


def test_an_unknown_node_gets_did_you_mean(tmp_path):
    with pytest.raises(UsageError, match=r"'compute1' is not a node of lab; did you mean compute01\?"):
        login.ssh_argv(_cluster(tmp_path), "compute1")


def test_the_cli_execs_ssh_and_refuses_an_unknown_node(tmp_path, monkeypatch, capsys):
    spec = tmp_path / "c.yaml"
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    with pytest.raises(SystemExit):
        main.run(["init", "-p", "static", "-o", str(spec)])
    execs: list[list[str]] = []
    monkeypatch.setattr(os, "execvp", lambda file, argv: execs.append(argv))
    with pytest.raises(SystemExit) as done:
        main.run(["ssh", str(spec), "gpu01", "--", "uname", "-r"])
    assert done.value.code == 0 and execs[0][0] == "ssh" and execs[0][-3:] == ["--", "10.0.0.11", "uname -r"]
    with pytest.raises(SystemExit) as done:
        main.run(["ssh", str(spec), "gpu1"])
    assert done.value.code == 2 and "did you mean gpu01" in capsys.readouterr().err


def test_the_real_ssh_logs_in_and_runs_the_command(tmp_path, sshd_factory, key_file, monkeypatch):
    """The argv as it is, run by the system ssh against an SSH server on 127.0.0.1."""
    monkeypatch.setenv(ssh_options.CONFIG_ENV, "")  # no user config: -F none
    server = sshd_factory({"admin": key_file(tmp_path / "key")})
    (tmp_path / "known_hosts").write_text(server.known_hosts_line())
    node = NodeInfo(name="ctl01", group="ctl", roles=("controller",), address="127.0.0.1", ssh_port=server.port)
    lab = ClusterInfo(name="lab", provider="static", nodes=(node,), ssh_user="admin", ssh_key_path=tmp_path / "key",
                      known_hosts_path=tmp_path / "known_hosts")
    argv = login.ssh_argv(lab, "ctl01", ["echo", "reached $((6 * 7))"])
    done = subprocess.run([*argv[:1], "-o", "BatchMode=yes", *argv[1:]], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "reached $((6 * 7))\n"), done.stderr
    assert server.logins == ["admin"]
    (tmp_path / "known_hosts").write_text("")  # an unknown host key: refused before any login
    refused = subprocess.run([*argv[:1], "-o", "BatchMode=yes", *argv[1:]], capture_output=True, text=True,
                             timeout=60)
    assert refused.returncode == 255 and server.logins == ["admin"]
