"""Render the Ansible inventory (hosts, groups, cluster-wide vars, the people's roles' variables) from the typed
cluster record."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from provision.certify.judging import thresholds
from provision.errors import UsageError
from provision.monitoring import monitoring_vars
from provision.node import hardware
from provision.records import ClusterInfo
from provision.remote import ssh_options
from provision.slurm import layout, packages
from provision.spec.model import ROLES, ClusterSpec
from provision.spec.people import Account, Directory, Qos, User
from provision.spec.people_checks import home_base
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
        "people": people_vars(spec, cluster),
        "active": active_vars(spec, cluster),
        "monitoring": {**monitoring_vars(spec, cluster),
                       **({"monitoring_grafana_admin_password_file": str(state.secrets.grafana_password)}
                          if spec.monitoring.grafana else {})},
    }
    cluster_vars = env.get_template("inventory/cluster.yml.j2").render(**context)
    return {"hosts.yml": render_hosts(cluster), "group_vars/all/cluster.yml": cluster_vars}


SANDBOX_PACE = "1G"  # iperf3 -b on the sandbox, as certify paces it (its veth links' speed is the host's CPU)
# The floor of a node's links when the spec gives none: a quarter of the sandbox's pacing; elsewhere a tenth of
# 10 GbE, the slowest link a GPU cluster's node has (a link down to 1 Gb/s or a broken one is below it).
NET_FLOOR_GBPS = {"sandbox": 0.25, "other": 1.0}
ACTIVE_FLOORS = {"active.memory_bw": 1.0, "active.fs": 5.0}  # GB/s and MB/s: coarse, see README "Active checks"


def active_vars(spec: ClusterSpec, cluster: ClusterInfo) -> dict:
    """The slurm role's slurm_active_* from health.active: the floors are derived here (the link floor by provider,
    each GPU model's GEMM floor from certify's threshold table)."""
    active = spec.health.active
    if active is None:
        return {"slurm_active_enabled": False}
    models = sorted({n.gpu_model for n in cluster.nodes if n.gpu_count and n.gpu_model})
    gpu_floors = {m: {"gpu.gemm_bf16": found.value} for m in models
                  if (found := thresholds.gpu_floor("gpu.gemm_bf16", m)) is not None}
    default_floor = NET_FLOOR_GBPS["sandbox" if cluster.sandbox else "other"]
    return {"slurm_active_enabled": True, "slurm_active_interval": active.interval_s,
            "slurm_active_level": active.level, "slurm_active_peers": active.peers, "slurm_active_port": active.port,
            "slurm_active_bitrate": SANDBOX_PACE if cluster.sandbox else "",
            "slurm_active_net_min_gbps": active.net_min_gbps or default_floor,
            "slurm_active_floors": dict(ACTIVE_FLOORS), "slurm_active_gpu_floors": gpu_floors}


CERTIFY_SHELL = "/usr/sbin/nologin"  # certify runs its jobs with runuser, never a login


def people_vars(spec: ClusterSpec, cluster: ClusterInfo) -> dict:
    """The variables of the roles users, sssd, slurm_accounts and slurm from the spec's users:, homes:, directory: and
    accounting:, in a stable order, as plain data (the template writes each with its YAML filter, which tags every
    string !unsafe, so no value from a user entry is ever templated by Ansible). The directory's bind password stays in
    its file on this machine: the inventory names the file, the sssd role reads it under no_log."""
    accounting = spec.accounting
    directory_users = [{"name": u.name, "accounts": list(u.accounts)} for u in accounting.users] if accounting else []
    certify = _certify_people(spec)
    return {
        "users_list": [_user(user) for user in spec.users] + certify["users"],
        "users_home_base": home_base(spec),
        # with a shared filesystem one node makes the homes (there, once); without, each node its own
        "users_home_host": cluster.controller.name if spec.filesystem.type != "none" else "",
        "slurm_accounting_enforce": bool(accounting and accounting.enforce),
        "slurm_accounts_enabled": spec.software.slurm.accounting,
        "slurm_accounts_accounts": ([_account(a) for a in accounting.accounts] if accounting else [])
        + certify["accounts"],
        "slurm_accounts_qos": ([_qos(q) for q in accounting.qos] if accounting else []) + certify["qos"],
        "slurm_accounts_users": [{"name": u.name, "accounts": list(u.accounts)} for u in spec.users if u.accounts]
        + directory_users + certify["associations"],
        "certify_user": spec.certify.user.name if spec.certify.user else "",
        **_directory(spec.directory, home_base(spec)),
    }


def _certify_people(spec: ClusterSpec) -> dict[str, list[dict]]:
    """certify.user as a person of users_list (no key, no login shell, no password: useradd leaves it locked) and, with Slurm's accounting, an account and a QoS of its own, without limits, named like it."""
    user = spec.certify.user
    if user is None:
        return {"users": [], "accounts": [], "qos": [], "associations": []}
    entry = {"name": user.name, "uid": user.uid, "groups": [], "shell": CERTIFY_SHELL, "ssh_public_keys": []}
    if not spec.software.slurm.accounting:
        return {"users": [entry], "accounts": [], "qos": [], "associations": []}
    return {"users": [entry],
            "accounts": [{"name": user.name, "parent": "root", "fairshare": 1, "max_jobs": None, "grp_tres": {},
                          "qos": [user.name]}],
            "qos": [{"name": user.name, "priority": 0, "max_jobs_per_user": None, "max_wall_minutes": None}],
            "associations": [{"name": user.name, "accounts": [user.name]}]}


def _directory(directory: Directory | None, homes: str) -> dict:
    """The sssd role's variables: off without a directory; the CA and password files as absolute paths here."""
    if directory is None:
        return {"sssd_enabled": False}
    password = directory.bind_password_file
    return {"sssd_enabled": True, "sssd_ldap_uri": directory.uri, "sssd_ldap_base_dn": directory.base_dn,
            "sssd_ldap_ca_file": str(directory.ca_file.expanduser().absolute()),
            "sssd_ldap_bind_dn": directory.bind_dn or "",
            "sssd_ldap_bind_password_file": str(password.expanduser().absolute()) if password else "",
            "sssd_home_base": homes}


def _user(user: User) -> dict:
    entry = {"name": user.name, "uid": user.uid, "groups": list(user.groups), "shell": user.shell,
             "ssh_public_keys": list(user.ssh_public_keys)}
    if user.gid is not None:
        entry["gid"] = user.gid
    return entry


def _account(account: Account) -> dict:
    return {"name": account.name, "parent": account.parent, "fairshare": account.fairshare,
            "max_jobs": account.max_jobs, "grp_tres": dict(account.grp_tres), "qos": list(account.qos)}


def _qos(qos: Qos) -> dict:
    return {"name": qos.name, "priority": qos.priority, "max_jobs_per_user": qos.max_jobs_per_user,
            "max_wall_minutes": qos.max_wall}


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
