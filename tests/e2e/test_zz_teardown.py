"""Runs last: `provision down` on the shared cluster leaves no mount, namespace or process behind."""
from __future__ import annotations

import subprocess

import pytest

from conftest import provision

pytestmark = pytest.mark.e2e


def test_down_leaves_no_mount_behind(slurm_cluster):
    provision("down", str(slurm_cluster.spec_path))
    mounts = open("/proc/mounts").read()
    assert "glusterfs" not in mounts
    assert str(slurm_cluster.info.name) not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                                              text=True).stdout
    addresses = [n.address for n in slurm_cluster.info.nodes]
    routes = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
    assert not any(f" {a.rsplit('.', 1)[0]}.1/" in routes for a in addresses)
