"""The base of every spec section, and the interface of the `provider:` section that each provider package fills in.

spec/ knows this interface and the union of the members (providers/registry.py lists them), never a member: what a
provider's section holds, its defaults and what generic validation must know about it are the provider's own.
"""
from __future__ import annotations

from ipaddress import IPv4Network
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Base for every spec section: unknown keys are errors, values are immutable after load."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ProviderSection(StrictModel):
    """The spec's `provider:` section; each provider package defines one with `type: Literal["<name>"]`."""

    type: str
    # Whether node groups list their addresses ("declared") or the provider assigns them ("assigned").
    addresses: ClassVar[Literal["declared", "assigned"]] = "assigned"
    efa: ClassVar[bool] = False  # nodes can have EFA interfaces
    checks_filesystem_server: ClassVar[bool] = False  # its own checks judge filesystem.server (it may create one)
    simulated: ClassVar[bool] = False  # nodes are simulated on this machine (stand-in GPU device files)

    @property
    def address_subnet(self) -> IPv4Network | None:
        """The network every declared address must lie in, if the section names one."""
        return None

    def ssh_user(self, configured: str) -> str:
        """The user nodes are reached as, given the spec's ssh.user."""
        return configured

    def node_address(self, index: int, declared: str | None) -> str | None:
        """The planned address of the index-th node of the cluster (0-based), given what its group declares."""
        return declared
