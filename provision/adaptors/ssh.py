"""The one place paramiko connects: host-key checking on, the user's ssh config applied (ssh_config), commands
run, one message per failure.

paramiko's transport thread logs a failed handshake with its traceback; with no logging set up, Python would print
that on stderr (under `exec --json` too), so paramiko's log goes nowhere unless a caller sets up logging.
"""
from __future__ import annotations

import errno
import logging
import socket
import time
from pathlib import Path

import paramiko

from provision.adaptors.ssh_config import SshTarget, resolve
from provision.errors import ConnectionFailure
from provision.limits import cut

__all__ = ["CommandTimeout", "SessionLost", "SshTarget", "connect", "run", "run_within"]

logging.getLogger("paramiko").addHandler(logging.NullHandler())
PID_MARKER = "gpu-provision-pid:"  # the first line a command run by run_within writes on stderr (taken out again)
STOP_GRACE_S = 5  # between SIGTERM and SIGKILL to a command stopped at its timeout


class CommandTimeout(ConnectionFailure):
    """A command ran past its time; it was stopped on the node (or could not be). What it wrote until then is kept."""

    def __init__(self, message: str, *, hint: str, stdout: str = "", stderr: str = "") -> None:
        super().__init__(message, hint=hint)
        self.stdout = stdout
        self.stderr = stderr


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
        greeted = _greeted(client)
        client.close()
        raise _translate(exc, target, greeted) from None
    return client


def _greeted(client: paramiko.SSHClient) -> bool:
    """Whether the server's SSH greeting came (paramiko gives up on a silent server without saying so: its wait for
    the handshake ends at the timeout and the next step fails with 'No existing session')."""
    transport = client.get_transport()
    return transport is None or bool(getattr(transport, "remote_version", None))


def _load_host_keys(client: paramiko.SSHClient, target: SshTarget) -> None:
    """The cluster's known_hosts (where new keys are recorded) and, read only, the user's for a config jump host."""
    for path in target.user_known_hosts:
        if path.is_file():
            client.load_system_host_keys(str(path))
    if target.known_hosts_path.exists():
        client.load_host_keys(str(target.known_hosts_path))


def _translate(exc: BaseException, target: SshTarget, greeted: bool = True) -> ConnectionFailure:
    """Map socket and paramiko exceptions to one message each; `greeted`: whether the server's SSH greeting came."""
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
    if not greeted or isinstance(exc, (ConnectionResetError, ConnectionAbortedError)):
        return _banner_failure(exc, where)  # a reset can even end the TCP connect, once the node accepted and dropped it
    if isinstance(exc, (socket.timeout, TimeoutError)) or "timed out" in str(exc):
        return ConnectionFailure(f"{where}: timed out", hint="is the node up and reachable (routing, firewall)?")
    if isinstance(exc, paramiko.ProxyCommandFailure):
        return ConnectionFailure(f"{where}: the ProxyCommand of your ssh config failed ({exc.error})",
                                 hint="run that command by hand to see why")
    if isinstance(exc, paramiko.BadHostKeyException):
        return ConnectionFailure(f"{where}: host key changed (possible man-in-the-middle, or the node was reinstalled)",
                                 hint=f"if the change is expected: ssh-keygen -f {target.known_hosts_path} -R "
                                      f"{_known_name(target)}")
    if isinstance(exc, paramiko.SSHException) and _during_banner(exc):
        return _banner_failure(exc, where)
    if isinstance(exc, paramiko.AuthenticationException):
        return ConnectionFailure(f"{where}: authentication failed for user {target.user}",
                                 hint=f"is the public key of {target.key_path} in the node's authorized_keys?")
    if isinstance(exc, UnknownHostKey):
        return ConnectionFailure(f"{where}: host key unknown (first contact)",
                                 hint="verify the node, then rerun with --accept-new-host-keys to record it")
    if isinstance(exc, OSError):
        return ConnectionFailure(f"{where}: {exc.strerror or exc}", hint="check the node's network")
    if isinstance(exc, EOFError):
        return ConnectionFailure(f"{where}: the connection was closed during the SSH handshake",
                                 hint="check the node's sshd (its journal) and that nothing else answers there")
    cause = cut(" ".join(str(exc).split()), 200) or "no message"
    return ConnectionFailure(f"{where}: SSH failed ({exc.__class__.__name__}: {cause})",
                             hint="check the node's sshd (its journal) and the network on the way")


def _during_banner(exc: BaseException) -> bool:
    """Whether the handshake failed reading the server's SSH greeting (paramiko chains the socket's error)."""
    return isinstance(exc.__context__, (socket.timeout, TimeoutError, EOFError, OSError))


_HUNG_UP = (EOFError, ConnectionResetError, ConnectionAbortedError, BrokenPipeError)


