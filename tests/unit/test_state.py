"""State documents survive a kill at any moment of a write; shared directories are never used blindly."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from provision.deploy.ansible_cfg import control_path_dir
from provision.errors import StateError
from provision.providers.aws.ledger import Ledger
from provision.state import ClusterState, private_dir, write_private

# A child process writes a new ledger and dies (os._exit, as a kill -9 would) at one point of the write.
KILLED_WRITER = """\
import os, sys
from pathlib import Path
from provision.providers.aws.ledger import Ledger
from provision.state import ClusterState
point = sys.argv[2]
real = getattr(os, point)
def die(*args, **kwargs):
    if point == "replace":
        os._exit(137)  # everything written and synced, the rename not done
    if point == "fsync":
        real(*args, **kwargs)
        os._exit(137)  # the data on disk, before the rename
    handle = real(*args, **kwargs)  # point == "fdopen": die half way through writing the text
    def write(text):
        handle.buffer.write(text[: len(text) // 2].encode())
        handle.buffer.flush()
        os._exit(137)
    handle.write = write
    return handle
setattr(os, point, die)
ledger = Ledger(ClusterState(Path(sys.argv[1]), "kill"))
ledger.created("vpc", "vpc", "vpc-new", cidr="x" * 200_000)
"""


@pytest.fixture
def ledger_state(tmp_path) -> ClusterState:
    state = ClusterState(tmp_path / "state", "kill")
    Ledger(state).created("vpc", "vpc", "vpc-old")
    return state


@pytest.mark.parametrize("point", ["fdopen", "fsync", "replace"])
def test_a_kill_during_a_state_write_leaves_the_old_document(ledger_state, point):
    result = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(ledger_state.root), point], timeout=60)
    assert result.returncode == 137  # the child really died mid-write
    assert Ledger(ledger_state).id("vpc") == "vpc-old"  # readable, and the old one
    assert json.loads((ledger_state.path / "aws.json").read_text())["version"] == 1


def test_a_kill_after_the_rename_leaves_the_new_document(ledger_state, monkeypatch):
    import provision.state as state_module

    def killed(_directory):
        raise SystemExit("killed after the rename")  # the directory fsync never runs

    monkeypatch.setattr(state_module, "_fsync_dir", killed)
    with pytest.raises(SystemExit):
        Ledger(ledger_state).created("vpc", "vpc", "vpc-new")
    assert Ledger(ledger_state).id("vpc") == "vpc-new"


def test_the_file_and_its_directory_are_synced(tmp_path, monkeypatch):
    synced: list[str] = []
    real = os.fsync

    def record(fd):
        synced.append("dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "file")
        real(fd)

    monkeypatch.setattr(os, "fsync", record)
    path = write_private(tmp_path / "doc.json", "{}\n")
    assert synced == ["file", "dir"] and path.stat().st_mode & 0o777 == 0o600


def _planted(base: Path, mode: int = 0o700, owner: int | None = None) -> Path:
    base.mkdir(mode=mode)
    os.chmod(base, mode)
    if owner is not None:
        os.chown(base, owner, owner)
    return base


@pytest.fixture
def shared_tmp(tmp_path, monkeypatch) -> Path:
    """The shared temporary directory (/tmp) as the code sees it, here tmp_path/shared; no runtime dir."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o1777)
    monkeypatch.setenv("TMPDIR", str(shared))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    return shared


@pytest.fixture
def short_root(shared_tmp):
    """A state root short enough for sockets under it (pytest's tmp_path is not)."""
    root = Path(tempfile.mkdtemp(prefix="gp-", dir="/tmp"))
    yield root
    shutil.rmtree(root)


def test_control_sockets_stay_in_the_cluster_state_when_the_path_is_short(short_root):
    state = ClusterState(short_root, "demo")
    assert control_path_dir(state) == state.path / "cp"
    assert (state.path / "cp").stat().st_mode & 0o777 == 0o700


def test_a_long_cluster_path_uses_a_short_directory_under_the_state_root(short_root):
    state = ClusterState(short_root / "deeper-state-directory", "a-cluster-name-of-thirty-chars")
    chosen = control_path_dir(state)
    assert chosen.parent == state.root / "cp" and len(str(chosen)) <= 60
    assert chosen.stat().st_mode & 0o777 == 0o700


def test_then_the_users_runtime_directory(short_root, tmp_path, monkeypatch):
    runtime = Path(tempfile.mkdtemp(prefix="r-", dir=short_root))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    chosen = control_path_dir(ClusterState(tmp_path / ("long-" * 12), "demo"))
    assert chosen.parent == runtime / "gpu-provision" and chosen.stat().st_mode & 0o777 == 0o700


@pytest.fixture
def long_state(tmp_path, shared_tmp) -> ClusterState:
    """A state root too long for any directory under it, and no runtime directory: the shared tmp is the last resort."""
    return ClusterState(tmp_path / ("long-" * 12), "demo")


def test_the_shared_tmp_fallback_is_created_private(long_state, tmp_path):
    chosen = control_path_dir(long_state)
    assert chosen.parent == tmp_path / "shared" / f"gpu-provision-{os.geteuid()}"
    assert chosen.parent.stat().st_mode & 0o777 == 0o700 and chosen.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("mode", [0o777, 0o755, 0o770])
def test_a_planted_directory_with_open_permissions_is_refused(long_state, tmp_path, mode):
    _planted(tmp_path / "shared" / f"gpu-provision-{os.geteuid()}", mode)
    with pytest.raises(StateError, match=f"is not a private directory of this user .*mode {mode:o}"):
        control_path_dir(long_state)


@pytest.mark.skipif(os.geteuid() != 0, reason="planting a directory of another owner needs root")
def test_a_planted_directory_of_another_owner_is_refused(long_state, tmp_path):
    _planted(tmp_path / "shared" / f"gpu-provision-{os.geteuid()}", 0o700, owner=65534)
    with pytest.raises(StateError, match="owner uid 65534"):
        control_path_dir(long_state)


def test_a_planted_link_is_refused(long_state, tmp_path):
    elsewhere = _planted(tmp_path / "elsewhere")
    (tmp_path / "shared" / f"gpu-provision-{os.geteuid()}").symlink_to(elsewhere)
    with pytest.raises(StateError, match="not a directory"):
        control_path_dir(long_state)


def test_private_dir_reuses_its_own_directory(tmp_path):
    first = private_dir(tmp_path / "mine")
    assert private_dir(first) == first
