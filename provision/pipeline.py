"""The stages `up` runs after the nodes exist, in order; each is a library call."""
from __future__ import annotations

from provision.lifecycle import StageRunner


def later_stages(quiet: bool = False) -> dict[str, StageRunner]:
    """Stage name -> runner, in the order `up` runs them."""
    return {}
