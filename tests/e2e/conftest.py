"""Shared end-to-end fixtures: one sandbox Slurm cluster per test run, reached over real SSH."""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from provision.cluster import lifecycle
from provision.records import ClusterInfo
from provision.spec.loader import load_spec

PROVISION = [sys.executable, "-m", "provision"]

E2E_SPEC = """\
name: e2e
provider:
  type: sandbox
  subnet: 10.97.0.0/24
node_groups:
  - name: ctl
    roles: [controller]
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
"""


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
        """Run a command on a node with the system ssh client, host keys checked."""
        address = self.info.node(node).address
        argv = ["ssh", "-i", str(self.info.ssh_key_path), "-o", "StrictHostKeyChecking=yes",
                "-o", f"UserKnownHostsFile={self.info.known_hosts_path}", "-o", "BatchMode=yes",
                "-o", "ConnectTimeout=5", f"root@{address}", command]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=input)
        if check and result.returncode != 0:
            raise AssertionError(f"{node}: {command} -> {result.returncode}\n{result.stdout}\n{result.stderr}")
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


@pytest.fixture(scope="session")
def e2e_spec_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("e2e") / "cluster.yaml"
    path.write_text(E2E_SPEC)
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
        provision("up", str(e2e_spec_path), "--skip-certify", "--quiet", timeout=1500)
        yield LiveCluster(e2e_spec_path, lifecycle.current_cluster(spec))
    finally:
        if not keep:
            provision("down", str(e2e_spec_path), check=False)
        lock.close()
