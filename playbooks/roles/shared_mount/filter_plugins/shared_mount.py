"""Filters of the shared_mount role: the systemd drop-ins that order units after the mount, as config_files entries."""
from __future__ import annotations

DROPIN_NAME = "gpu-provision-shared-mount.conf"
SYSTEMD_DIR = "/etc/systemd/system"


def shared_mount_dropin(unit: str) -> str:
    """Where the drop-in of one unit goes (slurmd.service -> /etc/systemd/system/slurmd.service.d/...conf)."""
    if not isinstance(unit, str) or not unit or "/" in unit or unit in (".", ".."):
        raise ValueError(f"shared_mount_before_units: {unit!r} is not a unit name (e.g. slurmd.service)")
    return f"{SYSTEMD_DIR}/{unit}.d/{DROPIN_NAME}"


def shared_mount_dropin_files(units: list) -> list[dict]:
    """One config_files entry per unit: the drop-in rendered from requires-mount.conf.j2, root-owned, 0644."""
    return [{"dest": shared_mount_dropin(unit), "template": "requires-mount.conf.j2", "mode": "0644",
             "owner": "root", "group": "root"} for unit in units]


class FilterModule:
    def filters(self):
        return {"shared_mount_dropin": shared_mount_dropin, "shared_mount_dropin_files": shared_mount_dropin_files}
