"""Deploy's ssh refuses an unknown or changed host key whatever the environment says: the real ansible-playbook,
through run_playbook and on its own with the rendered inventory, against a loopback SSH server (127.0.0.1 only),
with ANSIBLE_HOST_KEY_CHECKING=False, ANSIBLE_SSH_ARGS='-o StrictHostKeyChecking=no' and an ssh config saying
`StrictHostKeyChecking no` set. A wrapper `ssh` first on PATH records the command line Ansible really runs."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import paramiko
import pytest

from provision import inventory
from provision.adaptors.ansible import PlaybookRun, run_playbook
from provision.deploy.ansible_cfg import control_path_dir, write_ansible_cfg
from provision.deploy.events import EventTracker
from provision.records import ClusterInfo, NodeInfo
from provision.remote import ssh_options
from provision.state import ClusterState

ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
PLAY = """\
- name: Reach the node
  hosts: all
  gather_facts: false
  tasks:
    - name: Run one command on the node
      ansible.builtin.raw: echo reached-the-node
"""


class Lab:
    """A one-node cluster at a loopback server: state directory, key, known_hosts, inventory, ansible.cfg, play."""

    def __init__(self, tmp_path: Path, server, key_file) -> None:
        self.state = ClusterState(tmp_path / "state", "lab")
        self.state.ensure("ssh")
        self.key = key_file(self.state.ssh_key_path)
        server.keys["root"] = self.key
        node = NodeInfo(name="node01", group="node", roles=("controller", "compute"), address="127.0.0.1",
                        ssh_port=server.port)
        self.cluster = ClusterInfo(name="lab", provider="static", nodes=(node,), ssh_user="root",
                                   ssh_key_path=self.state.ssh_key_path,
                                   known_hosts_path=self.state.known_hosts_path)
        self.project = tmp_path / "project"
        self.project.mkdir()
        (self.project / "play.yml").write_text(PLAY)

    def write_inventory(self) -> Path:
        """hosts.yml as `provision deploy` renders it (read now, so $PROVISION_SSH_CONFIG is taken as it is set)."""
        directory = self.state.ensure("inventory")
        (directory / "hosts.yml").write_text(inventory.render_hosts(self.cluster))
        return directory

    def deploy(self, name: str = "run") -> tuple[int, EventTracker]:
        """run_playbook, as the deploy engine calls it."""
        run = PlaybookRun(private_data_dir=self.state.runs_dir / name, project_dir=self.project, playbook="play.yml",
                          inventory=self.write_inventory(), ansible_cfg=write_ansible_cfg(self.state, 1))
        tracker = EventTracker()
        return run_playbook(run, tracker).rc, tracker

    def plain_ansible(self, inventory_dir: Path) -> subprocess.CompletedProcess:
        """`ansible-playbook -i <inventory> play.yml` without our ansible.cfg or environment filter (a short control
        socket directory only: the default under this test's HOME is too long for a socket)."""
        env = {**os.environ, "ANSIBLE_SSH_CONTROL_PATH_DIR": str(control_path_dir(self.state))}
        return subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(inventory_dir), str(self.project / "play.yml")],
                              capture_output=True, text=True, timeout=180, cwd=self.project, env=env)


@pytest.fixture
def hostile_env(tmp_path, monkeypatch) -> Path:
    """Every setting that used to switch host key checking off, and a wrapper ssh that logs its arguments; the
    folder the wrapper writes one file per ssh command into."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # Ansible's ~/.ansible; ssh itself reads the passwd entry's home
    monkeypatch.setenv("ANSIBLE_HOST_KEY_CHECKING", "False")
    monkeypatch.setenv("ANSIBLE_SSH_ARGS", "-o StrictHostKeyChecking=no")
    config = tmp_path / "ssh_config"
    config.write_text("Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n")
    monkeypatch.setenv(ssh_options.CONFIG_ENV, str(config))
    log = tmp_path / "ssh-argv"
    log.mkdir()
    wrapper = tmp_path / "bin" / "ssh"
    wrapper.parent.mkdir()
    wrapper.write_text(f"#!/bin/sh\nprintf '%s\\0' \"$@\" > {log}/$$\nexec {shutil.which('ssh')} \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{wrapper.parent}:{os.environ['PATH']}")
    return log


def ssh_commands(log: Path) -> list[list[str]]:
    """The argument lists of every ssh the wrapper saw."""
    return [path.read_text().split("\0")[:-1] for path in sorted(log.iterdir())]


def first_option(argv: list[str], name: str) -> str | None:
    """The value ssh takes for an option: the first `-o Name=value` (or `-oName=value`) on its command line."""
    for index, word in enumerate(argv):
        text = argv[index + 1] if word == "-o" and index + 1 < len(argv) else word[2:] if word.startswith("-o") else ""
        key, _, value = text.partition("=")
        if key.lower() == name.lower():
            return value
    return None


def impostor_known_hosts(server, case: str) -> str:
    """The cluster's known_hosts for the server: its real key (known), another key (changed), or none (unknown)."""
    if case == "known":
        return server.known_hosts_line()
    other = paramiko.ECDSAKey.generate()
    changed = f"[127.0.0.1]:{server.port} {other.get_name()} {other.get_base64()}\n"
    return changed if case == "changed" else f"[127.0.0.2]:{server.port} {other.get_name()} {other.get_base64()}\n"


