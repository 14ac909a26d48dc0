"""Shared end-to-end fixtures: one sandbox Slurm cluster per test run, reached over real SSH."""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from provision.cluster import lifecycle
from provision.records import ClusterInfo
from provision.spec.loader import load_spec

PROVISION = [sys.executable, "-m", "provision"]

# A developer who runs a second checkout's suite beside another on one machine gives it a cluster of its own.
E2E_NAME = os.environ.get("PROVISION_E2E_NAME", "e2e")
E2E_SUBNET = os.environ.get("PROVISION_E2E_SUBNET", "10.97.0.0/24")

E2E_SPEC = """\
name: {e2e_name}
provider:
  type: sandbox
  subnet: {e2e_subnet}
node_groups:
  - name: ctl
    roles: [controller]
    count: 1
  - name: login
    roles: [login]
    count: 1
  - name: node
    roles: [compute]
    count: 1
    partition: batch
    default_partition: true
  - name: store
    roles: [compute, storage]
    count: 2
    partition: batch
filesystem:
  type: glusterfs
  mount_point: /shared
  replica: 2
# The fault tests break nodes on purpose; the health program would drain them under the tests' feet. It is tested on
# its own cluster (test_health.py).
health:
  enabled: false
# The team (test_users.py): two people with accounts, one without (Slurm must refuse her), fair share and a QoS limit.
users:
  - {{name: alice, uid: 2001, ssh_public_keys: ["{alice}"], accounts: [physics]}}
  - {{name: bob, uid: 2002, ssh_public_keys: ["{bob}"], accounts: [ml, physics]}}
  - {{name: carol, uid: 2003, ssh_public_keys: ["{carol}"]}}
accounting:
  enforce: true
  accounts:
    - {{name: physics, fairshare: 40, max_jobs: 20, qos: [normal, long]}}
    - {{name: ml, parent: physics, fairshare: 60}}
  qos:
    - {{name: long, priority: 10, max_jobs_per_user: 1, max_wall: 2-00:00:00}}
"""
E2E_USERS = ("alice", "bob", "carol")


def pytest_collection_modifyitems(config, items):
    """The sandbox needs root (namespaces, mounts, bridges): say so instead of failing obscurely."""
    if os.geteuid() != 0:
        skip = pytest.mark.skip(reason="sandbox e2e tests need root (make test runs them as root)")
        for item in items:
            if "e2e" in item.keywords and "sandbox" in str(item.fspath):
                item.add_marker(skip)


def provision(*args: str, check: bool = True, timeout: float = 900, **kwargs) -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess."""
    result = subprocess.run([*PROVISION, *args], capture_output=True, text=True, timeout=timeout, **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(f"provision {' '.join(args)} -> {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


def library_session(code: str, *args: str, timeout: float = 900) -> dict:
    """Run a Python session of library calls in a fresh interpreter; its last line is a JSON summary."""
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@dataclass
class LiveCluster:
    """A running sandbox cluster: its spec file and typed record, plus real-ssh helpers."""

    spec_path: Path
    info: ClusterInfo

    def ssh(self, node: str, command: str, check: bool = True, timeout: float = 120,
            input: str | None = None) -> subprocess.CompletedProcess:
        """Run a command on a node as root with the system ssh client, host keys checked."""
        return self._ssh("root", self.info.ssh_key_path, node, command, check, timeout, input)

    def ssh_as(self, user: str, key: Path, node: str, command: str, check: bool = True,
               timeout: float = 120) -> subprocess.CompletedProcess:
        """Run a command on a node as one of the cluster's users, logged in with their own key (host key checked)."""
        return self._ssh(user, key, node, command, check, timeout, None)

    def _ssh(self, login: str, key: Path, node: str, command: str, check: bool, timeout: float,
             input: str | None) -> subprocess.CompletedProcess:
        argv = ["ssh", "-i", str(key), "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=yes",
                "-o", f"UserKnownHostsFile={self.info.known_hosts_path}", "-o", "BatchMode=yes",
                "-o", "ConnectTimeout=5", f"{login}@{self.info.node(node).address}", command]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=input)
        if check and result.returncode != 0:
            raise AssertionError(f"{login}@{node}: {command} -> {result.returncode}\n{result.stdout}\n{result.stderr}")
        return result

    def deploy(self, *args: str, check: bool = False, timeout: float = 900) -> tuple[int, dict]:
        """Run `provision deploy --json` and return (exit code, parsed result)."""
        result = provision("deploy", str(self.spec_path), "--json", *args, check=check, timeout=timeout)
        return result.returncode, json.loads(result.stdout)

    @property
    def compute(self) -> list[str]:
        return [n.name for n in self.info.with_role("compute")]

    @property
    def controller(self) -> str:
        return self.info.controller.name

    @property
    def login(self) -> str:
        return self.info.with_role("login")[0].name


