"""The ssh options Ansible logs in with: host keys checked against the cluster's known_hosts, and the jump host.

OpenSSH keeps the FIRST value it reads for an option (command line before any config file), and Ansible's ssh
plugin builds its command line as: `ssh`, then `ssh_args`, then `-o StrictHostKeyChecking=no` when host key checking
is off (ansible-runner turns it off unless told otherwise), then port, key and user, and only then `ssh_common_args`
(ansible/plugins/connection/ssh.py, `_build_command`). So the host key policy goes into `ssh_args`, where it comes
first: `ansible_ssh_args` in the inventory (a variable beats $ANSIBLE_SSH_ARGS and ansible.cfg), and ansible.cfg.

Ansible splits `ansible_ssh_args` and `ansible_ssh_common_args` with shlex and hands the words to ssh; ssh hands a
ProxyCommand to `sh -c` after expanding its % tokens. So every word is shell-quoted twice over where it has to be, a
literal '%' is doubled, and a path that ssh would read specially in an option (spaces, quotes, '%', '$', '~') is
refused instead of being passed on.

ssh reads the user's ~/.ssh/config itself; $PROVISION_SSH_CONFIG names another file (empty: none) for Ansible's
ssh (`-F`) and the tool's own (provision.adaptors.ssh_config) alike.
"""
from __future__ import annotations

import os
import re
import shlex
from ipaddress import ip_address
from pathlib import Path

from provision.errors import StateError
from provision.limits import clip
from provision.records import ClusterInfo

_OPTION_PATH = re.compile(r"/[A-Za-z0-9._/+@,=:-]*")
_USER = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
_MULTIPLEX = ("-o", "ControlMaster=auto", "-o", "ControlPersist=120s", "-o", "ServerAliveInterval=15")
CONFIG_ENV = "PROVISION_SSH_CONFIG"


def config_path() -> Path | None:
    """The user's ssh config file: $PROVISION_SSH_CONFIG (empty: none), else ~/.ssh/config."""
    chosen = os.environ.get(CONFIG_ENV)
    if chosen is None:
        return Path("~/.ssh/config").expanduser()
    return Path(chosen).expanduser() if chosen else None


def config_args() -> list[str]:
    """`-F FILE` when $PROVISION_SSH_CONFIG names the config (`-F none` when empty); nothing otherwise."""
    if os.environ.get(CONFIG_ENV) is None:
        return []
    path = config_path()
    return ["-F", option_path(path) if path else "none"]


def option_path(path: Path) -> str:
    """A path as ssh takes it in an -o option: absolute (a relative one is taken from here) and free of characters
    ssh or a shell would expand."""
    text = str(path if path.is_absolute() or str(path).startswith("~") else path.absolute())
    if not _OPTION_PATH.fullmatch(text):
        raise StateError(f"{clip(text)} cannot be passed to ssh safely (it must be absolute, of letters, digits and "
                         ". _ / + @ , = : -)", hint="use a state directory (and key path) without spaces, quotes, "
                         "'%', '$' or '~'")
    return text


def host_key_args(known_hosts: Path | None) -> list[str]:
    """Refuse an unknown or changed host key; known keys are the cluster's known_hosts (the user's without one)."""
    words = ["-o", "StrictHostKeyChecking=yes"]
    return words + ["-o", f"UserKnownHostsFile={option_path(known_hosts)}"] if known_hosts else words


def ssh_args(known_hosts: Path | None) -> str:
    """ansible_ssh_args (and ansible.cfg's ssh_args): the host key policy first on ssh's command line, before
    anything Ansible or the environment adds, then connection multiplexing."""
    return shlex.join([*host_key_args(known_hosts), *_MULTIPLEX])


def common_args(cluster: ClusterInfo) -> str | None:
    """ansible_ssh_common_args: the user's ssh config file and, where the provider set a jump host, a verifying
    ProxyCommand; None when there is neither."""
    words = config_args()
    jump = cluster.vars.get("ssh_jump_host")
    if jump:
        words += ["-o", f"ProxyCommand={proxy_command(cluster, jump)}"]
    return shlex.join(words) if words else None


def proxy_command(cluster: ClusterInfo, jump: str) -> str:
    """The inner ssh to the jump host (ProxyCommand, not ProxyJump: it must verify the jump host the same way)."""
    argv = ["ssh", *config_args(), *host_key_args(cluster.known_hosts_path)]
    if cluster.ssh_key_path is not None:
        argv += ["-i", option_path(cluster.ssh_key_path)]
    argv += ["-W", "%h:%p", f"{_user(cluster.ssh_user)}@{_address(jump)}"]
    return " ".join(word if word == "%h:%p" else shlex.quote(word).replace("%", "%%") for word in argv)


def _user(user: str) -> str:
    """The login name, which the spec validated; checked again because it reaches a shell here."""
    if not _USER.fullmatch(user):
        raise StateError(f"ssh user {clip(user)} is not a user name", hint="fix ssh.user in the spec")
    return user


def _address(jump: str) -> str:
    """The jump host as the provider recorded it: an IP address."""
    try:
        return str(ip_address(jump))
    except ValueError:
        raise StateError(f"jump host {clip(jump)} is not an IP address",
                         hint="the provider state is damaged; run `provision up` again") from None
