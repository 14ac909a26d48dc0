"""The sandbox provider's spec section and its defaults: a private subnet with nodes from .10, reached as root."""
from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network
from typing import ClassVar, Literal

from pydantic import Field

from provision.providers.sandbox.releases import DEFAULT, OsName
from provision.spec.section import ProviderSection
from provision.spec.shapes import BridgeName, Url

FIRST_HOST = 10  # .1 is the bridge; nodes start at .10


class SandboxConfig(ProviderSection):
    """Simulated nodes on this machine: namespaces, overlay roots, a private bridge."""

    type: Literal["sandbox"]
    subnet: IPv4Network = Field(IPv4Network("10.99.0.0/24"), description="private subnet for the sandbox bridge")
    bridge: BridgeName | None = Field(None, description="bridge name; default derived from the cluster name")
    mirror: Url | None = Field(None, description="Debian mirror URL; default: the one in this machine's apt sources")
    os: OsName = Field(DEFAULT, description="the nodes' OS: debian-13 (trixie, Slurm 24.11) or debian-12 (bookworm, "
                                            "Slurm 22.05); one base image is built and cached per release")

    simulated: ClassVar[bool] = True

    def ssh_user(self, configured: str) -> str:
        """Sandbox nodes are reached as root, whatever ssh.user says (validation warns)."""
        return "root"

    def node_address(self, index: int, declared: str | None) -> str | None:
        """Deterministic: the index-th address from .10 of the subnet."""
        return node_address(self.subnet, index)


def node_address(subnet: IPv4Network, index: int) -> str:
    """The deterministic sandbox address of the index-th node (0-based)."""
    return str(IPv4Address(int(subnet.network_address) + FIRST_HOST + index))


def capacity(subnet: IPv4Network) -> int:
    """How many nodes fit in a sandbox subnet after the bridge and reserved low addresses."""
    return max(0, subnet.num_addresses - FIRST_HOST - 1)
