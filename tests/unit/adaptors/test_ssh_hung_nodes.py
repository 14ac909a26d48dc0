"""A node that hangs: a TCP connection that never gets an SSH greeting, or a command that runs past its time.

The failure names its cause (no greeting, a closed handshake) instead of paramiko's class name, paramiko's own
traceback never reaches stderr, and a command past its timeout is stopped on the node (its process group), not left
running there."""
from __future__ import annotations

import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from provision.adaptors import ssh
from provision.errors import ConnectionFailure
from provision.records import ClusterInfo, NodeInfo
from provision.remote import commands


def _listener(behaviour: str) -> tuple[socket.socket, int]:
    """A loopback TCP server that accepts and then stays silent ("silent"), hangs up at once ("close") or hangs up
    with a reset ("reset", what a close with unread data sends; the closing side of "close" may send it too)."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            if behaviour == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.close()
            elif behaviour == "close":
                conn.close()
            else:
                held.append(conn)
    threading.Thread(target=serve, daemon=True).start()
    return server, server.getsockname()[1]


def _target(tmp_path: Path, port: int, key_file) -> ssh.SshTarget:
    key_file(tmp_path / "key")
    (tmp_path / "known_hosts").write_text("")
    return ssh.SshTarget(host="127.0.0.1", port=port, user="root", key_path=tmp_path / "key",
                         known_hosts_path=tmp_path / "known_hosts")


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch):
    monkeypatch.setenv("PROVISION_SSH_CONFIG", "")


@pytest.mark.parametrize("behaviour, words", [
    ("silent", "accepted the connection but sent no SSH greeting in time (the node is hung"),
    ("close", "closed the connection before its SSH greeting"),
    ("reset", "closed the connection before its SSH greeting"),
])
def test_a_node_that_never_greets_is_named_with_the_cause_and_no_traceback(tmp_path, key_file, capfd, behaviour,
                                                                           words):
    server, port = _listener(behaviour)
    try:
        with pytest.raises(ConnectionFailure) as caught:
            ssh.connect(_target(tmp_path, port, key_file), timeout=1)
    finally:
        server.close()
    assert str(caught.value).startswith(f"127.0.0.1:{port}: {words}")
    assert "SSHException" not in str(caught.value)
    time.sleep(0.2)  # paramiko's transport thread logs its failure after the caller saw it
    printed = capfd.readouterr()
    assert "Traceback" not in printed.err + printed.out and printed.err == ""


def test_an_unreachable_node_is_named_in_the_error(tmp_path, key_file):
    server, port = _listener("silent")
    key_file(tmp_path / "key")
    node = NodeInfo(name="compute13", group="compute", roles=("compute",), address="127.0.0.1", ssh_port=port)
    lab = ClusterInfo(name="lab", provider="static", nodes=(node,), ssh_key_path=tmp_path / "key",
                      known_hosts_path=tmp_path / "known_hosts")
    try:
        with pytest.raises(ConnectionFailure, match=rf"^compute13: 127.0.0.1:{port}: accepted the connection"):
            commands.run_on(lab, node, "true", timeout=5)
    finally:
        server.close()


def _running(marker: str) -> list[int]:
    """PIDs of the processes whose command line holds the marker."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker in (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.fixture
def session(tmp_path, sshd_factory, key_file):
    server = sshd_factory({"root": key_file(tmp_path / "key")})
    (tmp_path / "known_hosts").write_text(server.known_hosts_line())
    target = ssh.SshTarget(host="127.0.0.1", port=server.port, user="root", key_path=tmp_path / "key",
                           known_hosts_path=tmp_path / "known_hosts")
    with ssh.connect(target) as client:
        yield client


def test_a_command_past_its_timeout_is_stopped_with_its_children(session):
    marker = "31.4159"  # a sleep no other process runs
    started = time.monotonic()
    with pytest.raises(ssh.CommandTimeout) as caught:
        ssh.run_within(session, f"echo begun; sh -c 'sleep {marker}'; echo never", 1.5)
    assert time.monotonic() - started < 15
    assert "still ran after 2 s; stopped it there (SIGTERM to its processes, then SIGKILL)" in str(caught.value)
    assert caught.value.stdout == "begun\n" and "gpu-provision-pid" not in caught.value.stderr
    assert _running(f"sleep {marker}") == []


def test_a_command_within_its_time_keeps_its_output_status_and_stderr(session):
    assert ssh.run_within(session, "echo out; echo err >&2; exit 3", 30) == (3, "out\n", "err\n")
    assert ssh.run_within(session, "printf 'no newline'", 30) == (0, "no newline", "")


def test_a_commands_input_arrives_whole_and_is_closed(session):
    text = "".join(f"gpu_provision_certify_check_ok{{node=\"n{i}\"}} 1\n" for i in range(20_000)).encode()  # ~800 KB
    rc, out, _ = ssh.run_within(session, "wc -c", 30, stdin=text)
    assert (rc, out.strip()) == (0, str(len(text)))


def test_a_command_that_does_not_read_its_input_still_ends_with_its_status(session):
    assert ssh.run_within(session, "echo refused >&2; exit 7", 30, stdin=b"x" * 4_000_000) == (7, "", "refused\n")
