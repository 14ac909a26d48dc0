"""Existing hosts listed in the spec: nothing to create, only to describe."""
from __future__ import annotations

from provision.providers.base import Plan, PlanItem, Provider, Teardown
from provision.records import ClusterInfo, Progress, silent
from provision.remote.sshkeys import ensure_key_pair
from provision.spec.topology import planned_nodes


class StaticProvider(Provider):
    """On-prem hosts: the spec already names every node and address."""

    name = "static"

    def plan(self) -> Plan:
        """Nothing is created; list the hosts that will be used."""
        return Plan([PlanItem("host", n.name, n.address or "") for n in planned_nodes(self.spec)],
                    ["static hosts are used as they are; nothing is created"])

    def create(self, progress: Progress = silent) -> ClusterInfo:
        """Record the hosts; the cluster key is generated unless the spec names one."""
        self.state.ensure("ssh")  # made 0700, or checked to be this user's (a planted key is refused, not used)
        if self.spec.ssh.key_path is None:
            ensure_key_pair(self.state.ssh_key_path, f"gpu-provision-{self.spec.name}")
        self.state.known_hosts_path.touch(mode=0o600, exist_ok=True)
        progress(f"using {len(planned_nodes(self.spec))} static hosts")
        return self.describe()

    def describe(self) -> ClusterInfo:
        """The hosts from the spec; reachability is preflight's job."""
        key = self.spec.ssh.key_path.expanduser() if self.spec.ssh.key_path else self.state.ssh_key_path
        nodes = tuple(n.model_copy(update={"state": "unknown"}) for n in planned_nodes(self.spec))
        return ClusterInfo(name=self.spec.name, provider=self.name, nodes=nodes, ssh_user=self.spec.ssh.user,
                           ssh_key_path=key, known_hosts_path=self.state.known_hosts_path)

    def retire(self, names: list[str], progress: Progress = silent) -> list[str]:
        """A static host leaving the cluster is not ours to remove: `up` stopped and disabled its slurmd; nothing else
        on the host is touched, and there is no record to change (the spec no longer names it)."""
        if names:
            progress(f"static host(s) {', '.join(names)} left the cluster (slurmd stopped and disabled; the hosts "
                     "are otherwise left as they are)")
        return []

    def destroy(self, progress: Progress = silent, *, orphans: bool = False) -> Teardown:
        """Static hosts are not ours to remove; forget the local state only."""
        progress("static hosts are left running; local state kept")
        return Teardown(removed=[], leftovers=[])
