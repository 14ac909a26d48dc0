"""The Debian releases a sandbox node can run: the spec's `provider.os` and the suite debootstrap builds."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Release:
    """One node OS the sandbox can build: the spec's name for it, Debian's suite, and the Slurm it ships."""

    name: str
    suite: str
    title: str
    slurm_series: str


RELEASES = {r.name: r for r in (Release("debian-12", "bookworm", "Debian 12", "22.05"),
                                 Release("debian-13", "trixie", "Debian 13", "24.11"))}
OsName = Literal["debian-12", "debian-13"]
DEFAULT: OsName = "debian-13"


def release(name: str) -> Release:
    """The release named in a spec or a record (validated there; an unknown name is a programming error)."""
    return RELEASES[name]