@pytest.mark.parametrize("case", ["unknown", "changed", "known"])
def test_deploy_logs_in_only_to_a_host_whose_key_the_cluster_knows(case, tmp_path, hostile_env, sshd_factory,
                                                                    key_file):
    server = sshd_factory({})
    lab = Lab(tmp_path, server, key_file)
    lab.state.known_hosts_path.write_text(impostor_known_hosts(server, case))
    before = lab.state.known_hosts_path.read_bytes()

    rc, tracker = lab.deploy()

    (host,) = tracker.results()
    if case == "known":  # the control: the harness logs in and runs commands when the key is right
        assert (rc, host.status) == (0, "changed")  # raw reports a change
        assert server.logins and any("reached-the-node" in command for command in server.commands)
    else:
        assert rc != 0 and host.status == "unreachable"
        assert host.message.startswith(f"host key {case} for [127.0.0.1]:{server.port}: ssh refused to log in"), \
            host.message
        assert server.connections >= 1, "ssh never reached the server: the test proves nothing"
        assert (server.auth_attempts, server.logins, server.commands) == ([], [], [])
    assert lab.state.known_hosts_path.read_bytes() == before


def test_the_ssh_command_ansible_runs_checks_the_cluster_known_hosts_first(tmp_path, hostile_env, sshd_factory,
                                                                         key_file):
    server = sshd_factory({})
    lab = Lab(tmp_path, server, key_file)
    lab.state.known_hosts_path.write_text(server.known_hosts_line())

    rc, _ = lab.deploy()

    commands = ssh_commands(hostile_env)
    assert rc == 0 and commands, "ansible-playbook ran no ssh"
    for argv in commands:
        assert first_option(argv, "StrictHostKeyChecking") == "yes", argv
        assert first_option(argv, "UserKnownHostsFile") == str(lab.state.known_hosts_path), argv


def test_plain_ansible_playbook_with_the_rendered_inventory_refuses_a_changed_key(tmp_path, hostile_env,
                                                                                  sshd_factory, key_file):
    """No CLI, no environment filter: the inventory alone keeps host keys checked (README: plain Ansible works)."""
    server = sshd_factory({})
    lab = Lab(tmp_path, server, key_file)
    lab.state.known_hosts_path.write_text(impostor_known_hosts(server, "changed"))
    before = lab.state.known_hosts_path.read_bytes()

    result = lab.plain_ansible(lab.write_inventory())

    assert result.returncode != 0 and "unreachable=1" in result.stdout, result.stdout[-2000:]
    assert (server.auth_attempts, server.commands) == ([], [])
    assert lab.state.known_hosts_path.read_bytes() == before
    for argv in ssh_commands(hostile_env):
        assert first_option(argv, "StrictHostKeyChecking") == "yes", argv


def test_control_with_host_keys_only_in_ssh_common_args_the_impostor_gets_the_login(tmp_path, hostile_env,
                                                                                    sshd_factory, key_file):
    """The inventory as it was (the policy in ansible_ssh_common_args, after Ansible's own `no`): this harness sees
    the login, the command and the impostor's key written into known_hosts, so the tests above can fail."""
    server = sshd_factory({})
    lab = Lab(tmp_path, server, key_file)
    lab.state.known_hosts_path.write_text("")
    directory = lab.write_inventory()
    hosts = (directory / "hosts.yml").read_text()
    old = "\n".join(line for line in hosts.splitlines() if not line.lstrip().startswith(
        ("ansible_ssh_args:", "ansible_host_key_checking:", "ansible_ssh_common_args:")))
    policy = " ".join(ssh_options.host_key_args(lab.state.known_hosts_path))
    (directory / "hosts.yml").write_text(old.replace("  hosts:\n", f"    ansible_ssh_common_args: {policy!r}\n"
                                                     "  hosts:\n", 1) + "\n")

    result = lab.plain_ansible(directory)

    assert result.returncode == 0, result.stdout[-2000:]
    assert server.logins and any("reached-the-node" in command for command in server.commands)
    assert server.host_key.get_base64() in lab.state.known_hosts_path.read_text()
    assert first_option(ssh_commands(hostile_env)[0], "StrictHostKeyChecking") == "no"
