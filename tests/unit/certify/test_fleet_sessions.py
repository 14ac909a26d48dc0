"""Fleet sessions: a session lost before a command started is opened again once and the command runs on the new
one; a command that started and then failed is never run twice."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from provision.adaptors import ssh
from provision.certify.control import fleet as fleet_module
from provision.certify.control.fleet import Fleet
from provision.errors import ConnectionFailure
from provision.records import ClusterInfo, NodeInfo

NODES = (NodeInfo(name="ctl01", group="ctl", roles=("controller",), address="10.0.0.10", state="running"),
         NodeInfo(name="node01", group="node", roles=("compute",), address="10.0.0.11", state="running"))
CLUSTER = ClusterInfo(name="unit", provider="sandbox", nodes=NODES)


class Client:
    """A session: `lost` ones fail to open a channel, as paramiko does when the transport died."""

    def __init__(self, name: str, lost: bool = False) -> None:
        self.name, self.lost, self.closed, self.ran = name, lost, False, []

    def close(self) -> None:
        self.closed = True


@pytest.fixture()
def sessions(monkeypatch):
    made: list[Client] = []
    lock = threading.Lock()

    def connect(target, timeout=10.0, accept_new_host_keys=False):
        with lock:
            client = Client(f"session{len(made)}")
            made.append(client)
            return client

    def run(client, command, timeout=60.0):
        if client.lost:
            raise ssh.SessionLost("the SSH session was lost before the command started (SSHException: SSH "
                                  "session not active)", hint="")
        client.ran.append(command)
        if command == "hang":
            raise ConnectionFailure("'hang': no answer within 1 s (the command may still run on the node)", hint="")
        return 0, f"{command} on {client.name}\n", ""

    monkeypatch.setattr(fleet_module.ssh, "connect", connect)
    monkeypatch.setattr(fleet_module.ssh, "run", run)
    return made


def test_a_lost_session_is_opened_again_once_and_the_command_runs_there(sessions):
    fleet = Fleet(CLUSTER)
    assert fleet.connect(NODES) == {}
    old = fleet.clients["ctl01"]
    old.lost = True
    outcome = fleet.run("ctl01", "hostname")
    assert outcome.ok and outcome.stdout == "hostname on session2\n"
    assert old.closed and old.ran == [] and fleet.clients["ctl01"] is sessions[2]
    assert fleet.reconnected == {"ctl01": 1}
    assert fleet.run("ctl01", "uptime").stdout == "uptime on session2\n"  # the new session stays


def test_threads_that_lose_the_same_session_open_one_new_session(sessions):
    fleet = Fleet(CLUSTER)
    fleet.connect(NODES)
    fleet.clients["node01"].lost = True
    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(lambda i: fleet.run("node01", f"cmd{i}"), range(8)))
    assert all(o.ok for o in outcomes) and fleet.reconnected == {"node01": 1} and len(sessions) == 3


def test_a_command_that_started_is_not_run_again(sessions):
    fleet = Fleet(CLUSTER)
    fleet.connect(NODES)
    outcome = fleet.run("node01", "hang")
    assert outcome.rc is None and "no answer within 1 s" in outcome.error
    assert fleet.clients["node01"].ran == ["hang"] and fleet.reconnected == {} and len(sessions) == 2


def test_a_node_that_cannot_be_reached_again_gives_the_reason_not_an_exception(sessions, monkeypatch):
    fleet = Fleet(CLUSTER)
    fleet.connect(NODES)
    fleet.clients["node01"].lost = True

    def refused(target, timeout=10.0, accept_new_host_keys=False):
        raise ConnectionFailure("10.0.0.11:22: connection refused", hint="")

    monkeypatch.setattr(fleet_module.ssh, "connect", refused)
    outcome = fleet.run("node01", "hostname")
    assert outcome.rc is None and "connection refused" in outcome.error


def test_the_ssh_adaptor_says_a_channel_that_would_not_open_never_started_the_command():
    class Dead:
        def exec_command(self, command, timeout=None):
            raise ssh.paramiko.SSHException("SSH session not active")

    with pytest.raises(ssh.SessionLost, match="lost before the command started .SSHException: SSH session not active"):
        ssh.run(Dead(), "true")
