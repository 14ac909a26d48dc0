"""ansible.cfg tuned for many hosts: forks, pipelining, multiplexing in a per-cluster directory, fact cache; host
keys checked against the cluster's known_hosts."""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from provision.remote import ssh_options
from provision.resources import playbooks_dir
from provision.state import ClusterState, private_dir, write_private
from provision.templating import environment

_SOCKET_PATH_BUDGET = 60  # unix socket paths are limited to 108 bytes; ssh appends a 40-byte hash


def control_path_dir(state: ClusterState) -> Path:
    """A short private directory for this cluster's SSH control sockets, created (or checked) 0700 and ours.

    In order: <cluster state>/cp, <state root>/cp/<hash>, $XDG_RUNTIME_DIR/gpu-provision/<hash>, and only then
    <tmp>/gpu-provision-<uid>/<hash>, whose parent is refused if it exists with another owner or open permissions.
    """
    digest = hashlib.sha1(str(state.path).encode()).hexdigest()[:12]
    state.ensure()
    for base, leaf in _candidates(state, digest):
        if len(str(base / leaf)) <= _SOCKET_PATH_BUDGET:
            return _private(base, leaf)
    return _private(Path(tempfile.gettempdir()) / f"gpu-provision-{os.geteuid()}", digest)


def _candidates(state: ClusterState, digest: str) -> list[tuple[Path, str]]:
    """(base, leaf) pairs under this user's own directories, shortest reach first."""
    found = [(state.path / "cp", ""), (state.root / "cp", digest)]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_absolute() and Path(runtime).is_dir():
        found.append((Path(runtime) / "gpu-provision", digest))
    return found


def _private(base: Path, leaf: str) -> Path:
    """base (and base/leaf), each made 0700 or checked to be this user's own."""
    directory = private_dir(base)
    return private_dir(directory / leaf) if leaf else directory


def write_ansible_cfg(state: ClusterState, host_count: int) -> Path:
    """Render ansible.cfg into the state directory and return its path."""
    cp_dir = control_path_dir(state)
    text = environment().get_template("ansible/ansible.cfg.j2").render(
        cluster_name=state.cluster,
        roles_path=str(playbooks_dir() / "roles"),
        callback_plugins=str(playbooks_dir() / "callback_plugins"),
        forks=max(5, min(host_count, 100)),
        fact_cache=str(state.path / "facts"),
        control_path_dir=str(cp_dir),
        ssh_args=ssh_options.ssh_args(state.known_hosts_path),
    )
    return write_private(state.path / "ansible.cfg", text)
