"""After teardown: look for anything of this cluster still on the machine, one finding per object."""
from __future__ import annotations

from pathlib import Path

from provision.providers.sandbox import environment, layout, network, processes
from provision.providers.sandbox.record import Proc, SandboxRecord


def leftovers(cluster: str, bridge: str, state_dir: Path, rec: SandboxRecord | None) -> list[str]:
    """Namespaces, processes, mounts, links and the bridge of the cluster that still exist."""
    return [*namespaces(cluster, rec), *live_processes(rec), *mounts(cluster, state_dir, rec),
            *links(cluster, rec), *bridges(bridge)]


def namespaces(cluster: str, rec: SandboxRecord | None) -> list[str]:
    """Named network namespaces of the cluster (by record and by name prefix)."""
    recorded = {n.netns for n in rec.nodes.values()} if rec else set()
    prefix = layout.netns_prefix(cluster)
    return [f"namespace {name}" for name in network.netns_names() if name in recorded or name.startswith(prefix)]


def live_processes(rec: SandboxRecord | None) -> list[str]:
    """Recorded processes still there (zombies too), and any process inside a node's namespaces."""
    if rec is None:
        return []
    recorded: list[Proc] = [p for n in rec.nodes.values() for p in (n.init, n.launcher) if p is not None]
    recorded += [rec.proxy] if rec.proxy else []
    found = {p.pid: processes.command_name(p.pid) for p in recorded if processes.is_ours(p)}
    inodes = {inode for n in rec.nodes.values() for inode in n.namespaces.values()}
    found.update(dict(processes.in_namespaces(inodes)) if inodes else {})
    return [f"process {pid} ({name})" for pid, name in sorted(found.items())]


def mounts(cluster: str, state_dir: Path, rec: SandboxRecord | None) -> list[str]:
    """Mounts of this machine under the cluster's state directory or on its netns files."""
    netns = {f"/run/netns/{n.netns}" for n in rec.nodes.values()} if rec else set()
    prefix = f"/run/netns/{layout.netns_prefix(cluster)}"
    return [f"mount {point}" for point in environment.mount_points()
            if point in netns or point.startswith(prefix) or environment.is_under(point, state_dir)]


def links(cluster: str, rec: SandboxRecord | None) -> list[str]:
    """Host veth ends of the cluster (by record and by name prefix)."""
    recorded = {n.veth for n in rec.nodes.values()} if rec else set()
    prefix = layout.veth_prefix(cluster)
    return [f"link {name}" for name in network.link_names() if name in recorded or name.startswith(prefix)]


def bridges(bridge: str) -> list[str]:
    """The cluster's bridge, if it still exists."""
    return [f"bridge {bridge}"] if network.link_kind(bridge) is not None else []
