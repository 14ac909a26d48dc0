"""The static provider's spec section: hosts that exist, each with its address in the node groups."""
from __future__ import annotations

from ipaddress import IPv4Network
from typing import ClassVar, Literal

from pydantic import Field

from provision.spec.section import ProviderSection


class StaticConfig(ProviderSection):
    """Existing hosts (on-prem, bare metal) listed in the node groups with their addresses."""

    type: Literal["static"]
    subnet: IPv4Network | None = Field(None, description="if set, every address must lie in it")

    addresses: ClassVar[Literal["declared", "assigned"]] = "declared"

    @property
    def address_subnet(self) -> IPv4Network | None:
        """Every address must lie in the declared subnet, when there is one."""
        return self.subnet
