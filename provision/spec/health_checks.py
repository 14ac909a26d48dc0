"""Validation of the spec's health section beyond its shape: what the active checks need from the rest of the spec."""
from __future__ import annotations

from provision import hostlist
from provision.spec.findings import Finding
from provision.spec.model import ClusterSpec

ACTIVE_WRITES = ("PreemptType", "PreemptMode")  # slurm.conf settings health.active writes itself
SLURM_PORTS = (6817, 6818, 6819)


def check_active(spec: ClusterSpec) -> list[Finding]:
    """health.active: the health service runs the passes (health.enabled), its partition's preemption is written by
    gpu-provision (software.slurm.config cannot also set it), its iperf3 port is not Slurm's, and a pass needs a peer."""
    active = spec.health.active
    if active is None:
        return []
    out = []
    if not spec.health.enabled:
        out.append(Finding("error", "health.active", "is set while health.enabled is false: the health service runs "
                           "the active checks", "set health.enabled: true, or remove health.active"))
    for name in ACTIVE_WRITES:
        if name in spec.software.slurm.config:
            out.append(Finding("error", f"software.slurm.config.{name}", "is written by gpu-provision while "
                               "health.active is set (its partition is preempted by every other)",
                               f"remove {name} from software.slurm.config, or remove health.active"))
    if active.port in SLURM_PORTS:
        out.append(Finding("error", "health.active.port", f"{active.port} is a Slurm daemon's port",
                           "choose another port, e.g. 5301"))
    computes = sum(hostlist.count(g.hosts) if g.hosts else (g.count or 0) for g in spec.node_groups
                   if "compute" in g.roles)
    if computes < 2:
        out.append(Finding("warning", "health.active", "the cluster has one compute node: a pass measures no link",
                           "add compute nodes, or accept active checks without the network"))
    return out
