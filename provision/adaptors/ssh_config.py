"""Where to log in (SshTarget), and how the user's OpenSSH config (~/.ssh/config) changes it.

The config is read with paramiko.SSHConfig and applied the way `ssh` applies it under the options Ansible passes,
so the tool's own SSH (preflight, exec, certify) and Ansible's reach a node the same way (README, "Your SSH
config"): the spec's user and key are given as on ssh's command line, so they win (the config's keys are tried
after the cluster key); the spec's port wins unless it is 22; HostName, Port, IdentityFile, ProxyJump and
ProxyCommand come from the config. Host keys are checked whatever the config says.
"""
from __future__ import annotations

import dataclasses
import getpass
import glob
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import paramiko

from provision.errors import ConnectionFailure
from provision.limits import clip
from provision.remote.ssh_options import CONFIG_ENV, config_path

MAX_HOPS = 8  # jump hosts in a row (ProxyJump chains, a jump host's own ProxyJump)
MAX_INCLUDE_DEPTH = 16  # as OpenSSH
_USER = re.compile(r"[A-Za-z0-9._][A-Za-z0-9._-]{0,63}")
_INCLUDE = re.compile(r"\s*include(?:\s*=\s*|\s+)(.+)", re.IGNORECASE)
_BLOCK = re.compile(r"\s*(host|match)(?:\s*=\s*|\s+)", re.IGNORECASE)
_HOST_PORT = re.compile(r"(?:\[(?P<bracketed>[^\]]+)\]|(?P<plain>[^:\[\]]+))(?::(?P<port>[0-9]{1,5}))?")
GLOBAL_KNOWN_HOSTS = ("/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")


@dataclass(frozen=True)
class SshTarget:
    """Where and how to log in to one node (or to a jump host on the way)."""

    host: str  # address or name, as the spec (or a ProxyJump) names it; after `resolve`, the config's HostName
    port: int | None  # None: not set (the config's Port, else 22)
    user: str
    key_path: Path  # the cluster key, tried first
    known_hosts_path: Path  # the cluster's known_hosts: checked, and where --accept-new-host-keys records
    jump: "SshTarget | None" = None  # reach the host through this one (nodes without a public address)
    identity_files: tuple[Path, ...] = ()  # more keys to try, from the config
    proxy_command: str | None = None  # from the config; run without a shell
    user_known_hosts: tuple[Path, ...] = ()  # also checked (read only): the user's own, for jump hosts from the config
    alias: str | None = None  # the name before the config's HostName replaced it


def resolve(target: SshTarget, path: Path | None = None) -> SshTarget:
    """The target with the config applied (`path`, else `config_path()`), its jump hosts too."""
    return _resolve(target, config_text(path or config_path()), 0)


def _resolve(target: SshTarget, text: str, hops: int) -> SshTarget:
    """One target and what it goes through: the provider's jump host, else the config's ProxyJump or ProxyCommand."""
    if hops > MAX_HOPS:
        raise ConnectionFailure(f"{target.host}: more than {MAX_HOPS} jump hosts in a row",
                                hint="check ProxyJump in your ssh config for a loop")
    resolved, entry = _applied(target, text)
    if target.jump is not None:  # the provider's jump host wins, as Ansible's ProxyCommand does
        return dataclasses.replace(resolved, jump=_resolve(target.jump, text, hops + 1))
    proxy_jump = entry.get("proxyjump")
    if proxy_jump and proxy_jump.lower() != "none":
        return dataclasses.replace(resolved, jump=_jump_chain(proxy_jump, target, text, hops))
    return dataclasses.replace(resolved, proxy_command=entry.get("proxycommand"))


def _applied(target: SshTarget, text: str) -> tuple[SshTarget, paramiko.SSHConfigDict]:
    """The target with the config's HostName, Port and IdentityFile (no proxy yet), and the config's entry."""
    entry = _lookup(target.host, target.user, target.port, text)
    host = entry["hostname"]
    resolved = dataclasses.replace(
        target, host=host, port=int(entry.get("port", 22)), jump=None,
        identity_files=target.identity_files + _identities(entry),
        alias=target.host if host != target.host else target.alias)
    return resolved, entry


def _lookup(host: str, user: str | None, port: int | None, text: str) -> paramiko.SSHConfigDict:
    """What the config says for a host, with the values given read first (as ssh reads its command line)."""
    head = (f"User {_checked_user(user)}\n" if user else "") + (f"Port {port}\n" if port is not None else "")
    try:
        return _parsed(text, head).lookup(host)
    except (paramiko.ssh_exception.ConfigParseError, ImportError, ValueError) as exc:
        raise ConnectionFailure(f"ssh config: {exc}", hint=f"fix the config, or set {CONFIG_ENV}= to read none "
                                                           "(Match exec needs the invoke package)") from None


