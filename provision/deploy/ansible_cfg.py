"""ansible.cfg tuned for many hosts: forks, pipelining, multiplexing in a per-cluster directory, fact cache."""
from __future__ import annotations

import hashlib
from pathlib import Path

from provision.resources import playbooks_dir
from provision.state import ClusterState, write_private
from provision.templating import environment

_SOCKET_PATH_BUDGET = 60  # unix socket paths are limited to 108 bytes; ssh appends a 40-byte hash


def control_path_dir(state: ClusterState) -> Path:
    """A short per-cluster directory for SSH control sockets (never shared between clusters)."""
    preferred = state.path / "cp"
    if len(str(preferred)) <= _SOCKET_PATH_BUDGET:
        return preferred
    digest = hashlib.sha1(str(state.path).encode()).hexdigest()[:12]
    return Path("/tmp") / f"gp-cp-{digest}"


def write_ansible_cfg(state: ClusterState, host_count: int) -> Path:
    """Render ansible.cfg into the state directory and return its path."""
    cp_dir = control_path_dir(state)
    cp_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    text = environment().get_template("ansible/ansible.cfg.j2").render(
        cluster_name=state.cluster,
        roles_path=str(playbooks_dir() / "roles"),
        forks=max(5, min(host_count, 100)),
        fact_cache=str(state.path / "facts"),
        control_path_dir=str(cp_dir),
    )
    return write_private(state.path / "ansible.cfg", text)
