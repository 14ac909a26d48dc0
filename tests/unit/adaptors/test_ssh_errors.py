"""Every SSH failure kind maps to one message with its fix, and never carries key material."""
from __future__ import annotations

import errno
import socket
from pathlib import Path

import paramiko
import pytest

from provision.adaptors.ssh import SshTarget, UnknownHostKey, _translate

TARGET = SshTarget(host="10.0.0.5", port=22, user="root", key_path=Path("/state/id_ed25519"),
                   known_hosts_path=Path("/state/known_hosts"))


def _bad_host_key() -> paramiko.BadHostKeyException:
    got = paramiko.RSAKey.generate(1024)
    expected = paramiko.RSAKey.generate(1024)
    return paramiko.BadHostKeyException("10.0.0.5", got, expected)


@pytest.mark.parametrize("exc, message, hint", [
    (socket.gaierror(-2, "Name or service not known"), "10.0.0.5: name does not resolve", "/etc/hosts"),
    (ConnectionRefusedError(errno.ECONNREFUSED, "refused"), "10.0.0.5:22: connection refused", "sshd running"),
    (paramiko.ssh_exception.NoValidConnectionsError({("10.0.0.5", 22): OSError(errno.ECONNREFUSED, "x")}),
     "10.0.0.5:22: connection refused", "sshd running"),
    (paramiko.ssh_exception.NoValidConnectionsError({("10.0.0.5", 22): OSError(errno.EHOSTUNREACH, "x")}),
     "10.0.0.5:22: unreachable (no route to host)", "node up"),
    (socket.timeout("timed out"), "10.0.0.5:22: timed out", "reachable"),
    (paramiko.AuthenticationException("Authentication failed."), "authentication failed for user root",
     "authorized_keys"),
    (UnknownHostKey("10.0.0.5: ssh-ed25519 host key unknown"), "host key unknown (first contact)",
     "--accept-new-host-keys"),
])
def test_each_failure_kind_has_one_message_and_fix(exc, message, hint):
    failure = _translate(exc, TARGET)
    assert message in failure.message and hint in failure.hint


def test_changed_host_key_names_the_ssh_keygen_command():
    failure = _translate(_bad_host_key(), TARGET)
    assert "host key changed" in failure.message
    assert failure.hint == "if the change is expected: ssh-keygen -f /state/known_hosts -R 10.0.0.5"


def test_non_standard_port_uses_bracket_form_in_the_hint():
    target = SshTarget("10.0.0.5", 2222, "root", Path("/k"), Path("/kh"))
    assert failure_hint(target).endswith("-R [10.0.0.5]:2222")


def failure_hint(target: SshTarget) -> str:
    return _translate(_bad_host_key(), target).hint


def test_messages_never_include_key_material():
    exc = _bad_host_key()
    text = str(_translate(exc, TARGET))
    assert exc.key.get_base64() not in text and exc.expected_key.get_base64() not in text


class _SilentStream:
    """A channel file whose read times out, as paramiko's does when the command prints nothing in time."""

    def read(self) -> bytes:
        raise socket.timeout()


class _SilentClient:
    def exec_command(self, command: str, timeout: float):
        return None, _SilentStream(), _SilentStream()


def test_a_command_that_stays_silent_is_a_clear_failure_not_a_traceback():
    from provision.adaptors.ssh import run
    from provision.errors import ConnectionFailure

    with pytest.raises(ConnectionFailure) as caught:
        run(_SilentClient(), "bash -c strings", timeout=5)
    assert "'bash -c strings': no answer within 5 s" in str(caught.value)
    assert "input" in caught.value.hint


def _chained(outer: BaseException, inner: BaseException) -> BaseException:
    """`outer` raised while handling `inner`, as paramiko's banner reader raises its SSHException."""
    try:
        try:
            raise inner
        except BaseException:
            raise outer
    except BaseException as raised:
        return raised


@pytest.mark.parametrize("exc, greeted", [
    (EOFError(), False),  # paramiko's writer, sending our greeting into a closed socket
    (_chained(paramiko.SSHException("Error reading SSH protocol banner"), EOFError()), False),
    (_chained(paramiko.SSHException("Error reading SSH protocol banner[Errno 104] Connection reset by peer"),
              ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")), False),
    (ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"), True),  # the TCP connect itself, reset
])
def test_every_form_of_a_hang_up_before_the_greeting_is_one_message(exc, greeted):
    """The same node (it accepts and hangs up) reaches us in four forms, depending on which side's packet wins the
    race; all four are the same failure (the form that ended a CI run was the reset within the TCP connect)."""
    failure = _translate(exc, TARGET, greeted)
    assert failure.message == "10.0.0.5:22: closed the connection before its SSH greeting (sshd refused the session, " \
                              "e.g. MaxStartups, or this port is not sshd's)"


def test_a_server_that_accepted_and_said_nothing_is_named_hung_not_closed():
    failure = _translate(paramiko.SSHException("No existing session"), TARGET, greeted=False)
    assert "sent no SSH greeting in time (the node is hung" in failure.message
