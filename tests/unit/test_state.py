"""State documents survive a kill at any moment of a write; shared directories are never used blindly; every
directory, key and secret of the state is ours (owner, no link, mode), or the command stops saying what to run."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from cli_contract import cli, one_error_line

from provision.deploy.ansible_cfg import control_path_dir
from provision.deploy.secrets import ensure_secrets
from provision.errors import StateError
from provision.providers.aws.ledger import Ledger
from provision.remote.sshkeys import ensure_key_pair, public_key
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
    with pytest.raises(StateError, match=f"has mode {mode:o}: group or others can reach it; .*run `chmod 700 "):
        control_path_dir(long_state)


@pytest.mark.skipif(os.geteuid() != 0, reason="planting a directory of another owner needs root")
def test_a_planted_directory_of_another_owner_is_refused(long_state, tmp_path):
    _planted(tmp_path / "shared" / f"gpu-provision-{os.geteuid()}", 0o700, owner=65534)
    with pytest.raises(StateError, match="is owned by uid 65534, not by this user"):
        control_path_dir(long_state)


def test_a_planted_link_is_refused(long_state, tmp_path):
    elsewhere = _planted(tmp_path / "elsewhere")
    (tmp_path / "shared" / f"gpu-provision-{os.geteuid()}").symlink_to(elsewhere)
    with pytest.raises(StateError, match="is a symbolic link, not a directory"):
        control_path_dir(long_state)


def test_private_dir_reuses_its_own_directory(tmp_path):
    first = private_dir(tmp_path / "mine")
    assert private_dir(first) == first


# State we own (issue 31): every directory and key under the state root is this user's, no link, closed to others;
# a wrong one is refused with what to run, and nothing is changed.

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="planting a file of another owner needs root")
NOBODY = 65534


def _state(tmp_path) -> ClusterState:
    """A cluster state made the normal way: root, clusters/, the cluster, ssh/ and secrets/, all 0700."""
    state = ClusterState(tmp_path / "root", "demo")
    state.ensure("ssh"), state.ensure("secrets")
    return state


def _file(path: Path, mode: int = 0o600, owner: int | None = None, text: str = "planted\n") -> Path:
    path.write_text(text)
    os.chmod(path, mode)
    if owner is not None:
        os.chown(path, owner, owner)
    return path


def _link(path: Path, target: Path) -> Path:
    path.symlink_to(target)
    return path


def _key_pair(state: ClusterState, **kwargs) -> None:
    _file(state.path / "ssh" / "id_ed25519", **kwargs)
    _file(state.path / "ssh" / "id_ed25519.pub", **kwargs)


def _use_key(state: ClusterState) -> None:
    ensure_key_pair(state.ssh_key_path, "gpu-provision-demo")


def _use_secrets(state: ClusterState) -> None:
    ensure_secrets(state)


def _use_known_hosts(state: ClusterState) -> None:
    state.known_hosts_path.touch(mode=0o600, exist_ok=True)


def _use_dirs(state: ClusterState) -> None:
    state.ensure("ssh")


PLANTED = [
    pytest.param(lambda s, t: _key_pair(s, owner=NOBODY), _use_key,
                 "id_ed25519 is owned by uid 65534, not by this user", id="key pair of another user", marks=ROOT_ONLY),
    pytest.param(lambda s, t: _link(s.path / "ssh" / "id_ed25519", _file(t / "elsewhere", 0o644)), _use_key,
                 "id_ed25519 is a symbolic link; keys, secrets and host keys are never read through a link",
                 id="key as a link"),
    pytest.param(lambda s, t: _key_pair(s, mode=0o644), _use_key,
                 r"id_ed25519 has mode 644: group or others can reach it; .*run `chmod 600 ", id="key open to others"),
    pytest.param(lambda s, t: (_file(s.path / "ssh" / "id_ed25519"), _file(s.path / "ssh" / "id_ed25519.pub",
                                                                           owner=NOBODY)), _use_key,
                 "id_ed25519.pub is owned by uid 65534", id="public key of another user", marks=ROOT_ONLY),
    pytest.param(lambda s, t: _file(s.secrets.munge_key, 0o400, owner=NOBODY), _use_secrets,
                 "munge.key is owned by uid 65534", id="secret of another user", marks=ROOT_ONLY),
    pytest.param(lambda s, t: _link(s.secrets.munge_key, _file(t / "elsewhere", 0o600)), _use_secrets,
                 "munge.key is a symbolic link", id="secret as a link"),
    pytest.param(lambda s, t: _file(s.secrets.db_password, 0o440), _use_secrets,
                 r"slurmdbd.password has mode 440: .*`chmod 600 ", id="secret open to the group"),
    pytest.param(lambda s, t: _link(s.path / "ssh" / "known_hosts", _file(t / "elsewhere", 0o600)),
                 _use_known_hosts, "known_hosts is a symbolic link", id="known_hosts as a link"),
    pytest.param(lambda s, t: _file(s.path / "ssh" / "known_hosts", 0o666), _use_known_hosts,
                 r"known_hosts has mode 666: group or others can write to it; .*`chmod go-w ",
                 id="known_hosts others can write"),
    pytest.param(lambda s, t: os.chown(s.path / "ssh", NOBODY, NOBODY), _use_key,
                 "ssh is owned by uid 65534", id="ssh directory of another user", marks=ROOT_ONLY),
    pytest.param(lambda s, t: os.chmod(s.path / "ssh", 0o755), _use_dirs,
                 r"ssh has mode 755: group or others can reach it; .*run `chmod 700 ", id="ssh directory open"),
    pytest.param(lambda s, t: os.chmod(s.path, 0o750), _use_secrets,
                 r"demo has mode 750: .*`chmod 700 ", id="cluster directory open to the group"),
    pytest.param(lambda s, t: (shutil.rmtree(s.path / "ssh"), _link(s.path / "ssh", t)), _use_key,
                 "ssh is a symbolic link, not a directory of the state", id="ssh directory as a link"),
    pytest.param(lambda s, t: os.chmod(s.root / "clusters", 0o775), _use_dirs,
                 r"clusters has mode 775: group or others can write to it; .*`chmod go-w ", id="clusters/ writable"),
    pytest.param(lambda s, t: os.chown(s.root, NOBODY, NOBODY), _use_dirs,
                 "root is owned by uid 65534", id="state root of another user", marks=ROOT_ONLY),
    pytest.param(lambda s, t: os.chmod(s.root, 0o777), _use_dirs,
                 r"root has mode 777: group or others can write to it; .*`chmod go-w ", id="state root world-writable"),
]


@pytest.mark.parametrize("plant, use, message", PLANTED)
def test_what_is_not_ours_in_the_state_is_refused_and_left_as_it_is(tmp_path, plant, use, message):
    state = _state(tmp_path)
    plant(state, tmp_path)
    before = _modes(tmp_path)
    with pytest.raises(StateError, match=message) as caught:
        use(state)
    assert caught.value.exit_code == 3 and caught.value.hint  # says what to do
    assert _modes(tmp_path) == before  # nothing chmodded (a link's target included), nothing made


def _modes(top: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.lstat().st_mode, p.lstat().st_uid) for p in [top, *top.rglob("*")]}


def test_a_link_as_the_key_is_never_followed(tmp_path):
    """Before: the link's target was chmodded 0600 and used as the cluster key."""
    state = _state(tmp_path)
    target = _file(tmp_path / "someone-elses-key", 0o644)
    _link(state.path / "ssh" / "id_ed25519", target)
    _file(state.path / "ssh" / "id_ed25519.pub")
    with pytest.raises(StateError):
        ensure_key_pair(state.path / "ssh" / "id_ed25519", "c")
    assert target.stat().st_mode & 0o777 == 0o644 and target.read_text() == "planted\n"


