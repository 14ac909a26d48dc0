"""The shared base image: built once with debootstrap, kept as tar.zst plus an unpacked read-only copy."""
from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

from provision.errors import SandboxError
from provision.providers.base import Progress
from provision.providers.sandbox import commands, debootstrap, environment, rootfs
from provision.providers.sandbox.mirror import Mirrors
from provision.providers.sandbox.packages import NodePackages, role_packages

RECIPE_VERSION = 1  # bump when debootstrap.PACKAGES handling or customize_base changes what a base contains
NODE_RECIPE_VERSION = 2  # bump when rootfs.install_packages changes what a node image holds beyond its packages
SYSTEMCTL_PACKAGE = "docker-systemctl-replacement"
SYSTEMCTL_VERSION = "1.7.1097"
SYSTEMCTL_MEMBER = "systemctl2/systemctl3.py"

Builder = Callable[[Path, Mirrors, Progress], None]  # fills an empty directory with a customised root fs


def node_image_key(mirrors: Mirrors, packages: NodePackages, suite: str = debootstrap.SUITE) -> str:
    """The base's key plus a digest of what the node image adds, so a changed package list builds a new one."""
    recipe = {"recipe": NODE_RECIPE_VERSION, **asdict(packages)}
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]
    return f"{image_key(mirrors, suite)}-nodes-{digest}"


def image_key(mirrors: Mirrors, suite: str = debootstrap.SUITE) -> str:
    """Names the base by everything that shapes it (the Debian suite first), so a changed recipe, release or
    mirror builds a new one."""
    recipe = {"recipe": RECIPE_VERSION, "suite": suite, "packages": debootstrap.packages(suite),
              "systemctl": SYSTEMCTL_VERSION, "mirror": mirrors.archive, "security": mirrors.security,
              "components": mirrors.components}
    return f"{suite}-{hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]}"


class ImageCache:
    """Images under <cache>/images: KEY.tar.zst is the cache, KEY/ the unpacked lower layer.

    Two images are kept: the debootstrap base, and the node image nodes use (the base plus the roles' packages,
    built from the base once per package list). packages=None makes ensure() return the base itself."""

    def __init__(self, cache: Path, builder: Builder | None = None,
                 packages: NodePackages | None | str = "roles",
                 installer: Callable[[Path, NodePackages, Progress], list[str]] | None = None) -> None:
        self.dir = cache / "images"
        self.downloads = cache / "downloads"
        self.builder = builder  # None: debootstrap of the suite ensure() is asked for
        self.packages = packages
        self.installer = installer or rootfs.install_packages

    def tarball(self, key: str) -> Path:
        """The packed image."""
        return self.dir / f"{key}.tar.zst"

    def rootfs(self, key: str) -> Path:
        """The unpacked image that nodes use as their read-only lower layer."""
        return self.dir / key

    def ensure(self, mirrors: Mirrors, progress: Progress, suite: str = debootstrap.SUITE) -> Path:
        """The unpacked image for nodes of one Debian suite: the base, then (unless packages is None) the base
        with the packages."""
        base_key = image_key(mirrors, suite)
        builder = self.builder or functools.partial(self._debootstrap, suite=suite)
        base = self._ensure(base_key, lambda work: builder(work, mirrors, progress), progress)
        packages = role_packages() if self.packages == "roles" else self.packages
        if not isinstance(packages, NodePackages):
            return base
        key = node_image_key(mirrors, packages, suite)
        return self._ensure(key, lambda work: self._install(base_key, key, work, packages, progress), progress)

    def _ensure(self, key: str, build: Callable[[Path], None], progress: Progress) -> Path:
        """One image: reused, unpacked from its tarball, packed again, or built (then packed)."""
        with self._lock(key):
            tarball, root = self.tarball(key), self.rootfs(key)
            if _complete(root) and tarball.is_file() and _stamp(tarball) == _read_stamp(root):
                return root
            if tarball.is_file() and not _complete(root):
                if self._unpack(tarball, root, progress):
                    return root
            elif tarball.is_file() and _verify(tarball):
                _mark_complete(root, tarball)  # re-stamped: the tarball was replaced by a valid one
                return root
            if _complete(root):
                progress("image: the packed copy is missing or damaged; packing it again")
                self._pack(root, tarball)
                _mark_complete(root, tarball)
                return root
            return self._build(key, build, progress)

    def _build(self, key: str, build: Callable[[Path], None], progress: Progress) -> Path:
        """Build into a temporary directory, pack, then move into place."""
        work = self.dir / f"{key}.build-{os.getpid()}"
        _remove_tree(work)
        work.mkdir(parents=True)
        try:
            build(work)
            progress(f"image {key}: packing it into the cache")
            self._pack(work, self.tarball(key))
            root = self.rootfs(key)
            _remove_tree(root)
            work.rename(root)
            _mark_complete(root, self.tarball(key))
            progress(f"image {key}: ready ({_size_mb(self.tarball(key))} MB packed)")
            return root
        finally:
            _remove_tree(work)

    def _install(self, base_key: str, key: str, work: Path, packages: NodePackages, progress: Progress) -> None:
        """The node image: the base's tarball unpacked, the packages installed, what they enabled disabled."""
        progress(f"node image: the base plus {len(packages.with_recommends) + len(packages.without_recommends)} "
                 "packages the roles install (built once per package list, a few minutes)")
        if not _extract(self.tarball(base_key), work):
            raise SandboxError(f"could not unpack {self.tarball(base_key)} to build the node image")
        disabled = self.installer(work, packages, progress)
        manifest = {"base": base_key, **asdict(packages), "units_disabled": disabled}
        (self.dir / f"{key}.manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")

    def _unpack(self, tarball: Path, root: Path, progress: Progress) -> bool:
        """Unpack a cached tarball; False (and the tarball removed) if it is damaged."""
        progress(f"image: unpacking {tarball.name}")
        work = root.with_name(f"{root.name}.unpack-{os.getpid()}")
        _remove_tree(work)
        work.mkdir(parents=True)
        try:
            if not _verify(tarball) or not _extract(tarball, work):
                progress("image: the cached tarball is damaged; building it again")
                tarball.unlink(missing_ok=True)
                return False
            _remove_tree(root)
            work.rename(root)
            _mark_complete(root, tarball)
            return True
        finally:
            _remove_tree(work)

    def _pack(self, root: Path, tarball: Path) -> None:
        """tar | zstd into a temporary file, then rename, so a crash never leaves half a tarball."""
        tmp = tarball.with_name(f".{tarball.name}.{os.getpid()}")
        tar = subprocess.Popen(["tar", "--numeric-owner", "--xattrs", "-C", str(root), "-cf", "-", "."],
                               stdout=subprocess.PIPE)
        zstd = subprocess.run(["zstd", "-q", "-T0", "-3", "-f", "-o", str(tmp)], stdin=tar.stdout,
                              capture_output=True)
        if tar.stdout:
            tar.stdout.close()
        if tar.wait() != 0 or zstd.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise SandboxError(f"could not pack the base image into {tarball}: {zstd.stderr.decode().strip()}")
        os.replace(tmp, tarball)

    def _debootstrap(self, target: Path, mirrors: Mirrors, progress: Progress, suite: str) -> None:
        """The real builder: debootstrap, then the sandbox's customisation."""
        debootstrap.build(target, mirrors.archive, progress, suite)
        rootfs.customize_base(target, mirrors, systemctl_script(self.downloads), suite)

    @contextmanager
    def _lock(self, key: str) -> Iterator[None]:
        """One builder per image at a time, across processes."""
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / f"{key}.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield


