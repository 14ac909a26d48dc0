"""What the read-only checks learn about the account before anything is created, for creating to use."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TypeFacts:
    """What DescribeInstanceTypes says about one type, as far as launching needs it."""

    name: str
    vcpus: int
    efa_supported: bool
    max_efa: int
    cards: tuple[tuple[int, tuple[str, ...]], ...]  # (network card index, interface types it takes)
    cluster_placement: bool
    architectures: tuple[str, ...]

    @classmethod
    def from_api(cls, info: dict) -> TypeFacts:
        """Build from one InstanceTypes entry."""
        network = info.get("NetworkInfo") or {}
        cards = tuple((c["NetworkCardIndex"], tuple(c.get("InterfaceTypes") or ()))
                      for c in network.get("NetworkCards") or [])
        return cls(name=info["InstanceType"], vcpus=info.get("VCpuInfo", {}).get("DefaultVCpus", 0),
                   efa_supported=bool(network.get("EfaSupported")),
                   max_efa=(network.get("EfaInfo") or {}).get("MaximumEfaInterfaces", 0),
                   cards=tuple(sorted(cards)),
                   cluster_placement="cluster" in (info.get("PlacementGroupInfo") or {}).get("SupportedStrategies", []),
                   architectures=tuple((info.get("ProcessorInfo") or {}).get("SupportedArchitectures", [])))


@dataclass(frozen=True)
class Image:
    """The machine image every node boots."""

    id: str
    root_device: str
    architecture: str
    name: str = ""
    root_size_gib: int = 0  # the root snapshot's size: the root volume cannot be smaller


@dataclass
class Facts:
    """Everything the checks learned that creating needs."""

    types: dict[str, TypeFacts]
    image: Image
    reservations: dict[str, str] = field(default_factory=dict)  # id -> ReservationType (default, capacity-block)
    notes: list[str] = field(default_factory=list)  # what could not be checked, and why
