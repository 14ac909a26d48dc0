"""What the roles users, slurm_accounts and slurm are given from the spec's users:, homes: and accounting: sections:
the inventory variables, as plain data (the inventory template writes each with its YAML filter, which tags every
string !unsafe, so no value from a user entry is ever templated by Ansible)."""
from __future__ import annotations

from provision.records import ClusterInfo
from provision.spec.model import ClusterSpec
from provision.spec.people import Account, Qos, User
from provision.spec.people_checks import home_base


def role_vars(spec: ClusterSpec, cluster: ClusterInfo) -> dict:
    """The inventory variables of the people's roles, in a stable order."""
    accounting = spec.accounting
    return {
        "users_list": [_user(user) for user in spec.users],
        "users_home_base": home_base(spec),
        # with a shared filesystem one node makes the homes (there, once); without, each node its own
        "users_home_host": cluster.controller.name if spec.filesystem.type != "none" else "",
        "slurm_accounting_enforce": bool(accounting and accounting.enforce),
        "slurm_accounts_enabled": spec.software.slurm.accounting,
        "slurm_accounts_accounts": [_account(a) for a in accounting.accounts] if accounting else [],
        "slurm_accounts_qos": [_qos(q) for q in accounting.qos] if accounting else [],
        "slurm_accounts_users": [{"name": u.name, "accounts": list(u.accounts)} for u in spec.users if u.accounts],
    }


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