@lru_cache(maxsize=32)
def _parsed(text: str, head: str) -> paramiko.SSHConfig:
    """The config parsed behind a leading `Host *` block of the given settings (the first value obtained wins)."""
    return paramiko.SSHConfig.from_text(f"Host *\n{head}{text}")


def _checked_user(user: str) -> str:
    """A login name, checked before it goes into the config text."""
    if not _USER.fullmatch(user):
        raise ConnectionFailure(f"ssh user {clip(user)} is not a user name", hint="fix ssh.user or the ProxyJump")
    return user


def _identities(entry: paramiko.SSHConfigDict) -> tuple[Path, ...]:
    """The config's IdentityFile entries that exist (ssh skips missing ones too)."""
    found = (Path(p).expanduser() for p in entry.get("identityfile", []))
    return tuple(p for p in found if p.is_file())


def _jump_chain(spec: str, target: SshTarget, text: str, hops: int) -> SshTarget:
    """ProxyJump `[user@]host[:port][,...]`: each hop is reached through the ones before it; the first one may have
    its own ProxyJump, the later ones are reached as the list says (ssh -J)."""
    chain = None
    for index, hop in enumerate(h.strip() for h in spec.split(",")):
        step = _hop(hop, target, text)
        if chain is None:
            chain = _resolve(step, text, hops + 1)
        elif hops + index + 1 > MAX_HOPS:
            raise ConnectionFailure(f"{target.host}: more than {MAX_HOPS} jump hosts in a row",
                                    hint="shorten the ProxyJump list in your ssh config")
        else:
            chain = dataclasses.replace(_applied(step, text)[0], jump=chain)
    return chain


def _hop(hop: str, target: SshTarget, text: str) -> SshTarget:
    """One ProxyJump host: its user from the list, else the config's User for it, else the local user (as ssh);
    checked against the user's own known_hosts (and the cluster's)."""
    user, _, address = hop.rpartition("@")
    host, port = _host_port(address)
    entry = _lookup(host, user or None, port, text)
    known = entry.get("userknownhostsfile", "~/.ssh/known_hosts ~/.ssh/known_hosts2").split()
    return SshTarget(host=host, port=port, user=entry.get("user") or getpass.getuser(), key_path=target.key_path,
                     known_hosts_path=target.known_hosts_path,
                     user_known_hosts=tuple(Path(p).expanduser() for p in [*known, *GLOBAL_KNOWN_HOSTS]))


def _host_port(text: str) -> tuple[str, int | None]:
    """`host`, `host:port` or `[address]:port`."""
    match = _HOST_PORT.fullmatch(text)
    if not match:
        raise ConnectionFailure(f"ssh config: ProxyJump host {clip(text)} is not host[:port]",
                                hint="fix ProxyJump in your ssh config")
    host = match["bracketed"] or match["plain"]
    return host, int(match["port"]) if match["port"] else None


def config_text(path: Path | None) -> str:
    """The config's text with Include lines replaced by the files they name (paramiko has no Include); empty for
    no file."""
    if path is None:
        return ""
    if not path.is_file():
        if os.environ.get(CONFIG_ENV):
            raise ConnectionFailure(f"{CONFIG_ENV}={path}: no such file",
                                    hint=f"name an ssh config, or unset {CONFIG_ENV}")
        return ""
    return _with_includes(path, 0)


def _with_includes(path: Path, depth: int) -> str:
    """One file's lines, Include expanded; after an included file the enclosing Host/Match block resumes."""
    if depth > MAX_INCLUDE_DEPTH:
        raise ConnectionFailure(f"ssh config: {path}: Include nested more than {MAX_INCLUDE_DEPTH} deep",
                                hint="check the Include lines for a loop")
    out, block = [], "Host *"
    for line in _read(path).splitlines():
        if _BLOCK.match(line):
            block = line.strip()
        include = _INCLUDE.match(line)
        if not include:
            out.append(line)
            continue
        for name in _included(include.group(1)):
            out += [_with_includes(name, depth + 1), block]
    return "\n".join(out) + "\n"


def _included(patterns: str) -> list[Path]:
    """The files an Include names: globs, relative to ~/.ssh as ssh reads them for a user's config."""
    found = []
    for pattern in patterns.split():
        full = Path(pattern.strip('"')).expanduser()
        full = full if full.is_absolute() else Path("~/.ssh").expanduser() / full
        found += sorted(Path(p) for p in glob.glob(str(full)) if Path(p).is_file())
    return found


def _read(path: Path) -> str:
    """A config file's text; cached while the file is unchanged."""
    try:
        stat = path.stat()
        return _read_cached(path, stat.st_mtime_ns, stat.st_size)
    except OSError as exc:
        raise ConnectionFailure(f"ssh config {path}: {exc.strerror or exc}",
                                hint=f"make it readable, or set {CONFIG_ENV}= to read none") from None


@lru_cache(maxsize=64)
def _read_cached(path: Path, mtime_ns: int, size: int) -> str:
    """The text of one version of a file."""
    return path.read_text(errors="replace")
