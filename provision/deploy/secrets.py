"""Cluster secrets (munge key, accounting database password, Grafana's admin password): made once, kept 0400 in state, never printed;
checked to be this user's own before every deploy uses them.

Where they live is the state's business (ClusterState.secrets.munge_key, .secrets.db_password); this module makes them.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path

from provision.owned import owned_file
from provision.state import ClusterState

MUNGE_KEY_BYTES = 1024


def ensure_secrets(state: ClusterState) -> None:
    """Create the munge key and the passwords (database, Grafana's admin) the first time a cluster is deployed; check them on every
    later deploy, which reads them. Each one there is checked before any is made: one found with another owner, as
    a link or open to others is refused (provision.owned), never used or replaced."""
    state.ensure("secrets")
    made = {state.secrets.munge_key: lambda: secrets.token_bytes(MUNGE_KEY_BYTES),
            state.secrets.db_password: lambda: secrets.token_urlsafe(24).encode(),
            state.secrets.grafana_password: lambda: secrets.token_urlsafe(24).encode()}
    for path in [path for path in made if not owned_file(path)]:
        _create(path, made[path]())


def _create(path: Path, content: bytes) -> None:
    """Write a secret with mode 0400 (atomic: O_EXCL, never through a link)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o400)
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)
