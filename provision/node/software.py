"""What runs on each node, read live over SSH for `provision status`: its OS release and its Slurm version."""
from __future__ import annotations

from dataclasses import dataclass

from provision.records import ClusterInfo
from provision.remote.commands import CommandResult, run_across

# One read-only command: os-release's name and release ("Debian 13", "Ubuntu 24.04"), and the version Slurm
# reports ("slurm-wlm 24.11.5" from Debian's packages, "slurm 24.11.5" from SchedMD's). The daemons answer -V at once;
# sinfo (a login node's only Slurm command) waits up to 60 s for a slurm.conf, so it gets 5 s.
COMMAND = (". /etc/os-release 2>/dev/null && echo \"os ${NAME%% *} ${VERSION_ID:-}\"; "
           "{ slurmd -V || slurmctld -V || timeout 5 sinfo --version; } 2>/dev/null | head -n 1 | sed 's/^/slurm /'; "
           "true")


@dataclass(frozen=True)
class NodeSoftware:
    """One node's OS and Slurm; None for what it does not have (or could not be read), error when unreachable."""

    node: str
    os: str | None = None
    slurm: str | None = None
    error: str | None = None


def parse(result: CommandResult) -> NodeSoftware:
    """The node's answer to COMMAND."""
    if result.rc != 0:
        return NodeSoftware(result.node, error=(result.stderr.strip().splitlines() or ["unreachable"])[-1])
    os_name = slurm = None
    for line in result.stdout.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "os" and rest.strip():
            os_name = rest.strip()
        elif kind == "slurm" and len(rest.split()) >= 2:
            slurm = rest.split()[1]
    return NodeSoftware(result.node, os_name, slurm)


def read(cluster: ClusterInfo) -> dict[str, NodeSoftware]:
    """Every node that has an address and may be up (running, or unknown to a static provider), read at once;
    node name -> what it runs."""
    nodes = [n for n in cluster.nodes if n.address and n.state in ("running", "unknown")]
    return {r.node: parse(r) for r in run_across(cluster, nodes, COMMAND)}
