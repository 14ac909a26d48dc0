"""What the node image adds to the base: what each role declares a prebuilt image may carry, in its own
meta/image.yml (package lists and service accounts, named by the role's variables), read from the role's files.
The image cache keys and builds the node image from it; rootfs installs it. Real hosts get the same from the
roles' tasks.

A role's meta/image.yml:

    packages:                  # lists of Debian package names the image installs
      - {from: slurm_client_packages, recommends: true}        # a variable of defaults/main.yml ...
      - {from: _shared_mount_packages, file: vars/glusterfs.yml, recommends: true}   # ... or of a vars file
    accounts:                  # lists of {name, uid, home}: created first, with these IDs
      - {from: common_service_accounts}
    not_in_image:              # the role's other package lists, each with the reason it stays out
      - {from: nccl_packages, why: GPU nodes only; sandbox nodes have no GPU}

`recommends` is apt's, as the role's tasks install the list. Every list of packages a role names (a variable
ending in `_packages`) is in `packages` or in `not_in_image`; tests/unit/roles/test_image_meta.py checks it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from provision.errors import SandboxError
from provision.resources import playbooks_dir

IMAGE_META = Path("meta/image.yml")


class RoleList(BaseModel):
    """A list variable of the role: its name and the role file that sets it."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    variable: str = Field(alias="from", pattern=r"^_?[a-z][a-z0-9_]*$")
    file: str = Field("defaults/main.yml", pattern=r"^(defaults/main|vars(/[a-zA-Z0-9_-][a-zA-Z0-9_.-]*)+)\.yml$")


class PackageList(RoleList):
    """A list of package names the image installs."""

    recommends: bool


class LeftOut(RoleList):
    """A list of package names the image does not carry, and why."""

    why: str = Field(min_length=1)


class ImageMeta(BaseModel):
    """One role's meta/image.yml."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    packages: tuple[PackageList, ...] = ()
    accounts: tuple[RoleList, ...] = ()
    not_in_image: tuple[LeftOut, ...] = ()


@dataclass(frozen=True)
class NodePackages:
    """What a node image adds to the base: the roles' packages, and first the service accounts the common role
    creates with fixed IDs (so the files those packages create belong to the same UIDs as on a real host).
    Sorted, so the same packages give the same image (and image key) in whatever order the roles are read."""

    with_recommends: tuple[str, ...]
    without_recommends: tuple[str, ...]
    accounts: tuple[tuple[str, int, str], ...]  # (name, uid = gid, home)


def image_metas(playbooks: Path | None = None) -> dict[str, ImageMeta]:
    """Every role's meta/image.yml, by role name (roles without one add nothing to the image)."""
    roles = (playbooks or playbooks_dir()) / "roles"
    return {path.parents[1].name: _read_meta(path) for path in sorted(roles.glob(f"*/{IMAGE_META}"))}


def role_packages(playbooks: Path | None = None) -> NodePackages:
    """The package lists and service accounts the roles declare for a prebuilt image, read from the roles' files."""
    roles = (playbooks or playbooks_dir()) / "roles"
    lists: dict[bool, set[str]] = {True: set(), False: set()}
    accounts: dict[str, tuple[str, int, str]] = {}
    for role, meta in image_metas(playbooks).items():
        for declared in meta.packages:
            lists[declared.recommends].update(package_names(roles, role, declared))
        for declared in meta.accounts:
            accounts.update((a[0], a) for a in service_accounts(roles, role, declared))
    return NodePackages(tuple(sorted(lists[True])), tuple(sorted(lists[False] - lists[True])),
                        tuple(sorted(accounts.values())))


def package_names(roles: Path, role: str, declared: RoleList) -> list[str]:
    """A declared package list's names; refused unless every one is a literal package name."""
    names = role_value(roles, role, declared)
    for package in names:
        if not isinstance(package, str) or "{" in package:
            raise SandboxError(f"{role}/{declared.file}: {declared.variable} holds {package!r}; a prebuilt node "
                               "image needs plain package names",
                               hint=f"name the packages literally there, or move it to not_in_image in "
                                    f"{role}/{IMAGE_META}")
    return names


def service_accounts(roles: Path, role: str, declared: RoleList) -> list[tuple[str, int, str]]:
    """A declared list of service accounts as (name, uid, home)."""
    found = []
    for account in role_value(roles, role, declared):
        if not (isinstance(account, dict) and isinstance(account.get("name"), str)
                and isinstance(account.get("uid"), int) and isinstance(account.get("home"), str)):
            raise SandboxError(f"{role}/{declared.file}: {declared.variable} holds {account!r}",
                               hint="each account is a mapping with name, uid (a number) and home")
        found.append((account["name"], account["uid"], account["home"]))
    return found


def role_value(roles: Path, role: str, declared: RoleList) -> list:
    """A list variable from one of a role's YAML files."""
    path = roles / role / declared.file
    value = (yaml.safe_load(path.read_text()) or {}).get(declared.variable) if path.is_file() else None
    if not isinstance(value, list):
        raise SandboxError(f"{role}/{declared.file}: {declared.variable} is not a list",
                           hint=f"{role}/{IMAGE_META} names it; set it there as a list, or fix the declaration")
    return value


def _read_meta(path: Path) -> ImageMeta:
    """A role's meta/image.yml, its shape checked."""
    label = f"{path.parents[1].name}/{IMAGE_META}"
    try:
        return ImageMeta.model_validate(yaml.safe_load(path.read_text()) or {})
    except (yaml.YAMLError, ValidationError) as exc:
        first = exc.errors()[0] if isinstance(exc, ValidationError) else None
        where = ".".join(str(part) for part in first["loc"]) + ": " + first["msg"] if first else str(exc)
        raise SandboxError(f"{label}: {where}", hint="see provision/providers/sandbox/packages.py for its shape") \
            from exc
