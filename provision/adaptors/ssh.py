"""The one place paramiko connects: host-key checking on, the user's ssh config applied (ssh_config), commands
run, one message per failure."""
from __future__ import annotations

import errno
import socket
from pathlib import Path

import paramiko

from provision.adaptors.ssh_config import SshTarget, resolve
from provision.errors import ConnectionFailure

__all__ = ["SessionLost", "SshTarget", "connect", "run"]


class SessionLost(ConnectionFailure):
    """The session could not open a channel (the transport died, sshd refused it): the command never started, so
    running it again on a new session is safe."""


class _RecordNewHostKey(paramiko.MissingHostKeyPolicy):
    """First contact: accept the key and append it to our known_hosts (only with --accept-new-host-keys)."""

    def __init__(self, known_hosts_path: Path) -> None:
        self._path = known_hosts_path

    def missing_host_key(self, client, hostname, key) -> None:
        client.get_host_keys().add(hostname, key.get_name(), key)
        self._path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with self._path.open("a") as handle:
            handle.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        self._path.chmod(0o600)


class UnknownHostKey(paramiko.SSHException):
    """The host offered a key that no known_hosts file holds (first contact), and new keys are not accepted."""


class _RejectUnknown(paramiko.MissingHostKeyPolicy):
    """paramiko's RejectPolicy, raising our own exception so that nothing depends on paramiko's wording."""

    def missing_host_key(self, client, hostname, key) -> None:
        raise UnknownHostKey(f"{hostname}: {key.get_name()} host key unknown")


def _known_name(target: SshTarget) -> str:
    """The name known_hosts uses: host, or [host]:port for a non-standard port."""
    return target.host if target.port in (22, None) else f"[{target.host}]:{target.port}"


def _where(target: SshTarget) -> str:
    """host:port in messages, with the name the config turned into that host."""
    where = f"{target.host}:{target.port or 22}"
    return f"{where} ({target.alias} in your ssh config)" if target.alias else where


def _load_key(path: Path) -> paramiko.PKey:
    """Load the private key, naming the file (never its content) on failure."""
    try:
        return paramiko.PKey.from_path(str(path))
    except (OSError, paramiko.SSHException) as exc:
        raise ConnectionFailure(f"cannot read private key {path} ({exc.__class__.__name__})",
                                hint="check ssh.key_path and that the key is not passphrase-protected") from None


class _Client(paramiko.SSHClient):
    """An SSH client that also closes the jump session it was opened through."""

    jump: paramiko.SSHClient | None = None

    def close(self) -> None:
        super().close()
        if self.jump is not None:
            self.jump.close()


def _jump_channel(target: SshTarget, accept_new_host_keys: bool, timeout: float):
    """A direct-tcpip channel to the target through its jump host (itself verified), or None."""
    if target.jump is None:
        return None, None
    jump_client = _open(target.jump, accept_new_host_keys, timeout)
    try:
        channel = jump_client.get_transport().open_channel("direct-tcpip", (target.host, target.port),
                                                            ("127.0.0.1", 0), timeout=timeout)
    except (paramiko.SSHException, OSError) as exc:
        jump_client.close()
        raise ConnectionFailure(f"{_where(target)}: unreachable through jump host {target.jump.host} ({exc})",
                                hint="is the node up, and can the jump host reach it?") from None
    return jump_client, channel


def _proxy(target: SshTarget) -> paramiko.ProxyCommand | None:
    """The config's ProxyCommand as a socket, run without a shell (paramiko splits it into arguments)."""
    if target.proxy_command is None:
        return None
    try:
        return paramiko.ProxyCommand(target.proxy_command)
    except (paramiko.SSHException, OSError, ValueError) as exc:
        raise ConnectionFailure(f"{_where(target)}: the ProxyCommand of your ssh config did not start ({exc})",
                                hint="check ProxyCommand (it runs without a shell: no pipes or `exec`)") from None


def connect(target: SshTarget, accept_new_host_keys: bool = False, timeout: float = 10.0) -> paramiko.SSHClient:
    """Open an authenticated session to the target as the user's ssh config changes it (ssh_config.resolve);
    every failure becomes a ConnectionFailure with one clear message."""
    return _open(resolve(target), accept_new_host_keys, timeout)


