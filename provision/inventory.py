"""Render the Ansible inventory (hosts, groups, cluster-wide vars) from the typed cluster record."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from provision import people
from provision.errors import UsageError
from provision.node import hardware
from provision.records import ClusterInfo
from provision.remote import ssh_options
from provision.slurm import layout, packages
from provision.spec.model import ROLES, ClusterSpec
from provision.state import ClusterState, write_private
from provision.templating import environment

GROUP_PREFIX = "nodegroup_"


@dataclass(frozen=True)
class InventoryGroup:
    """An Ansible group and its member host names."""

    name: str
    hosts: tuple[str, ...]


def inventory_groups(cluster: ClusterInfo) -> list[InventoryGroup]:
    """Role groups, a gpu group, and one group per node group (prefixed so names never clash)."""
    groups = [InventoryGroup(role, tuple(n.name for n in cluster.with_role(role))) for role in ROLES]
    groups.append(InventoryGroup("gpu", tuple(n.name for n in cluster.nodes if n.gpu_count)))
    seen: dict[str, list[str]] = {}
    for node in cluster.nodes:
        seen.setdefault(node.group, []).append(node.name)
    groups += [InventoryGroup(f"{GROUP_PREFIX}{name.replace('-', '_')}", tuple(hosts)) for name, hosts in seen.items()]
    return groups


def render(spec: ClusterSpec, cluster: ClusterInfo) -> dict[str, str]:
    """The inventory files as relative path -> text (pure; writing is separate)."""
    env = environment()
    state = ClusterState.for_spec(spec)
    recorded = hardware.load(state)
    context = {
        "spec": spec,
        "cluster": cluster,
        "software": spec.software,
        "fs": spec.filesystem,
        "cuda_default": spec.software.cuda.default or spec.software.cuda.versions[-1],
        "controller": cluster.controller.name,
        "slurm_nodes": layout.node_entries(cluster, recorded),
        "slurm_partitions": layout.partition_entries(cluster, recorded),
        "slurm_repository": packages.repository_vars(spec.software.slurm),
        "munge_key_file": str(state.secrets.munge_key),
        "db_password_file": str(state.secrets.db_password),
        "people": people.role_vars(spec, cluster),
    }
    cluster_vars = env.get_template("inventory/cluster.yml.j2").render(**context)
    return {"hosts.yml": render_hosts(cluster), "group_vars/all/cluster.yml": cluster_vars}


def render_hosts(cluster: ClusterInfo) -> str:
    """hosts.yml: the nodes, their groups, and how Ansible logs in (host keys checked, ssh_options)."""
    return environment().get_template("inventory/hosts.yml.j2").render(
        cluster=cluster, groups=inventory_groups(cluster),
        ssh_args=ssh_options.ssh_args(cluster.known_hosts_path), ssh_common_args=ssh_options.common_args(cluster),
        ssh_key_file=ssh_options.option_path(cluster.ssh_key_path) if cluster.ssh_key_path else None)


def write(spec: ClusterSpec, cluster: ClusterInfo, out_dir: Path) -> list[Path]:
    """Write the inventory into a directory (created 0700), files 0600; returns the paths written."""
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"{out_dir}: exists and is not a directory", hint="give a directory path for -o")
    written = []
    for relative, text in render(spec, cluster).items():
        written.append(write_private(out_dir / relative, text))
    return written
