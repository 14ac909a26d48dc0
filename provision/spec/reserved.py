"""Names that Slurm or Ansible read as keywords: a host or a partition named so would change what the files mean.

Slurm reads `NodeName=DEFAULT` and `PartitionName=DEFAULT` (in any case) as the defaults of the lines after them,
and `Nodes=ALL` as every node; Ansible has the groups `all` and `ungrouped` and the implicit host `localhost`.
"""
from __future__ import annotations

from provision.spec import topology
from provision.spec.findings import Finding
from provision.spec.model import ClusterSpec, NodeGroup

HOST_NAMES = {
    "default": "Slurm reads NodeName=DEFAULT as the defaults of the node lines after it",
    "all": "Ansible's group of every host, and Slurm's Nodes=ALL",
    "ungrouped": "Ansible's group of the hosts in no other group",
    "localhost": "Ansible's implicit host, the machine it runs on",
}
PARTITION_NAMES = {
    "default": "Slurm reads PartitionName=DEFAULT as the defaults of the partition lines after it",
    "gp-active": "the hidden partition of the active checks (health.active)",
}


def check_reserved_names(spec: ClusterSpec) -> list[Finding]:
    """No host and no partition takes a name Slurm or Ansible reserves (compared in lower case)."""
    names = topology.names_per_group(spec) or [[] for _ in spec.node_groups]
    out = []
    for i, (group, hosts) in enumerate(zip(spec.node_groups, names)):
        out += [_host_finding(i, name) for name in hosts if name.islower() and name in HOST_NAMES]
        out += _partition_findings(i, group)
    return out


def _host_finding(index: int, name: str) -> Finding:
    """A reserved host name, with why it is reserved."""
    return Finding("error", f"node_groups[{index}].hosts", f"'{name}' is a reserved name ({HOST_NAMES[name]})",
                   f"give the host another name, such as {name}01")


def _partition_findings(index: int, group: NodeGroup) -> list[Finding]:
    """The partition a compute group makes (its partition, else its name) must not be a reserved one."""
    if "compute" not in group.roles:
        return []
    partition = group.partition or group.name
    why = PARTITION_NAMES.get(partition.lower())
    if why is None:
        return []
    if group.partition:
        return [Finding("error", f"node_groups[{index}].partition", f"'{partition}' is a reserved name ({why})",
                        "name the partition otherwise, such as batch")]
    return [Finding("error", f"node_groups[{index}].name", f"'{partition}' is a reserved partition name, and a "
                    f"compute group without a partition makes one of its name ({why})",
                    "rename the group, or set its partition to another name, such as batch")]