def _open(target: SshTarget, accept_new_host_keys: bool, timeout: float) -> paramiko.SSHClient:
    """Open a session to a resolved target, through its jump hosts or ProxyCommand."""
    jump_client, channel = _jump_channel(target, accept_new_host_keys, timeout)
    client = _Client()
    client.jump = jump_client
    _load_host_keys(client, target)
    client.set_missing_host_key_policy(
        _RecordNewHostKey(target.known_hosts_path) if accept_new_host_keys else _RejectUnknown())
    try:
        client.connect(target.host, port=target.port, username=target.user, pkey=_load_key(target.key_path),
                       key_filename=[str(p) for p in target.identity_files] or None,
                       timeout=timeout, banner_timeout=timeout, auth_timeout=timeout,
                       allow_agent=False, look_for_keys=False, sock=channel or _proxy(target))
    except BaseException as exc:
        client.close()
        raise _translate(exc, target) from None
    return client


def _load_host_keys(client: paramiko.SSHClient, target: SshTarget) -> None:
    """The cluster's known_hosts (where new keys are recorded) and, read only, the user's for a config jump host."""
    for path in target.user_known_hosts:
        if path.is_file():
            client.load_system_host_keys(str(path))
    if target.known_hosts_path.exists():
        client.load_host_keys(str(target.known_hosts_path))


def _translate(exc: BaseException, target: SshTarget) -> ConnectionFailure:
    """Map socket and paramiko exceptions to one message each."""
    where = _where(target)
    if isinstance(exc, ConnectionFailure):
        return exc
    if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError):
        exc = next(iter(exc.errors.values()), exc)  # paramiko wraps the socket error of each address tried
    if isinstance(exc, socket.gaierror):
        name = f"{target.host} ({target.alias} in your ssh config)" if target.alias else target.host
        return ConnectionFailure(f"{name}: name does not resolve", hint="check DNS or /etc/hosts, or use an address")
    if isinstance(exc, ConnectionRefusedError) or getattr(exc, "errno", None) == errno.ECONNREFUSED:
        return ConnectionFailure(f"{where}: connection refused", hint="is sshd running and listening on that port?")
    if getattr(exc, "errno", None) in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        return ConnectionFailure(f"{where}: unreachable (no route to host)", hint="is the node up and on the network?")
    if isinstance(exc, (socket.timeout, TimeoutError)) or "timed out" in str(exc):
        return ConnectionFailure(f"{where}: timed out", hint="is the node up and reachable (routing, firewall)?")
    if isinstance(exc, paramiko.ProxyCommandFailure):
        return ConnectionFailure(f"{where}: the ProxyCommand of your ssh config failed ({exc.error})",
                                 hint="run that command by hand to see why")
    if isinstance(exc, paramiko.BadHostKeyException):
        return ConnectionFailure(f"{where}: host key changed (possible man-in-the-middle, or the node was reinstalled)",
                                 hint=f"if the change is expected: ssh-keygen -f {target.known_hosts_path} -R "
                                      f"{_known_name(target)}")
    if isinstance(exc, paramiko.AuthenticationException):
        return ConnectionFailure(f"{where}: authentication failed for user {target.user}",
                                 hint=f"is the public key of {target.key_path} in the node's authorized_keys?")
    if isinstance(exc, UnknownHostKey):
        return ConnectionFailure(f"{where}: host key unknown (first contact)",
                                 hint="verify the node, then rerun with --accept-new-host-keys to record it")
    if isinstance(exc, OSError):
        return ConnectionFailure(f"{where}: {exc.strerror or exc}", hint="check the node's network")
    return ConnectionFailure(f"{where}: SSH failed ({exc.__class__.__name__})", hint="rerun with --debug")


def run(client: paramiko.SSHClient, command: str, timeout: float = 60.0) -> tuple[int, str, str]:
    """Run a command and return (exit status, stdout, stderr); ConnectionFailure when it stays silent too long,
    SessionLost when the session was gone before the command could start."""
    try:
        _, stdout, stderr = client.exec_command(command, timeout=timeout)
    except (paramiko.SSHException, EOFError, OSError) as exc:
        raise SessionLost(f"the SSH session was lost before the command started ({exc.__class__.__name__}: "
                          f"{' '.join(str(exc).split())[:200] or 'no message'})",
                          hint="check the node's sshd (its journal) and its load") from None
    try:
        out = stdout.read().decode(errors="replace")
        err = stderr.read().decode(errors="replace")
    except (socket.timeout, TimeoutError):
        shown = command if len(command) <= 80 else command[:77] + "..."
        raise ConnectionFailure(f"{shown!r}: no answer within {timeout:.0f} s (the command may still run on the node)",
                                hint="does the command wait for input or run longer? run it in the background "
                                     "on the node, or give it its input") from None
    return stdout.channel.recv_exit_status(), out, err
