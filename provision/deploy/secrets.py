"""Cluster secrets (munge key, accounting database password): made once, kept 0400 in state, never printed.

Where they live is the state's business (ClusterState.secrets.munge_key, .secrets.db_password); this module makes them.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path

from provision.state import ClusterState

MUNGE_KEY_BYTES = 1024


def _create_once(path: Path, content: bytes) -> None:
    """Write a secret with mode 0400 unless it exists (atomic: O_EXCL)."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)


def ensure_secrets(state: ClusterState) -> None:
    """Create the munge key and the database password the first time a cluster is deployed."""
    state.ensure()
    _create_once(state.secrets.munge_key, secrets.token_bytes(MUNGE_KEY_BYTES))
    _create_once(state.secrets.db_password, secrets.token_urlsafe(24).encode())
