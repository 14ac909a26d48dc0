"""SSH sessions to every node for one certification run: connect in parallel, run commands, close.

A node that cannot be reached is recorded with the reason (ConnectionFailure's one-line message) and
every later command on it returns that reason instead of raising, so one dead node never stops the run. A session
lost before a command could start (its transport died, sshd refused the channel) is opened again once and the
command run on the new one; a command that started is never run twice.
"""
from __future__ import annotations

import shlex
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from provision.adaptors import ssh
from provision.errors import ConnectionFailure
from provision.records import ClusterInfo, NodeInfo
from provision.remote.commands import ssh_target

CONNECT_TIMEOUT_S = 5.0
MAX_PARALLEL = 32


@dataclass(frozen=True)
class Outcome:
    """One command on one node: exit status and output, or why it could not run (rc None)."""

    node: str
    rc: int | None
    stdout: str = ""
    stderr: str = ""
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Ran and exited 0."""
        return self.rc == 0


class Fleet:
    """Open SSH clients to nodes (host keys verified); use as a context manager."""

    def __init__(self, cluster: ClusterInfo, connect_timeout: float = CONNECT_TIMEOUT_S,
                 slurm_reservation: str | None = None) -> None:
        self.cluster = cluster
        self.connect_timeout = connect_timeout
        # Every srun/sbatch/salloc on the controller runs inside this reservation (Slurm's input variables).
        self.controller_env = (f"export SLURM_RESERVATION={shlex.quote(slurm_reservation)} "
                               f"SBATCH_RESERVATION={shlex.quote(slurm_reservation)} "
                               f"SALLOC_RESERVATION={shlex.quote(slurm_reservation)}; ") if slurm_reservation else ""
        self.clients: dict[str, object] = {}
        self.unreachable: dict[str, str] = {}
        self.nodes: dict[str, NodeInfo] = {}  # every node connect() was given, to open a lost session again
        self.reconnected: dict[str, int] = {}  # sessions opened again after one was lost, per node
        self._reconnecting = threading.Lock()

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def connect(self, nodes: Iterable[NodeInfo]) -> dict[str, str]:
        """Connect to every node at once; returns {node: reason} for those that could not be reached."""
        todo = [n for n in nodes if n.name not in self.clients]
        self.nodes.update({n.name: n for n in todo})

        def one(node: NodeInfo) -> tuple[str, object | None, str | None]:
            try:
                return node.name, ssh.connect(ssh_target(self.cluster, node), timeout=self.connect_timeout), None
            except ConnectionFailure as exc:
                return node.name, None, str(exc)

        with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, max(len(todo), 1))) as pool:
            for name, client, reason in pool.map(one, todo):
                if client is None:
                    self.unreachable[name] = reason or "unreachable"
                else:
                    self.clients[name] = client
        return dict(self.unreachable)

    def reachable(self, name: str) -> bool:
        """Whether the node has an open session."""
        return name in self.clients

    def run(self, name: str, command: str, timeout: float = 60.0) -> Outcome:
        """Run one command; never raises for a dead node or a lost connection."""
        client = self.clients.get(name)
        if client is None:
            return Outcome(name, None, error=self.unreachable.get(name, "not connected"))
        if self.controller_env and name == self.cluster.controller.name:
            command = self.controller_env + command
        try:
            try:
                rc, out, err = ssh.run(client, command, timeout)
            except ssh.SessionLost:  # the command never started: once more on a new session
                rc, out, err = ssh.run(self._reconnect(name, client), command, timeout)
        except Exception as exc:  # socket timeouts and paramiko errors: the node stopped answering
            return Outcome(name, None, error=f"command failed over SSH ({exc.__class__.__name__}: {exc})")
        return Outcome(name, rc, out, err)

    def _reconnect(self, name: str, lost: object) -> object:
        """A new session to the node in place of `lost` (one for all the threads that lost it at once)."""
        with self._reconnecting:
            client = self.clients.get(name)
            if client is lost or client is None:
                try:
                    lost.close()
                except Exception:  # the old transport is already broken
                    pass
                client = ssh.connect(ssh_target(self.cluster, self.nodes[name]), timeout=self.connect_timeout)
                self.clients[name] = client
                self.reconnected[name] = self.reconnected.get(name, 0) + 1
            return client

    def run_many(self, commands: Mapping[str, str], timeout: float = 60.0) -> dict[str, Outcome]:
        """Run one command per node, all at once."""
        if not commands:
            return {}
        with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(commands))) as pool:
            futures = {name: pool.submit(self.run, name, cmd, timeout) for name, cmd in commands.items()}
            return {name: future.result() for name, future in futures.items()}

    def close(self) -> None:
        """Close every session."""
        for client in self.clients.values():
            try:
                client.close()
            except Exception:  # closing a broken transport must not hide the real result
                pass
        self.clients.clear()
