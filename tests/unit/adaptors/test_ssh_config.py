"""The user's ssh config applied to a login as ssh applies it under the options Ansible passes: the spec's user and
key win, its port unless 22; HostName, Port, IdentityFile, ProxyJump and ProxyCommand come from the config."""
from __future__ import annotations

import getpass
import shlex
from pathlib import Path

import pytest

from provision.adaptors.ssh_config import SshTarget, resolve
from provision.errors import ConnectionFailure
from provision.remote import ssh_options

KEY = Path("/state/id_ed25519")
KNOWN = Path("/state/known_hosts")


def target(host: str = "10.0.0.5", port: int | None = None, user: str = "root", jump: SshTarget | None = None):
    return SshTarget(host=host, port=port, user=user, key_path=KEY, known_hosts_path=KNOWN, jump=jump)


@pytest.fixture
def config(tmp_path, monkeypatch):
    """config(text) writes an ssh config and returns its path; HOME is a temporary folder."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv(ssh_options.CONFIG_ENV, raising=False)
    (tmp_path / ".ssh").mkdir()

    def write(text: str) -> Path:
        path = tmp_path / ".ssh" / "config"
        path.write_text(text)
        return path
    return write


@pytest.mark.parametrize("spec_port, config_port, used", [
    (None, None, 22),  # neither says: ssh's default
    (None, "2201", 2201),  # the spec leaves 22: the config's Port
    (2222, "2201", 2222),  # the spec sets one: it wins
    (2222, None, 2222),
])
def test_the_spec_port_wins_unless_it_is_22(config, spec_port, config_port, used):
    path = config(f"Host 10.0.0.5\n  Port {config_port}\n" if config_port else "")
    assert resolve(target(port=spec_port), path).port == used


def test_an_alias_gets_the_host_name_and_keys_of_the_config_but_keeps_the_spec_user(config, tmp_path):
    (tmp_path / ".ssh" / "site").write_text("key")
    path = config("Host myalias\n  HostName 127.0.0.1\n  User admin\n  IdentityFile ~/.ssh/site\n"
                  "  IdentityFile ~/.ssh/missing\n")
    resolved = resolve(target("myalias"), path)
    assert (resolved.host, resolved.alias, resolved.user) == ("127.0.0.1", "myalias", "root")
    assert resolved.key_path == KEY  # the cluster key is tried first
    assert resolved.identity_files == (tmp_path / ".ssh" / "site",)  # a missing IdentityFile is skipped, as ssh does


def test_first_obtained_value_wins_as_in_ssh(config):
    path = config("Host 10.0.0.*\n  Port 2201\nHost *\n  Port 2202\n  HostName other\n")
    resolved = resolve(target(), path)
    assert (resolved.host, resolved.port) == ("other", 2201)


def test_proxy_jump_chain_reaches_the_last_hop_through_the_first(config):
    path = config("Host 10.0.0.*\n  ProxyJump gw1,ops@gw2:2200\nHost gw1\n  HostName 192.0.2.1\n  User jumper\n"
                  "Host gw2\n  HostName 192.0.2.2\n  ProxyJump ignored\n")
    resolved = resolve(target(), path)
    gw2, gw1 = resolved.jump, resolved.jump.jump
    assert (gw2.host, gw2.port, gw2.user, gw2.proxy_command) == ("192.0.2.2", 2200, "ops", None)
    assert (gw1.host, gw1.port, gw1.user, gw1.jump) == ("192.0.2.1", 22, "jumper", None)
    assert Path("~/.ssh/known_hosts").expanduser() in gw1.user_known_hosts  # the user's own bastion is known there
    assert resolved.user_known_hosts == ()  # the node itself: the cluster's known_hosts only


def test_a_jump_host_without_a_user_logs_in_as_the_local_user(config):
    resolved = resolve(target(), config("Host 10.0.0.5\n  ProxyJump bastion\n"))
    assert resolved.jump.user == getpass.getuser()


def test_the_provider_jump_host_wins_over_the_config_and_gets_the_config_applied(config):
    path = config("Host 10.0.0.5\n  ProxyJump elsewhere\nHost 203.0.113.7\n  HostName bastion.example\n  Port 2022\n")
    resolved = resolve(target(jump=target("203.0.113.7")), path)
    assert (resolved.jump.host, resolved.jump.port, resolved.jump.user) == ("bastion.example", 2022, "root")
    assert resolved.jump.jump is None and resolved.proxy_command is None


def test_proxy_command_tokens_are_the_values_in_use(config):
    path = config("Host myalias\n  HostName 127.0.0.1\n  ProxyCommand nc -X connect -x proxy:3128 %h %p %r\n")
    resolved = resolve(target("myalias", port=2222), path)
    assert shlex.split(resolved.proxy_command) == ["nc", "-X", "connect", "-x", "proxy:3128", "127.0.0.1", "2222",
                                                   "root"]


def test_proxy_command_none_means_none(config):
    path = config("Host 10.0.0.5\n  ProxyCommand none\nHost *\n  ProxyCommand nc %h %p\n")
    assert resolve(target(), path).proxy_command is None


def test_include_reads_the_named_files_and_the_enclosing_block_resumes(config, tmp_path):
    (tmp_path / ".ssh" / "conf.d").mkdir()
    (tmp_path / ".ssh" / "conf.d" / "lab").write_text("Host lab\n  HostName 127.0.0.2\n")
    path = config("Host 10.0.0.5\n  Include conf.d/*\n  Port 2201\n")
    assert resolve(target("lab"), path).host == "127.0.0.2"
    assert resolve(target("lab"), path).port == 22  # Port belongs to the 10.0.0.5 block, not to lab's
    assert resolve(target(), path).port == 2201


def test_a_proxy_jump_loop_is_an_error_not_a_hang(config):
    path = config("Host a\n  ProxyJump b\nHost b\n  ProxyJump a\n")
    with pytest.raises(ConnectionFailure, match="more than 8 jump hosts"):
        resolve(target("a"), path)


@pytest.mark.parametrize("text, message", [
    ("Match all host x\n  Port 2\n", "ssh config: Match does not allow 'all' mixed"),
    ("Host 10.0.0.5\n  ProxyJump bad:host:name:x\n", r"ProxyJump host 'bad:host:name:x' is not host\[:port\]"),
])
def test_a_config_the_tool_cannot_follow_is_one_clear_failure(config, text, message):
    with pytest.raises(ConnectionFailure, match=message):
        resolve(target(), config(text))


def test_a_user_name_never_becomes_config_text(config):
    with pytest.raises(ConnectionFailure, match="is not a user name"):
        resolve(target(user="root\nProxyCommand touch /tmp/x"), config(""))


def test_the_environment_names_another_file_or_none(config, tmp_path, monkeypatch):
    config("Host 10.0.0.5\n  Port 2201\n")
    assert resolve(target()).port == 2201  # ~/.ssh/config by default
    monkeypatch.setenv(ssh_options.CONFIG_ENV, "")
    assert resolve(target()).port == 22
    other = tmp_path / "other"
    other.write_text("Host 10.0.0.5\n  Port 2203\n")
    monkeypatch.setenv(ssh_options.CONFIG_ENV, str(other))
    assert resolve(target()).port == 2203
    monkeypatch.setenv(ssh_options.CONFIG_ENV, str(tmp_path / "absent"))
    with pytest.raises(ConnectionFailure, match="no such file"):
        resolve(target())


def test_ansible_ssh_reads_the_same_file(monkeypatch, tmp_path):
    monkeypatch.delenv(ssh_options.CONFIG_ENV, raising=False)
    assert ssh_options.config_args() == []  # ssh reads ~/.ssh/config by itself
    monkeypatch.setenv(ssh_options.CONFIG_ENV, str(tmp_path / "cfg"))
    assert ssh_options.config_args() == ["-F", str(tmp_path / "cfg")]
    monkeypatch.setenv(ssh_options.CONFIG_ENV, "")
    assert ssh_options.config_args() == ["-F", "none"]