def test_what_we_make_is_0700_and_0600_whatever_the_umask(tmp_path):
    previous = os.umask(0o002)  # Ubuntu's default for users with their own group
    try:
        state = ClusterState(tmp_path / "new" / "root", "demo")
        state.ensure("ssh")
        key = ensure_key_pair(state.ssh_key_path, "c")
        ensure_secrets(state)
    finally:
        os.umask(previous)
    for directory in (state.root, state.root / "clusters", state.path, state.path / "ssh", state.path / "secrets"):
        assert directory.stat().st_mode & 0o777 == 0o700, directory
    assert key.stat().st_mode & 0o777 == 0o600 and key.with_suffix(".pub").stat().st_mode & 0o777 == 0o600
    assert state.secrets.munge_key.stat().st_mode & 0o777 == 0o400
    assert ensure_key_pair(state.ssh_key_path, "c") == key and public_key(key).endswith(" c")  # ours: reused


@pytest.mark.parametrize("mode", [0o755, 0o700, 0o750])
def test_a_root_and_clusters_others_may_read_are_still_ours(tmp_path, mode):
    """Roots made by older versions (mkdir -p: 0755) stay usable; only write by others is refused there."""
    root = tmp_path / "root"
    (root / "clusters").mkdir(parents=True)
    os.chmod(root, mode), os.chmod(root / "clusters", mode)
    assert ClusterState(root, "demo").ensure() == root / "clusters" / "demo"


def test_a_root_that_links_to_a_directory_of_ours_is_followed(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    _link(tmp_path / "root", real)
    assert ClusterState(tmp_path / "root", "demo").ensure().resolve() == real / "clusters" / "demo"


def test_a_planted_state_stops_a_command_with_exit_3_and_one_line(tmp_path, monkeypatch):
    """Read-only commands check too: `plan` of a cluster whose key is a planted link names it and stops."""
    spec = tmp_path / "cluster.yaml"
    spec.write_text("name: demo\nprovider: {type: static}\nnode_groups:\n"
                    "  - {name: ctl, roles: [controller], hosts: ctl01, addresses: [10.0.0.1]}\n"
                    "  - {name: cn, roles: [compute], hosts: 'cn[01-02]', addresses: '10.0.0.[2-3]'}\n")
    state = _state(tmp_path)
    _link(state.path / "ssh" / "id_ed25519", _file(tmp_path / "elsewhere"))
    monkeypatch.setenv("PROVISION_STATE_DIR", str(state.root))
    code, err = cli("plan", str(spec))
    assert code == 3
    one_error_line(err, f"{state.path / 'ssh' / 'id_ed25519'} is a symbolic link")
