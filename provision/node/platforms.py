"""The operating systems gpu-provision supports, read from their one home: the platform role.

`playbooks/roles/platform/vars/main.yml` lists the releases (name, release, os-release ID, tested or not) and each
release's vars file (`vars/<Name>-<major>.yml`) says which Slurm series it ships. The roles refuse an OS with those
files (the platform role, a meta dependency of every role); preflight refuses the same OS with this module, before
anything is installed, in the same words.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from provision.errors import StateError
from provision.resources import playbooks_dir

NO_OS_RELEASE = "an OS without /etc/os-release"


@dataclass(frozen=True)
class Platform:
    """One supported OS release: the platform role's entry for it and what its vars file says."""

    name: str  # Debian
    release: str  # "13", "24.04": os-release VERSION_ID
    os_id: str  # os-release ID: debian, ubuntu
    codename: str
    tested: bool  # deployed by `make test` on the sandbox; untested ones are written but have never run
    slurm_series: str  # the Slurm its archive ships: "24.11"
    package_manager: str  # apt

    @property
    def title(self) -> str:
        """"Debian 13", "Ubuntu 24.04"."""
        return f"{self.name} {self.release}"

    @property
    def key(self) -> str:
        """The vars file's name without .yml: "Debian-13", "Ubuntu-24"."""
        return f"{self.name}-{self.release.split('.')[0]}"


@dataclass(frozen=True)
class NodeOS:
    """What a node's os-release says; empty strings for what it does not say."""

    os_id: str = ""
    version_id: str = ""
    name: str = ""
    pretty: str = ""

    @property
    def title(self) -> str:
        """NAME (else ID) and VERSION_ID ("Rocky Linux 9.4"), else PRETTY_NAME; the platform role words it the same."""
        return f"{self.name or self.os_id} {self.version_id}".strip() or self.pretty or NO_OS_RELEASE


def role_dir(playbooks: Path | None = None) -> Path:
    """The platform role's folder."""
    return (playbooks or playbooks_dir()) / "roles" / "platform"


@lru_cache(maxsize=8)
def supported(playbooks: Path | None = None) -> tuple[Platform, ...]:
    """Every supported release, in the role's order (read once per folder)."""
    vars_dir = role_dir(playbooks) / "vars"
    entries = _yaml(vars_dir / "main.yml").get("platform_supported")
    if not isinstance(entries, list) or not entries:
        raise StateError(f"{vars_dir / 'main.yml'}: platform_supported is missing or empty",
                         hint="reinstall gpu-provision; the platform role lists the supported OS there")
    return tuple(_platform(vars_dir, entry) for entry in entries)


def _platform(vars_dir: Path, entry: dict) -> Platform:
    """One list entry joined with its release's vars file."""
    name, release = str(entry["name"]), str(entry["release"])
    values = _yaml(vars_dir / f"{name}-{release.split('.')[0]}.yml")
    return Platform(name=name, release=release, os_id=str(entry["id"]), codename=str(entry["codename"]),
                    tested=bool(entry["tested"]), slurm_series=str(values["platform_slurm_series"]),
                    package_manager=str(values["platform_package_manager"]))


def _yaml(path: Path) -> dict:
    """A vars file of the role as a mapping."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise StateError(f"{path}: cannot be read ({exc})", hint="reinstall gpu-provision") from exc
    if not isinstance(data, dict):
        raise StateError(f"{path}: not a mapping of variables", hint="reinstall gpu-provision")
    return data


def match(node: NodeOS, platforms: tuple[Platform, ...] | None = None) -> Platform | None:
    """The supported release a node runs (os-release ID and VERSION_ID, exactly), or None."""
    return next((p for p in platforms or supported() if (p.os_id, p.release) == (node.os_id, node.version_id)), None)


def supported_text(platforms: tuple[Platform, ...] | None = None) -> str:
    """"gpu-provision supports Debian 12, Debian 13 (tested); Ubuntu 22.04, Ubuntu 24.04 (untested)"."""
    platforms = platforms or supported()
    groups = [(label, [p.title for p in platforms if p.tested == tested])
              for label, tested in (("tested", True), ("untested", False))]
    return "gpu-provision supports " + "; ".join(f"{', '.join(titles)} ({label})" for label, titles in groups if titles)


def describe(node: NodeOS, platforms: tuple[Platform, ...] | None = None) -> str:
    """A node's OS for a report: "Debian 13 (trixie)" when supported, else what its os-release says."""
    platform = match(node, platforms)
    return f"{platform.title} ({platform.codename})" if platform else node.title


def refusal(host: str, node: NodeOS, platforms: tuple[Platform, ...] | None = None) -> str:
    """Why a node is refused, word for word what the platform role says."""
    return f"{supported_text(platforms)}; {host} runs {node.title}"


def parse_os_release(text: str) -> NodeOS:
    """The fields of an os-release file (os-release(5): KEY=value, the value optionally quoted)."""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and not key.startswith("#"):
            values[key] = value.strip().strip("\"'")
    return NodeOS(values.get("ID", ""), values.get("VERSION_ID", ""), values.get("NAME", ""),
                  values.get("PRETTY_NAME", ""))