def systemctl_script(downloads: Path) -> bytes:
    """systemctl3.py from the docker-systemctl-replacement wheel, downloaded once with pip."""
    for attempt in range(2):
        wheel = next(downloads.glob(f"docker_systemctl_replacement-{SYSTEMCTL_VERSION}-*.whl"), None)
        if wheel is None:
            downloads.mkdir(parents=True, exist_ok=True)
            commands.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                          "--disable-pip-version-check", "-q", "-d", str(downloads),
                          f"{SYSTEMCTL_PACKAGE}=={SYSTEMCTL_VERSION}"], timeout=300)
            continue
        try:
            with zipfile.ZipFile(wheel) as archive:
                return archive.read(SYSTEMCTL_MEMBER)
        except (zipfile.BadZipFile, KeyError):
            wheel.unlink()
    raise SandboxError(f"could not get {SYSTEMCTL_MEMBER} from {SYSTEMCTL_PACKAGE} {SYSTEMCTL_VERSION}",
                       hint=f"check that pip can download {SYSTEMCTL_PACKAGE} (an index or PIP_FIND_LINKS)")


def _verify(tarball: Path) -> bool:
    """Whether the zstd stream is intact."""
    return commands.succeeds(["zstd", "-q", "-t", str(tarball)], timeout=300)


def _extract(tarball: Path, target: Path) -> bool:
    """Unpack with numeric owners and extended attributes; whether tar succeeded."""
    return commands.succeeds(["tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "-I", "zstd", "-x",
                              "-f", str(tarball), "-C", str(target)], timeout=600)


def _stamp(tarball: Path) -> dict:
    """Size and mtime of the tarball an unpacked copy came from."""
    info = tarball.stat()
    return {"size": info.st_size, "mtime_ns": info.st_mtime_ns}


def _marker(root: Path) -> Path:
    """Beside the unpacked copy (not inside: nodes see everything inside)."""
    return root.with_name(f"{root.name}.complete")


def _read_stamp(root: Path) -> dict | None:
    """The stamp recorded when the unpacked copy was completed."""
    try:
        return json.loads(_marker(root).read_text())
    except (OSError, ValueError):
        return None


def _complete(root: Path) -> bool:
    """Whether an unpacked copy was finished (the marker is written last)."""
    return _marker(root).is_file() and root.is_dir()


def _mark_complete(root: Path, tarball: Path) -> None:
    """Record that the unpacked copy is whole and which tarball it matches."""
    _marker(root).write_text(json.dumps(_stamp(tarball)))


def _remove_tree(path: Path) -> None:
    """Remove a directory tree if present (and the completion marker of an unpacked copy).

    A debootstrap that failed half-way may have left /proc or /sys mounted inside its target: those
    are unmounted first, so the removal never reaches into the host's kernel file systems."""
    _marker(path).unlink(missing_ok=True)
    for point in environment.mounted_under(path) if path.is_dir() else []:
        commands.run(["umount", "-l", point], check=False)
    if environment.mounted_under(path):
        raise SandboxError(f"cannot remove {path}: something is still mounted inside it",
                           hint=f"unmount it (findmnt -R {path}) and retry")
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)


def _size_mb(path: Path) -> int:
    """File size in MB."""
    return round(path.stat().st_size / 1e6)