def report_checks(doc: dict, node: str | None = None) -> list[dict]:
    """A certify report's checks: every node's and the cluster's, or one node's."""
    if node is None:
        return [c for n in doc["nodes"] for c in n["checks"]] + doc["checks"]
    return next(n["checks"] for n in doc["nodes"] if n["name"] == node)


@contextmanager
def cluster_of_its_own(folder: Path, spec_text: str) -> Iterator[LiveCluster]:
    """A test module's own cluster from `spec_text` (written to folder/cluster.yaml), up without certify; `down`
    before (an interrupted earlier run must not leak into this one) and at the end."""
    path = folder / "cluster.yaml"
    path.write_text(spec_text)
    provision("down", str(path), check=False)
    try:
        provision("up", str(path), "--skip-certify", "--quiet", timeout=1500)
        yield LiveCluster(path, lifecycle.current_cluster(load_spec(path)))
    finally:
        provision("down", str(path), check=False)


@pytest.fixture(scope="session")
def e2e_user_keys(tmp_path_factory) -> dict[str, Path]:
    """Each of the shared cluster's users' private key (ed25519, made for this session)."""
    folder = tmp_path_factory.mktemp("e2e-users")
    keys = {name: folder / name for name in E2E_USERS}
    for name, key in keys.items():
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{name}@e2e", "-f", str(key)], check=True)
    return keys


@pytest.fixture(scope="session")
def e2e_spec_path(tmp_path_factory, e2e_user_keys) -> Path:
    path = tmp_path_factory.mktemp("e2e") / "cluster.yaml"
    public = {name: Path(f"{key}.pub").read_text().strip() for name, key in e2e_user_keys.items()}
    path.write_text(E2E_SPEC.format(e2e_name=E2E_NAME, e2e_subnet=E2E_SUBNET, **public))
    return path


@pytest.fixture(scope="session")
def slurm_cluster(e2e_spec_path) -> LiveCluster:
    """`provision up` from nothing (certify skipped here; certify tests run it themselves); `down` at the end.

    PROVISION_E2E_KEEP=1 (developers only) reuses a running cluster and leaves it up afterwards.
    """
    spec = load_spec(e2e_spec_path)
    keep = os.environ.get("PROVISION_E2E_KEEP") == "1"
    # Two test sessions on one machine (two developers, or a developer beside CI) would take the same cluster
    # down under each other: the second waits here until the first is done with it.
    lock = open(f"/tmp/gpu-provision-e2e-{spec.name}.lock", "w")  # noqa: SIM115 - held for the whole session
    fcntl.flock(lock, fcntl.LOCK_EX)
    if not keep:
        provision("down", str(e2e_spec_path), check=False)  # an interrupted earlier run must not leak into this one
    try:
        # A kept cluster was applied from an earlier session's spec (other users' keys): this session's takes over.
        provision("up", str(e2e_spec_path), "--skip-certify", "--quiet", *(["--rebind"] if keep else []), timeout=1500)
        yield LiveCluster(e2e_spec_path, lifecycle.current_cluster(spec))
    finally:
        if not keep:
            provision("down", str(e2e_spec_path), check=False)
        lock.close()
