"""Cluster secrets are created once, 0400, inside the 0700 state directory."""
from __future__ import annotations

from provision.deploy import secrets
from provision.state import ClusterState


def test_secrets_are_created_once_and_private(tmp_path):
    state = ClusterState(tmp_path, "c1")
    secrets.ensure_secrets(state)
    key = state.secrets.munge_key
    first = key.read_bytes()
    assert len(first) == secrets.MUNGE_KEY_BYTES
    assert key.stat().st_mode & 0o777 == 0o400
    assert state.secrets.db_password.stat().st_mode & 0o777 == 0o400
    assert state.secrets.directory.stat().st_mode & 0o777 == 0o700
    secrets.ensure_secrets(state)
    assert key.read_bytes() == first


def test_each_cluster_gets_its_own_key(tmp_path):
    a, b = ClusterState(tmp_path, "a"), ClusterState(tmp_path, "b")
    secrets.ensure_secrets(a)
    secrets.ensure_secrets(b)
    assert a.secrets.munge_key.read_bytes() != b.secrets.munge_key.read_bytes()
