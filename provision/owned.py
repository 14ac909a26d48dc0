"""State we own: directories and files under the state root (and private directories in /tmp) are used only if
they are this user's (st_uid == geteuid), not symbolic links, and closed to others.

The root and the directories clusters share (clusters/, locks/) may be read by others but never written (SHARED);
a cluster's own directories, its private key and its secrets allow others nothing (PRIVATE); a public key or a
known_hosts file may be read, not written. A directory made here is made 0700 whatever the umask; one found with a
wrong owner, as a link or with a wrong mode is an error (StateError, exit 3) that says what to run, and nothing is
changed: someone else may have planted it, or opened it on purpose.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from provision.errors import StateError

ENV_STATE_DIR = "PROVISION_STATE_DIR"
SHARED = 0o022  # the bits refused on the root, clusters/, locks/, a known_hosts or public key: others never write
PRIVATE = 0o077  # the bits refused on a cluster's directories, its private key and secrets: others get nothing


def ensure_root(root: Path) -> Path:
    """The state root, made 0700 (the parents it lacks as usual: they are not ours to judge) or checked: a directory
    of this user's that no one else may write to. A link to one is followed: the user may keep the state elsewhere."""
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StateError(f"cannot create {root.parent} ({exc.strerror})",
                         hint=f"set {ENV_STATE_DIR} to a writable directory of your own") from exc
    return private_dir(root, shared=True, follow=True)


def private_dir(path: Path, shared: bool = False, follow: bool = False) -> Path:
    """A directory only this user can use: made with mode 0700, or, if it is there already, checked (check_dir).

    For the state's directories and for places others can write to (/tmp): anything else may have been planted
    and is refused, with what to run to fix it; nothing is changed.
    """
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        return check_dir(path, shared=shared, follow=follow)
    except OSError as exc:
        raise StateError(f"cannot create {path} ({exc.strerror})",
                         hint=f"set {ENV_STATE_DIR} to a writable directory of your own") from exc
    _exactly_private(path)
    return path


def _exactly_private(path: Path) -> None:
    """A directory just made: 0700 whatever the umask left (opened without following a link, then fchmod)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fchmod(fd, 0o700)
    finally:
        os.close(fd)


def check_dir(path: Path, shared: bool = False, follow: bool = False) -> Path:
    """An existing directory of this user's, not a link (follow: a link to one will do), closed to others: no
    access at all, or (shared) no write. StateError says what is wrong and what to run."""
    info = _stat(path, follow)
    if stat.S_ISLNK(info.st_mode):
        raise StateError(f"{path} is a symbolic link, not a directory of the state",
                         hint=f"nothing in the state is used through a link: inspect it and remove it (rm {path}), "
                              f"or set {ENV_STATE_DIR} to a directory of your own")
    if not stat.S_ISDIR(info.st_mode):
        raise StateError(f"{path} is not a directory", hint=f"inspect it and remove it, or set {ENV_STATE_DIR} to a "
                         "directory of your own")
    _check_owner(path, info)
    _check_mode(path, info, SHARED if shared else PRIVATE, "go-w" if shared else "700")
    return path


def owned_file(path: Path, public: bool = False) -> bool:
    """Whether a key, secret or known_hosts file is there; if it is, it must be a regular file of this user's (not
    a link) that others cannot read (public: cannot write). StateError says what is wrong and what to run."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StateError(f"{path} cannot be checked ({exc.strerror})", hint="check the state directory") from exc
    if stat.S_ISLNK(info.st_mode):
        raise StateError(f"{path} is a symbolic link; keys, secrets and host keys are never read through a link",
                         hint=f"inspect it and remove it (rm {path}); `provision up` makes a new one where it can")
    if not stat.S_ISREG(info.st_mode):
        raise StateError(f"{path} is not a regular file", hint="inspect it and remove it")
    _check_owner(path, info)
    _check_mode(path, info, SHARED if public else PRIVATE, "go-w" if public else "600")
    return True


def _stat(path: Path, follow: bool) -> os.stat_result:
    """stat (follow) or lstat, any failure a StateError."""
    try:
        return os.stat(path) if follow else os.lstat(path)
    except OSError as exc:
        raise StateError(f"{path} cannot be checked ({exc.strerror})",
                         hint=f"set {ENV_STATE_DIR} to a directory of your own") from exc


def _check_owner(path: Path, info: os.stat_result) -> None:
    """Owned by the user running this command."""
    if info.st_uid != os.geteuid():
        raise StateError(f"{path} is owned by uid {info.st_uid}, not by this user (uid {os.geteuid()})",
                         hint="someone else may have planted it: inspect it and remove it, or set "
                              f"{ENV_STATE_DIR} to a directory of your own")


def _check_mode(path: Path, info: os.stat_result, refused: int, fix: str) -> None:
    """No permission bit in `refused` (group and others' access, or their write)."""
    mode = stat.S_IMODE(info.st_mode)
    if mode & refused:
        reach = "write to" if refused == SHARED else "reach"
        raise StateError(f"{path} has mode {mode:o}: group or others can {reach} it",
                         hint=f"if nobody else changed it, run `chmod {fix} {path}`; otherwise inspect it and "
                              "remove it")