def _causes(exc: BaseException | None):
    """The exception and what it was raised from or during, nearest first."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _banner_failure(exc: BaseException, where: str) -> ConnectionFailure:
    """The TCP connection opened but no SSH greeting came: a hung node, or a port that is not sshd's. The node hung
    up when the failure comes from an end of file or a reset (a close with our own greeting unread sends one), seen
    by paramiko's reader (chained in its SSHException) or by its writer (a bare EOFError)."""
    if any(isinstance(cause, _HUNG_UP) for cause in _causes(exc)):
        return ConnectionFailure(f"{where}: closed the connection before its SSH greeting (sshd refused the session, "
                                 "e.g. MaxStartups, or this port is not sshd's)",
                                 hint="check the node's sshd (its journal) and the port")
    return ConnectionFailure(f"{where}: accepted the connection but sent no SSH greeting in time (the node is hung, "
                             "out of memory or overloaded, or sshd is stuck)",
                             hint="check the node's console or load; restart it if it stays so")


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


def run_within(client: paramiko.SSHClient, command: str, timeout_s: float,
               stdin: bytes | None = None) -> tuple[int, str, str]:
    """Run a command for at most `timeout_s` seconds in all and return (exit status, stdout, stderr); past that,
    stop it on the node (SIGTERM to its process group, SIGKILL STOP_GRACE_S later) and raise CommandTimeout.
    `stdin`: the command's input, sent whole and then closed (None: the command reads nothing).

    sshd starts the command in a session of its own, so the login shell's PID (written first on stderr) names the
    process group of everything the command started."""
    channel = client.get_transport().open_session()
    deadline = time.monotonic() + timeout_s
    try:
        channel.exec_command(f"echo {PID_MARKER}$$ >&2; {command}")
        if stdin is not None:
            _send(channel, stdin, timeout_s)
        out, err, finished = _collect(channel, deadline)
        pid, err = _take_pid(err.decode(errors="replace"))
        if finished:
            return channel.recv_exit_status(), out.decode(errors="replace"), err
    finally:
        channel.close()
    stopped = pid is not None and _stop(client, pid)
    shown = command if len(command) <= 80 else command[:77] + "..."
    what = ("stopped it there (SIGTERM to its processes, then SIGKILL)" if stopped
            else "could not stop it: it may still run there")
    raise CommandTimeout(f"{shown!r} still ran after {timeout_s:.0f} s; {what}",
                         hint="allow it more time (exec --timeout), or run it in the background on the node",
                         stdout=out.decode(errors="replace"), stderr=err)


def _send(channel: paramiko.Channel, data: bytes, timeout_s: float) -> None:
    """Write the command's input and close it; a command that stopped reading ends the writing (its exit status and
    stderr say why)."""
    channel.settimeout(timeout_s)
    try:
        channel.sendall(data)
        channel.shutdown_write()
    except (OSError, paramiko.SSHException):
        pass
    finally:
        channel.settimeout(None)


def _collect(channel: paramiko.Channel, deadline: float) -> tuple[bytes, bytes, bool]:
    """Read stdout and stderr until the command's end of output and exit status, or the deadline; (stdout,
    stderr, finished)."""
    out, err, pause = bytearray(), bytearray(), 0.01
    while time.monotonic() < deadline:
        read = _drain(channel, out, err)
        if (channel.eof_received or channel.closed) and not read:
            return bytes(out), bytes(err), channel.status_event.wait(max(1.0, deadline - time.monotonic()))
        pause = 0.01 if read else min(pause * 2, 0.2)
        time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
    _drain(channel, out, err)
    return bytes(out), bytes(err), False


def _drain(channel: paramiko.Channel, out: bytearray, err: bytearray) -> bool:
    """Whatever output has arrived, appended; whether there was any."""
    read = False
    while channel.recv_ready():
        out += channel.recv(65536)
        read = True
    while channel.recv_stderr_ready():
        err += channel.recv_stderr(65536)
        read = True
    return read


def _take_pid(stderr: str) -> tuple[int | None, str]:
    """The shell's PID from the first line of stderr, and stderr without that line."""
    first, newline, rest = stderr.partition("\n")
    if first.startswith(PID_MARKER) and first[len(PID_MARKER):].isdigit():
        return int(first[len(PID_MARKER):]), rest
    return None, stderr


def _stop(client: paramiko.SSHClient, pid: int) -> bool:
    """SIGTERM to the process group, SIGKILL if it is still there STOP_GRACE_S later; whether it is gone."""
    group = f"-{pid}"  # a negative PID names the process group (no `--`: dash's kill does not take it)
    script = (f"kill -TERM {group} 2>/dev/null; for i in $(seq {STOP_GRACE_S}); do "
              f"kill -0 {group} 2>/dev/null || exit 0; sleep 1; done; kill -KILL {group} 2>/dev/null; "
              f"sleep 0.2; ! kill -0 {group} 2>/dev/null")
    try:
        rc, _, _ = run(client, script, timeout=STOP_GRACE_S + 15)
    except (ConnectionFailure, paramiko.SSHException, OSError, EOFError):
        return False
    return rc == 0
