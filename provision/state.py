"""A cluster's state directory: keys, known_hosts, inventory, run artifacts, secrets, provider state; all private.

A low module every layer may import: where a cluster's files are is worked out here, from the spec, once.

Every directory from the state root down, and every key, secret, known_hosts and state document in it, is used
only if it is this user's own (provision.owned: owner, no link, mode; refused with what to run, never changed).
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from provision.errors import StateError
from provision.owned import ENV_STATE_DIR, check_dir, ensure_root, owned_file, private_dir

if TYPE_CHECKING:  # a type only: the state's paths never need the spec's models (the CLI starts without pydantic)
    from provision.spec.model import ClusterSpec

__all__ = ["ENV_STATE_DIR", "ClusterState", "SecretPaths", "private_dir", "state_root", "write_private"]


def state_root(configured: Path | None = None) -> Path:
    """Where all clusters' state lives: the spec's state_dir, $PROVISION_STATE_DIR, or ~/.local/state."""
    if configured is not None:
        return configured.expanduser()
    if os.environ.get(ENV_STATE_DIR):
        return Path(os.environ[ENV_STATE_DIR]).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "gpu-provision"


@dataclass(frozen=True)
class SecretPaths:
    """Where a cluster's secrets live: files 0400 in a 0700 folder, made by deploy.secrets, never printed."""

    directory: Path
    munge_key: Path  # the munge role copies it to every node
    db_password: Path  # slurmdbd's accounting database password
    grafana_password: Path  # the password of Grafana's admin (monitoring.grafana)


class ClusterState:
    """The files one cluster owns under the state root; directories 0700, files 0600."""

    def __init__(self, root: Path, cluster: str) -> None:
        self.root = root
        self.cluster = cluster
        self.path = root / "clusters" / cluster

    @classmethod
    def for_spec(cls, spec: ClusterSpec) -> ClusterState:
        """The state directory of a spec's cluster: under the spec's state_dir, $PROVISION_STATE_DIR or ~/.local."""
        return cls(state_root(spec.state_dir), spec.name)

    @property
    def cache_dir(self) -> Path:
        """Shared between clusters: the sandbox base image, downloads."""
        return self.root / "cache"

    @property
    def ssh_key_path(self) -> Path:
        """The per-cluster private key (the public key sits beside it with .pub); checked when it is there."""
        return self.checked(self.path / "ssh" / "id_ed25519")

    @property
    def known_hosts_path(self) -> Path:
        """Host keys of every node, used by Ansible and preflight with checking on; checked when it is there."""
        return self.checked(self.path / "ssh" / "known_hosts", public=True)

    @property
    def inventory_dir(self) -> Path:
        """The rendered Ansible inventory."""
        return self.path / "inventory"

    @property
    def runs_dir(self) -> Path:
        """One artifacts directory per Ansible run."""
        return self.path / "runs"

    @property
    def reports_dir(self) -> Path:
        """Certification reports."""
        return self.path / "reports"

    @property
    def secrets(self) -> SecretPaths:
        """The cluster's secrets: the munge key, the accounting database password, Grafana's admin password."""
        folder = self.path / "secrets"
        return SecretPaths(folder, munge_key=folder / "munge.key", db_password=folder / "slurmdbd.password",
                           grafana_password=folder / "grafana-admin.password")

    def exists(self) -> bool:
        """Whether anything was ever created for this cluster (its directories checked on the way)."""
        return self._directories_checked(self.path)

    def ensure(self, sub: str = "") -> Path:
        """Create the cluster's directory (or a subdirectory) and each one above it up to the state root, 0700, or
        check the ones there: this user's, no link, closed to others (module docstring). Returns the directory."""
        current = self.shared_dir("clusters")
        for part in (self.cluster, *Path(sub).parts):
            current = private_dir(current / part)
        return current

    def shared_dir(self, name: str) -> Path:
        """A directory under the state root that clusters share (clusters/, locks/), made 0700 or checked."""
        return private_dir(ensure_root(self.root) / name, shared=True)

    def checked(self, path: Path, public: bool = False) -> Path:
        """A file of this cluster's state as it may be used: the directories down to it that exist are checked as
        ensure() checks them, and the file itself if it is there (public: others may read it). Creates nothing."""
        if self._directories_checked(path.parent):
            owned_file(path, public=public)
        return path

    def _directories_checked(self, directory: Path) -> bool:
        """Check the root, clusters/ and each directory below down to `directory`; False at the first one absent."""
        parts = directory.relative_to(self.root).parts
        for depth in range(len(parts) + 1):
            current = self.root.joinpath(*parts[:depth])
            if not os.path.lexists(current):
                return False
            check_dir(current, shared=depth < 2, follow=depth == 0)
        return True

    def read(self, name: str) -> dict | None:
        """Read a JSON state document (checked to be ours); None if absent."""
        file = self.checked(self.path / f"{name}.json")
        try:
            return json.loads(file.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise StateError(f"state file {file} is unreadable ({exc})",
                             hint="restore it from a backup or remove it and run `provision down`") from exc

    def write(self, name: str, data: dict) -> Path:
        """Write a JSON state document atomically with mode 0600, so a crash never leaves half a file."""
        self.ensure()
        return write_private(self.path / f"{name}.json", json.dumps(data, indent=2, sort_keys=True) + "\n")

    def remove(self, name: str) -> None:
        """Forget a state document."""
        (self.path / f"{name}.json").unlink(missing_ok=True)

    def stage_done(self, stage: str) -> bool:
        """Whether a stage of `up` finished before (for resuming)."""
        return stage in (self.read("stages") or {}).get("done", [])

    def stage_nodes(self, stage: str) -> set[str] | None:
        """The nodes a finished stage covered (a change to the cluster redoes it for the others); None when the
        stage is not done or recorded no nodes."""
        document = self.read("stages") or {}
        if stage not in document.get("done", []):
            return None
        nodes = (document.get("nodes") or {}).get(stage)
        return set(nodes) if nodes is not None else None

    def mark_stage(self, stage: str, done: bool = True, nodes: list[str] | None = None) -> None:
        """Record that a stage of `up` finished (for these nodes), or forget it so it runs again."""
        document = self.read("stages") or {}
        stages = set(document.get("done", []))
        covered = dict(document.get("nodes") or {})
        stages = stages | {stage} if done else stages - {stage}
        if done and nodes is not None:
            covered[stage] = sorted(nodes)
        elif not done:
            covered.pop(stage, None)
        self.write("stages", {"done": sorted(stages), "nodes": covered})

    def forget_stage_nodes(self, names: list[str]) -> None:
        """Nodes that left the cluster: no stage counts as done for them (a new node of the same name redoes all)."""
        document = self.read("stages") or {}
        covered = {stage: [n for n in nodes if n not in names] for stage, nodes in (document.get("nodes") or {}).items()}
        self.write("stages", {"done": document.get("done", []), "nodes": covered})


def write_private(path: Path, text: str) -> Path:
    """Write a file readable by its owner only, atomically: temp file, fsync, rename, fsync of the directory.

    A kill or a power cut at any moment leaves the old document or the new one, never part of one. Directories it
    has to make are made 0700 (each of them, not only the last).
    """
    _make_parents(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return path


def _make_parents(directory: Path) -> None:
    """Make a directory and the parents it lacks, each 0700 (mkdir -p would give the parents the umask's mode)."""
    missing = []
    while not os.path.lexists(directory):
        missing.append(directory)
        directory = directory.parent
    for made in reversed(missing):
        made.mkdir(mode=0o700, exist_ok=True)


def _fsync_dir(directory: Path) -> None:
    """Make a rename in a directory durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
