"""A real SSH server on 127.0.0.1 (paramiko's server side, in this process): public-key logins, commands run here
with `sh -c` in a session of their own (as sshd starts them) with their output streamed as it comes, and
direct-tcpip forwarding to other loopback ports (a jump host).

It records what a client did: connections, authentication attempts (any method, before success or failure),
logins and commands, so a test can tell a client that stopped at the host key from one that went further.
tests/unit/conftest.py makes its fixtures available to every unit test."""
from __future__ import annotations

import socket
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

import paramiko
import pytest


@dataclass
class LoopbackSshd:
    """A listening server and what clients did with it (users in `auth_attempts` and `logins`, `commands` run)."""

    host_key: paramiko.PKey
    keys: dict[str, paramiko.PKey]  # user -> the one key that user may log in with
    port: int = 0
    connections: int = 0  # TCP connections accepted
    auth_attempts: list[str] = field(default_factory=list)  # a user for each authentication request, any method
    logins: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    _listener: socket.socket | None = None

    def known_hosts_line(self) -> str:
        return f"[127.0.0.1]:{self.port} {self.host_key.get_name()} {self.host_key.get_base64()}\n"

    def start(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def stop(self) -> None:
        self._listener.close()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._session, args=(conn,), daemon=True).start()

    def _session(self, conn: socket.socket) -> None:
        transport = paramiko.Transport(conn)
        transport.add_server_key(self.host_key)
        handler = _Handler(self)
        try:
            transport.start_server(server=handler)
        except (paramiko.SSHException, EOFError, OSError):  # a client that refused our host key hangs up
            return
        while transport.is_active():
            channel = transport.accept(timeout=1)
            if channel is not None:
                threading.Thread(target=handler.serve, args=(channel,), daemon=True).start()


class _Handler(paramiko.ServerInterface):
    """One connection: who may log in, which channels open, what a command does."""

    def __init__(self, server: LoopbackSshd) -> None:
        self.server = server
        self.commands: dict[int, str] = {}
        self.forwards: dict[int, tuple[str, int]] = {}
        self.ready: dict[int, threading.Event] = {}

    def get_allowed_auths(self, username: str) -> str:
        return "publickey"

    def check_auth_none(self, username: str) -> int:
        self.server.auth_attempts.append(username)
        return paramiko.AUTH_FAILED

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        self.server.auth_attempts.append(username)
        if self.server.keys.get(username) == key:
            self.server.logins.append(username)
            return paramiko.AUTH_SUCCESSFUL
        return paramiko.AUTH_FAILED

    def check_channel_request(self, kind: str, chanid: int) -> int:
        if kind == "session":
            self.ready[chanid] = threading.Event()
            return paramiko.OPEN_SUCCEEDED
        return paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_direct_tcpip_request(self, chanid: int, origin, destination) -> int:
        if destination[0] != "127.0.0.1":  # loopback only
            return paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED
        self.forwards[chanid] = destination
        return paramiko.OPEN_SUCCEEDED

    def check_channel_pty_request(self, *args) -> bool:
        return True  # ssh -tt asks for one; commands still run without a terminal

    def check_channel_exec_request(self, channel: paramiko.Channel, command: bytes) -> bool:
        self.server.commands.append(command.decode())
        self.commands[channel.get_id()] = command.decode()
        self.ready[channel.get_id()].set()
        return True

    def serve(self, channel: paramiko.Channel) -> None:
        if channel.get_id() in self.forwards:
            _forward(channel, self.forwards[channel.get_id()])
            return
        if not self.ready[channel.get_id()].wait(10):
            channel.close()
            return
        process = subprocess.Popen(["sh", "-c", self.commands[channel.get_id()]], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        threading.Thread(target=_receive, args=(channel, process.stdin), daemon=True).start()
        pumps = [threading.Thread(target=_send, args=(process.stdout, channel.sendall)),
                 threading.Thread(target=_send, args=(process.stderr, channel.sendall_stderr))]
        for pump in pumps:
            pump.start()
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
        for pump in pumps:
            pump.join()
        code = process.wait()
        try:
            channel.send_exit_status(code if code >= 0 else 128 - code)  # killed by a signal: as a shell says it
            channel.shutdown_write()  # EOF, then close as sshd does (OpenSSH's client waits for it); the data stays
        except (OSError, EOFError):  # the client closed the channel first
            pass
        channel.close()  # readable on a paramiko client


def _receive(channel: paramiko.Channel, stdin) -> None:
    """Pass the client's input on to the command and close it at the client's EOF, as sshd does; input the command
    no longer reads is dropped."""
    try:
        for chunk in iter(lambda: channel.recv(65536), b""):
            stdin.write(chunk)
            stdin.flush()
    except (OSError, EOFError, ValueError):  # the command ended first (a broken pipe) or the channel closed
        pass
    finally:
        try:
            stdin.close()
        except OSError:
            pass


def _send(stream, send) -> None:
    """Pass a command's output on as it comes; once the client is gone, read it to its end all the same."""
    for chunk in iter(lambda: stream.read1(65536), b""):
        try:
            send(chunk)
        except (OSError, EOFError):
            send = lambda _: None  # noqa: E731 - the channel is closed: drain the pipe so the command never blocks


def _forward(channel: paramiko.Channel, destination: tuple[str, int]) -> None:
    """Pump bytes between the channel and a TCP connection to the destination until either side ends."""
    sock = socket.create_connection(destination)

    def pump(read, write) -> None:
        try:
            while data := read(65536):
                write(data)
        except OSError:
            pass
        channel.close()
        sock.close()
    threading.Thread(target=pump, args=(sock.recv, channel.sendall), daemon=True).start()
    pump(channel.recv, sock.sendall)


@pytest.fixture
def sshd_factory():
    """Start loopback servers: sshd_factory(keys={"root": key}) -> a started LoopbackSshd; all stopped at the end."""
    started: list[LoopbackSshd] = []

    def start(keys: dict[str, paramiko.PKey]) -> LoopbackSshd:
        server = LoopbackSshd(paramiko.ECDSAKey.generate(), keys)
        server.start()
        started.append(server)
        return server
    yield start
    for server in started:
        server.stop()


@pytest.fixture
def key_file():
    """key_file(path) writes a new private key there (0600) and returns it."""
    def write(path: Path) -> paramiko.PKey:
        key = paramiko.ECDSAKey.generate()
        key.write_private_key_file(str(path))
        path.chmod(0o600)
        return key
    return write
