"""What the node image adds to the base: the packages the roles install and the service accounts they create, read
from the roles (the one place they are named). The image cache keys and builds the node image from it; rootfs
installs it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from provision.errors import SandboxError
from provision.resources import playbooks_dir

# The roles' own package lists (role, file in the role, variable, installed with apt's recommends). The node image
# carries them so that a sandbox node's deploy finds them installed; the roles still install them on real hosts.
ROLE_PACKAGE_LISTS = (
    ("common", "defaults/main.yml", "common_packages", True),
    ("munge", "defaults/main.yml", "munge_packages", True),
    ("slurm", "defaults/main.yml", "slurm_client_packages", True),
    ("slurm", "defaults/main.yml", "slurm_pmix_packages", True),
    ("slurm", "defaults/main.yml", "slurm_controller_packages", True),
    ("slurm", "defaults/main.yml", "slurm_accounting_packages", True),
    ("slurm", "defaults/main.yml", "slurm_compute_packages", True),
    ("glusterfs_server", "defaults/main.yml", "glusterfs_server_packages", True),
    ("shared_mount", "vars/glusterfs.yml", "_shared_mount_packages", True),
    ("mpi", "defaults/main.yml", "mpi_packages", False),
    ("mpi", "defaults/main.yml", "mpi_compiler_packages", False),
    ("certify", "defaults/main.yml", "certify_packages", False),
)
ACCOUNTS = ("common", "defaults/main.yml", "common_service_accounts")


@dataclass(frozen=True)
class NodePackages:
    """What a node image adds to the base: the roles' packages, and first the service accounts the common role
    creates with fixed IDs (so the files those packages create belong to the same UIDs as on a real host)."""

    with_recommends: tuple[str, ...]
    without_recommends: tuple[str, ...]
    accounts: tuple[tuple[str, int, str], ...]  # (name, uid = gid, home)


def role_packages(playbooks: Path | None = None) -> NodePackages:
    """The package lists and service accounts, read from the roles' defaults (the one place they are named)."""
    roles = (playbooks or playbooks_dir()) / "roles"
    lists: dict[bool, list[str]] = {True: [], False: []}
    for role, name, variable, recommends in ROLE_PACKAGE_LISTS:
        for package in _role_value(roles, role, name, variable):
            if not isinstance(package, str) or "{" in package:
                raise SandboxError(f"{role}/{name}: {variable} holds {package!r}; the sandbox's node image needs "
                                   "plain package names", hint="name the packages literally in the role's file")
            if package not in lists[True] + lists[False]:
                lists[recommends].append(package)
    accounts = tuple((a["name"], int(a["uid"]), a["home"]) for a in _role_value(roles, *ACCOUNTS))
    return NodePackages(tuple(lists[True]), tuple(lists[False]), accounts)


def _role_value(roles: Path, role: str, name: str, variable: str) -> list:
    """A list variable from a role's YAML file."""
    path = roles / role / name
    value = (yaml.safe_load(path.read_text()) or {}).get(variable) if path.is_file() else None
    if not isinstance(value, list):
        raise SandboxError(f"{path}: {variable} is not a list", hint="the sandbox's node image reads it from there")
    return value
