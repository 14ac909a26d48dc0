"""The provider interface: every way of getting nodes implements these methods.

A provider's spec section and its checks of a spec live beside its implementation (config.py, validation.py) and
are listed in providers/registry.py.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from provision.records import ClusterInfo, NodeInfo, Progress, silent
from provision.spec.model import ClusterSpec
from provision.spec.topology import planned_nodes
from provision.state import ClusterState

__all__ = ["Plan", "PlanItem", "Progress", "Provider", "Teardown", "silent"]  # Progress: from provision.records


@dataclass
class PlanItem:
    """One resource a provider would create."""

    kind: str
    name: str
    detail: str = ""
    hourly_cost_usd: float | None = None


@dataclass
class Plan:
    """What `create` would do, computed without changing anything."""

    items: list[PlanItem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def hourly_cost_usd(self) -> float | None:
        """Sum of known hourly costs, or None when no item has one."""
        costs = [i.hourly_cost_usd for i in self.items if i.hourly_cost_usd is not None]
        return round(sum(costs), 4) if costs else None


@dataclass
class Teardown:
    """What `destroy` removed and what the post-teardown audit still found."""

    removed: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)


class Provider(ABC):
    """Creates, describes and destroys a cluster's nodes; the rest of the tool sees only ClusterInfo."""

    name: str = ""

    def __init__(self, spec: ClusterSpec, state: ClusterState) -> None:
        self.spec = spec
        self.state = state

    def check_environment(self) -> None:
        """Raise a ProviderError if this machine or account cannot run the provider (before any change)."""

    def plan(self) -> Plan:
        """The resources `create` would make, without making them."""
        return Plan()

    @abstractmethod
    def create(self, progress: Progress = silent) -> ClusterInfo:
        """Make every node exist and answer SSH; idempotent: a second call creates nothing new."""

    @abstractmethod
    def describe(self) -> ClusterInfo:
        """The cluster as it is now, from recorded state and live checks; changes nothing."""

    def planned(self) -> ClusterInfo:
        """The cluster as `describe` would show it once `create` ran, from the spec and what this provider recorded
        (a subnet it chose, the key it made), with no live check and no call out: a node whose address only its
        creation decides has none. `plan` and `up` compare this with what the cluster has."""
        key = self.spec.ssh.key_path.expanduser() if self.spec.ssh.key_path else self.state.ssh_key_path
        return ClusterInfo(name=self.spec.name, provider=self.spec.provider.type, nodes=tuple(planned_nodes(self.spec)),
                           ssh_user=self.spec.provider.ssh_user(self.spec.ssh.user), ssh_key_path=key,
                           known_hosts_path=self.state.known_hosts_path, sandbox=self.spec.provider.simulated)

    def retire(self, names: list[str], progress: Progress = silent) -> list[str]:
        """Remove these nodes only (a shrink: the lifecycle drained them and took them out of Slurm first), drop
        them from the provider's state, and return what was removed; names it no longer has are ignored
        (idempotent). Every other node and shared resource is left as it is."""
        raise NotImplementedError(f"the {self.name} provider cannot remove single nodes")

    def hourly_cost(self, nodes: list[NodeInfo]) -> float | None:
        """What these nodes cost per hour (USD), or None where the provider has no prices (sandbox, static)."""
        return None

    @abstractmethod
    def destroy(self, progress: Progress = silent, *, orphans: bool = False) -> Teardown:
        """Remove everything `create` made, audit that nothing is left; idempotent.

        `orphans`: also remove what carries the cluster's name though this machine's state records none of
        it (a lost state directory). Providers that find only what they recorded ignore it."""
