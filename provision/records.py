"""Typed records passed between layers: provider -> ClusterInfo/NodeInfo -> inventory, preflight, certify."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Progress = Callable[[str], None]  # receives one human-readable status line at a time


def silent(_: str) -> None:
    """A progress sink that drops everything (tests, --quiet)."""


NodeState = Literal["planned", "pending", "running", "stopped", "absent", "unknown"]


class NodeInfo(BaseModel):
    """One node as the rest of the tool sees it, whatever provider made it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    group: str
    roles: tuple[str, ...]
    address: str | None = None  # None until the provider knows it (aws before launch)
    ssh_port: int = 22
    state: NodeState = "planned"
    gpu_model: str | None = None
    gpu_count: int = 0
    partition: str | None = None
    default_partition: bool = False
    cpus: int | None = None
    real_memory_mb: int | None = None
    interconnect: str = "none"
    interconnect_nics: int = 0
    provider_id: str | None = None  # instance id, sandbox pid, ...
    extra: dict[str, str] = Field(default_factory=dict)

    def has_role(self, role: str) -> bool:
        """Whether the node carries a role (controller, login, compute, storage)."""
        return role in self.roles


class ClusterInfo(BaseModel):
    """A cluster's nodes plus how to reach them; the inventory is rendered from this."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    provider: str
    nodes: tuple[NodeInfo, ...]
    ssh_user: str = "root"
    ssh_key_path: Path | None = None
    known_hosts_path: Path | None = None
    sandbox: bool = False
    vars: dict[str, str] = Field(default_factory=dict)  # provider facts for roles (apt proxy URL, ...)

    def with_role(self, role: str) -> list[NodeInfo]:
        """Nodes carrying a role, in spec order."""
        return [n for n in self.nodes if n.has_role(role)]

    def node(self, name: str) -> NodeInfo:
        """Look a node up by name; KeyError if absent."""
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    @property
    def controller(self) -> NodeInfo:
        """The one controller node (the validator guarantees exactly one)."""
        return self.with_role("controller")[0]
