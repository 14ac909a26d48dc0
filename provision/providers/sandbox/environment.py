"""Can this machine run the sandbox? Checked before anything is changed, each gap named with its fix."""
from __future__ import annotations

import os
from pathlib import Path

from provision.errors import SandboxError
from provision.providers.sandbox import commands

NAMESPACES = ("net", "uts", "ipc", "pid", "mnt")
UNSUITABLE_FS = {"overlay": "overlayfs cannot use a directory on another overlay as its layers",
                 "nfs": "overlayfs layers on NFS are unreliable", "nfs4": "overlayfs layers on NFS are unreliable"}


def check(state_root: Path) -> None:
    """Raise SandboxError for the first thing that stops the sandbox: root, binaries, namespaces, overlayfs."""
    if os.geteuid() != 0:
        raise SandboxError("the sandbox provider needs root (network namespaces, mounts, a bridge)",
                           hint="run as root, e.g. `sudo provision up SPEC`")
    missing = commands.missing_binaries()
    if missing:
        packages = sorted({commands.REQUIRED_BINARIES[b] for b in missing})
        raise SandboxError(f"the sandbox needs {', '.join(missing)}, not found on PATH",
                           hint=f"install them with `apt-get install {' '.join(packages)}`")
    absent = [kind for kind in NAMESPACES if not Path(f"/proc/self/ns/{kind}").exists()]
    if absent or not commands.succeeds(["unshare", "--net", "--uts", "--ipc", "--pid", "--mount", "--fork",
                                        "true"], timeout=30):
        raise SandboxError("this kernel or container does not allow new namespaces"
                           f"{' (missing: ' + ', '.join(absent) + ')' if absent else ''}",
                           hint="run on a VM or host where root may create namespaces (not an unprivileged "
                                "container)")
    if "overlay" not in filesystems():
        raise SandboxError("this kernel has no overlayfs", hint="load the overlay module (modprobe overlay) "
                           "or use a kernel with CONFIG_OVERLAY_FS")
    check_state_filesystem(state_root)


def check_state_filesystem(state_root: Path, mountinfo: str | None = None) -> None:
    """Node layers live under the state root: overlayfs cannot stack them on an overlay (or NFS)."""
    fstype = filesystem_of(state_root, mountinfo)
    if fstype in UNSUITABLE_FS:
        raise SandboxError(f"the state directory {state_root} is on {fstype}: {UNSUITABLE_FS[fstype]}",
                           hint="set PROVISION_STATE_DIR (or state_dir in the spec) to a directory on ext4, xfs "
                                "or tmpfs")


def filesystems() -> set[str]:
    """File system types the kernel supports."""
    return {line.split()[-1] for line in Path("/proc/filesystems").read_text().splitlines() if line.strip()}


def filesystem_of(path: Path, mountinfo: str | None = None) -> str:
    """The type of the file system holding path (or its nearest existing parent)."""
    path = path.resolve()
    while not path.exists():
        path = path.parent
    if mountinfo is None:
        mountinfo = Path("/proc/self/mountinfo").read_text()
    best, best_type = "", ""
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        mount_point = unescape(left.split()[4])
        if _contains(mount_point, str(path)) and len(mount_point) >= len(best):
            best, best_type = mount_point, right.split()[0]
    return best_type


def unescape(field: str) -> str:
    """Undo mountinfo's octal escapes (\\040 for a space, ...)."""
    return field.encode().decode("unicode_escape") if "\\" in field else field


def _contains(mount_point: str, path: str) -> bool:
    """Whether path lies at or under mount_point."""
    return path == mount_point or path.startswith(mount_point.rstrip("/") + "/")


def mount_points() -> list[str]:
    """Every mount point in this machine's mount namespace."""
    return [unescape(line.split()[4]) for line in Path("/proc/self/mountinfo").read_text().splitlines()]


def is_under(point: str, directory: Path) -> bool:
    """Whether a mount point lies at or under a directory."""
    base = str(directory.resolve()) if directory.exists() else str(directory)
    return point == base or point.startswith(base.rstrip("/") + "/")


def mounted_under(directory: Path) -> list[str]:
    """Mount points at or below a directory, deepest first (the order to unmount them in)."""
    return sorted((p for p in mount_points() if is_under(p, directory)), key=len, reverse=True)
