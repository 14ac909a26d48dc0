"""The aws provider's Provider: EC2 instances for every node group, all state in aws.json, all resources tagged
with the cluster's name and id, the name claimed in the region first."""
from __future__ import annotations

from provision.adaptors.aws import Aws
from provision.providers.aws import create as up
from provision.providers.aws import cost, environment, instances, nodes, plan, retire, teardown
from provision.providers.aws.facts import Facts
from provision.providers.aws.ledger import Ledger
from provision.providers.base import Plan, Provider, Teardown
from provision.records import ClusterInfo, NodeInfo, Progress, silent
from provision.spec.model import ClusterSpec
from provision.spec.topology import group_names
from provision.state import ClusterState


class AwsProvider(Provider):
    """EC2 instances for every node group; all state in the cluster's aws.json, all resources tagged."""

    name = "aws"

    def __init__(self, spec: ClusterSpec, state: ClusterState, aws: Aws | None = None) -> None:
        super().__init__(spec, state)
        self.aws = aws or Aws(spec.provider.region)
        self._facts: Facts | None = None

    def check_environment(self) -> None:
        """Read-only checks against the account (the name, offerings, EFA, image, quota...) before anything is
        created."""
        ledger = Ledger(self.state)
        self._facts = environment.check(self.aws, self.spec, self._pending(ledger), ledger.facts.get("image"),
                                        fresh=ledger.is_empty(), cluster_id=ledger.cluster_id)

    def plan(self) -> Plan:
        """The resources `create` would make and an hourly estimate; no API call."""
        return plan.build(self.spec)

    def create(self, progress: Progress = silent) -> ClusterInfo:
        """Make whatever does not exist yet (checking the environment first) and return the cluster."""
        if self._facts is None:
            self.check_environment()
        return up.create(self.aws, self.spec, self.state, self._facts, progress)

    def describe(self) -> ClusterInfo:
        """Recorded instances with their live state and addresses (one filtered describe)."""
        ledger = Ledger(self.state)
        alive = instances.live(self.aws, ledger.owner) if ledger.instances else {}
        return nodes.cluster_info(self.spec, self.state, ledger, alive)

    def retire(self, names: list[str], progress: Progress = silent) -> list[str]:
        """Terminate exactly the recorded instances of these nodes (each checked live to carry the cluster's tags),
        wait until they are gone, and forget them in aws.json and known_hosts; other nodes and shared resources stay."""
        return retire.retire(self.aws, Ledger(self.state), names, self.state.known_hosts_path, progress)

    def hourly_cost(self, nodes: list[NodeInfo]) -> float | None:
        """What these nodes cost per hour from the price table, as `plan` prices them; no API call."""
        return cost.hourly(self.spec, nodes)

    def destroy(self, progress: Progress = silent, *, orphans: bool = False) -> Teardown:
        """Remove everything carrying the cluster's id in reverse order, audit by tag, release the name's claim last;
        idempotent. `orphans`: select by the name alone (the only sweep by name)."""
        return teardown.destroy(self.aws, Ledger(self.state), self.spec.name, progress, orphans=orphans)

    def _pending(self, ledger: Ledger) -> dict[str, int]:
        """group -> nodes without a recorded instance (what quota and reservations must still cover)."""
        return {g.name: sum(1 for n in group_names(g) if n not in ledger.instances) for g in self.spec.node_groups}
