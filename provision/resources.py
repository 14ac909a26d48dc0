"""Find the data files that ship with the package (playbooks, templates), from any directory."""
from __future__ import annotations

from importlib import resources
from pathlib import Path

from provision.errors import StateError


def data_dir(name: str) -> Path:
    """The installed copy inside the wheel, or the repository's top-level folder in a source checkout."""
    packaged = Path(str(resources.files("provision") / name))
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parent.parent / name
    if checkout.is_dir():
        return checkout
    raise StateError(f"data folder '{name}' is missing from the installation",
                     hint="reinstall gpu-provision (pip install --force-reinstall gpu-provision)")


def playbooks_dir() -> Path:
    """playbooks/ with site.yml and roles/."""
    return data_dir("playbooks")


def templates_dir() -> Path:
    """templates/ with the Jinja2 templates."""
    return data_dir("templates")
