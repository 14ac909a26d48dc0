"""Semantic checks on `users:`, `homes:`, `accounting:` and `directory:` (their shapes are in people.py).

Ids: a user's uid and gid may collide neither with another user's nor with the service accounts the common role
creates on every node (`common_service_accounts` in its defaults, read here, one home for the list), and lie outside
the system range (< 1000). Names: no user takes a system account's name; accounts and QoS are named once, every name
a user or an account refers to exists.
"""
from __future__ import annotations

import os
from collections import Counter
from functools import cache

import yaml

from provision.files import FileKind, UnreadableFile, check_regular
from provision.resources import playbooks_dir
from provision.spec.findings import Finding
from provision.spec.model import ClusterSpec
from provision.spec.shapes import normal_path

SYSTEM_ID_LIMIT = 1000  # Debian's (and every major distribution's) first uid/gid for people
NOBODY = 65534
# Names Debian's base system, sshd and the packages the roles install already use.
SYSTEM_NAMES = frozenset({
    "root", "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news", "uucp", "proxy", "www-data",
    "backup", "list", "irc", "gnats", "nobody", "nogroup", "_apt", "sshd", "messagebus", "mysql", "systemd-network",
    "systemd-resolve", "systemd-timesync", "systemd-journal", "polkitd", "gluster", "_chrony", "statd", "tss",
})
BUILTIN_QOS = "normal"
ROOT_ACCOUNT = "root"
_HOME_SYSTEM_PATHS = ("/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/proc", "/root", "/run", "/sbin",
                      "/sys", "/tmp", "/usr", "/var")


@cache
def service_accounts() -> dict[str, int]:
    """name -> uid (= gid) of the accounts the common role creates on every node, from its defaults."""
    defaults = yaml.safe_load((playbooks_dir() / "roles" / "common" / "defaults" / "main.yml").read_text())
    return {entry["name"]: int(entry["uid"]) for entry in defaults["common_service_accounts"]}


def home_base(spec: ClusterSpec) -> str:
    """The folder users' homes are made in: homes.base, else <mount point>/home with a shared filesystem, else /home."""
    if spec.homes.base:
        return normal_path(spec.homes.base)
    if spec.filesystem.type != "none":
        return normal_path(spec.filesystem.mount_point) + "/home"
    return "/home"


def check_users(spec: ClusterSpec) -> list[Finding]:
    """Unique names outside the system's; uids and gids unique, outside the system range and the service accounts."""
    out = []
    names = Counter(user.name for user in spec.users)
    services = service_accounts()
    for i, user in enumerate(spec.users):
        path = f"users[{i}]"
        if names[user.name] > 1:
            out.append(Finding("error", f"{path}.name", f"'{user.name}' is listed more than once",
                               "list each user once"))
        if user.name in SYSTEM_NAMES or user.name in services:
            out.append(Finding("error", f"{path}.name", f"'{user.name}' is a system or service account's name",
                               "give the user their own login name"))
        out += _id_findings(path, user.uid, "uid")
        if user.gid is not None:
            out += _id_findings(path, user.gid, "gid")
        if len(set(user.groups)) != len(user.groups):
            out.append(Finding("error", f"{path}.groups", f"{user.groups} repeats a group", "list each group once"))
        if len({tuple(key.split(" ")[:2]) for key in user.ssh_public_keys}) != len(user.ssh_public_keys):
            out.append(Finding("warning", f"{path}.ssh_public_keys", "the same key is listed twice",
                               "list each key once"))
    return out + _collisions(spec, services)


def _id_findings(path: str, value: int, field: str) -> list[Finding]:
    """A uid or gid in the system range, or nobody's."""
    if value < SYSTEM_ID_LIMIT:
        return [Finding("error", f"{path}.{field}", f"{value} is in the system range (below {SYSTEM_ID_LIMIT}), "
                        "where the OS and its packages take ids", f"use {field} {SYSTEM_ID_LIMIT} or above, e.g. 2001")]
    if value == NOBODY:
        return [Finding("error", f"{path}.{field}", f"{value} is nobody's id", f"use another {field}, e.g. 2001")]
    return []


def _collisions(spec: ClusterSpec, services: dict[str, int]) -> list[Finding]:
    """Two users with one uid, two users' groups with one gid, or either on a service account's id (its gid is its
    uid). A gid that is the uid (no gid given) is reported at the uid, once."""
    out = []
    by_service = {uid: name for name, uid in services.items()}
    uids: dict[int, str] = {}
    gids: dict[int, str] = {}
    for i, user in enumerate(spec.users):
        out += _collision(f"users[{i}].uid", "uid", user.uid, user.name, uids, by_service)
        given = user.gid is not None
        where, what = (f"users[{i}].gid", "gid") if given else (f"users[{i}].uid", "gid (the uid: no gid is given)")
        out += _collision(where, what, user.group_id, user.name, gids, by_service if given else {})
    return out


def _collision(where: str, what: str, value: int, user: str, seen: dict[int, str], services: dict[int, str]):
    """The finding for one id already taken by a service account or by another user, if it is."""
    field = where.rsplit(".", 1)[1]
    found = []
    if value in services:
        found.append(Finding("error", where, f"{value} is the {field} of the service account '{services[value]}' "
                             "(common_service_accounts, whose gid is its uid)", f"use another {field}"))
    elif value in seen and seen[value] != user:
        found.append(Finding("error", where, f"{value} is also the {what.split()[0]} of user '{seen[value]}'"
                             + ("" if what == field else " (no gid is given, so the uid is the gid)"),
                             f"give every user their own {field}"))
    seen.setdefault(value, user)
    return found


def check_certify_user(spec: ClusterSpec) -> list[Finding]:
    """certify.user: a name no person, system or service account has, an id of its own outside the system range, and
    (with accounting:) no account or QoS already named like it (certify makes both under its name)."""
    user = spec.certify.user
    if user is None:
        return []
    out = []
    where = "certify.user"
    services = service_accounts()
    if user.name in SYSTEM_NAMES or user.name in services or user.name in {u.name for u in spec.users}:
        out.append(Finding("error", f"{where}.name", f"'{user.name}' is already a person's, system or service "
                           "account's name", "give certify's user a name of its own, e.g. gp-certify"))
    out += _id_findings(where, user.uid, "uid")
    taken = {uid: name for name, uid in services.items()}
    for person in spec.users:
        taken.setdefault(person.uid, person.name)
        taken.setdefault(person.group_id, person.name)
    if user.uid in taken:
        out.append(Finding("error", f"{where}.uid", f"{user.uid} is already the uid or gid of '{taken[user.uid]}' "
                           "(certify's user's gid is its uid)", "give certify's user an id of its own, e.g. 59990"))
    if spec.accounting is not None:
        for kind, names in (("account", [a.name for a in spec.accounting.accounts]),
                            ("QoS", [q.name for q in spec.accounting.qos])):
            if user.name in names:
                out.append(Finding("error", f"{where}.name", f"'{user.name}' is also a {kind} of accounting: certify "
                                   f"makes a {kind} of that name for its user", "name certify's user otherwise"))
    return out


def check_user_accounts(spec: ClusterSpec) -> list[Finding]:
    """Every account a user names exists in accounting.accounts; with enforcement, a user without one is warned."""
    known = {account.name for account in spec.accounting.accounts} if spec.accounting else set()
    out = []
    for i, user in enumerate(spec.users):
        for j, account in enumerate(user.accounts):
            if account not in known:
                fix = (f"add {{name: {account}}} to accounting.accounts" if spec.accounting else
                       f"add an accounting section with accounts: [{{name: {account}}}]")
                out.append(Finding("error", f"users[{i}].accounts[{j}]", f"'{account}' is not an account of "
                                   "accounting.accounts", fix))
        if len(set(user.accounts)) != len(user.accounts):
            out.append(Finding("error", f"users[{i}].accounts", f"{user.accounts} repeats an account",
                               "list each account once"))
        if not user.accounts and spec.accounting and spec.accounting.enforce:
            out.append(Finding("warning", f"users[{i}].accounts", f"'{user.name}' has no account, and with "
                               "accounting.enforce Slurm refuses their jobs", "give the user an account"))
    return out


def check_directory_users(spec: ClusterSpec) -> list[Finding]:
    """accounting.users: people of the directory, each once, none also in users: (whose accounts are in their entry),
    every account they name listed; without a directory they must have accounts on the nodes some other way."""
    section = spec.accounting
    if section is None or not section.users:
        return []
    known, listed = {account.name for account in section.accounts}, {user.name for user in spec.users}
    names = Counter(user.name for user in section.users)
    out = []
    for i, user in enumerate(section.users):
        path = f"accounting.users[{i}]"
        if names[user.name] > 1:
            out.append(Finding("error", f"{path}.name", f"'{user.name}' is listed more than once",
                               "list each person once"))
        if user.name in listed:
            out.append(Finding("error", f"{path}.name", f"'{user.name}' is also in users:, whose entry names their "
                               "accounts", f"give the accounts in users[].accounts and remove {user.name} here"))
        if user.name in SYSTEM_NAMES or user.name in service_accounts():
            out.append(Finding("error", f"{path}.name", f"'{user.name}' is a system or service account's name",
                               "name a person of the directory"))
        out += [Finding("error", f"{path}.accounts[{j}]", f"'{account}' is not an account of accounting.accounts",
                        f"add {{name: {account}}} to accounting.accounts") for j, account in enumerate(user.accounts)
                if account not in known]
        if len(set(user.accounts)) != len(user.accounts):
            out.append(Finding("error", f"{path}.accounts", f"{user.accounts} repeats an account",
                               "list each account once"))
    if spec.directory is None:
        out.append(Finding("warning", "accounting.users", "there is no directory, so these people need accounts on "
                           "every node made some other way (Slurm runs a job as its uid there)",
                           "add a directory section, or list them in users: with their accounts"))
    return out


def check_accounting(spec: ClusterSpec) -> list[Finding]:
    """Accounts and QoS named once; parents and QoS that exist; no cycle in the account tree; accounting on."""
    section = spec.accounting
    if section is None:
        return []
    out = []
    if not spec.software.slurm.accounting:
        out.append(Finding("error", "accounting", "needs Slurm's accounting, which software.slurm.accounting "
                           "turns off", "set software.slurm.accounting: true, or remove the accounting section"))
    out += _duplicates("accounting.accounts", [a.name for a in section.accounts], "account")
    out += _duplicates("accounting.qos", [q.name for q in section.qos], "QoS")
    accounts = {a.name: a for a in section.accounts}
    qos = {q.name for q in section.qos} | {BUILTIN_QOS}
    for i, account in enumerate(section.accounts):
        path = f"accounting.accounts[{i}]"
        if account.name == ROOT_ACCOUNT:
            out.append(Finding("error", f"{path}.name", "'root' is Slurm's own top account",
                               "name the account otherwise; parent: root places it under Slurm's"))
        if account.parent != ROOT_ACCOUNT and account.parent not in accounts:
            out.append(Finding("error", f"{path}.parent", f"'{account.parent}' is not an account of "
                               "accounting.accounts", "name a listed account, or root"))
        for j, name in enumerate(account.qos):
            if name not in qos:
                out.append(Finding("error", f"{path}.qos[{j}]", f"'{name}' is not a QoS of accounting.qos",
                                   f"add {{name: {name}}} to accounting.qos, or use normal"))
    return out + _cycles(accounts)


def _duplicates(path: str, names: list[str], what: str) -> list[Finding]:
    counts = Counter(names)
    return [Finding("error", f"{path}[{i}].name", f"'{name}' names more than one {what}", f"name each {what} once")
            for i, name in enumerate(names) if counts[name] > 1]


def _cycles(accounts: dict) -> list[Finding]:
    """An account that is its own ancestor (sacctmgr cannot make the tree)."""
    out = []
    names = list(accounts)
    for name in names:
        seen, current = {name}, accounts[name].parent
        while current in accounts:
            if current == name:
                out.append(Finding("error", f"accounting.accounts[{names.index(name)}].parent",
                                   f"'{name}' is its own ancestor", "make the accounts a tree under root"))
                break
            if current in seen:
                break
            seen.add(current)
            current = accounts[current].parent
    return out


def check_homes(spec: ClusterSpec) -> list[Finding]:
    """Homes outside system paths; with users but no shared filesystem, a warning about where job output lands."""
    out = []
    base = home_base(spec)
    if spec.homes.base and (base in _HOME_SYSTEM_PATHS or any(base.startswith(p + "/") for p in _HOME_SYSTEM_PATHS
                                                              if p != "/")):
        out.append(Finding("error", "homes.base", f"'{spec.homes.base}' is a system path",
                           "use a folder of its own, such as /home or <mount point>/home"))
    mount = normal_path(spec.filesystem.mount_point)
    if spec.users and spec.filesystem.type == "none":
        out.append(Finding("warning", "homes", f"there is no shared filesystem, so each node has its own {base}: "
                           "a batch job's output stays on the node that ran it", "set filesystem.type"))
    elif spec.homes.base and spec.filesystem.type != "none" and not (base + "/").startswith(mount + "/"):
        out.append(Finding("warning", "homes.base", f"'{spec.homes.base}' is outside the shared filesystem "
                           f"({mount}): each node gets its own homes", f"use a folder under {mount}, e.g. {mount}/home"))
    return out


def check_login_nodes(spec: ClusterSpec) -> list[Finding]:
    """People (listed or from a directory) and no login node: they log in to the controller and submit there."""
    if not (spec.users or spec.directory) or any("login" in group.roles for group in spec.node_groups):
        return []
    controller = next((g.name for g in spec.node_groups if "controller" in g.roles), "the controller")
    return [Finding("warning", "node_groups", "no group has the login role, so people log in to the controller "
                    f"(group '{controller}') and submit their jobs there, beside slurmctld and slurmdbd",
                    "add a group with roles: [login], or give the controller's group the login role too")]


_CA = FileKind("a CA certificate", "give the path of the LDAP server's CA certificate (PEM) on this machine", "")
_PASSWORD = FileKind("a password file", "give the path of a file holding the bind password", "")


def check_directory(spec: ClusterSpec) -> list[Finding]:
    """The CA and the bind password are files here; a bind DN and its password come together."""
    directory = spec.directory
    if directory is None:
        return []
    out = [f for field, path, kind in (("ca_file", directory.ca_file, _CA),
                                       ("bind_password_file", directory.bind_password_file, _PASSWORD))
           if path is not None for f in _file_findings(f"directory.{field}", path, kind)]
    if (directory.bind_dn is None) != (directory.bind_password_file is None):
        out.append(Finding("error", "directory", "bind_dn and bind_password_file come together",
                           "give both for a bound search, or neither for an anonymous one"))
    if directory.bind_password_file is not None and not out:
        out += _password_findings(directory.bind_password_file.expanduser())
    return out


def _password_findings(path) -> list[Finding]:
    """The bind password is one line of printable characters without spaces at its ends (it becomes one sssd.conf
    value). The finding never shows the password."""
    try:
        text = path.read_bytes().decode()
    except (OSError, UnicodeDecodeError):
        return [Finding("error", "directory.bind_password_file", "cannot be read as UTF-8 text",
                        "write the password as one line of text")]
    password = text[:-1] if text.endswith("\n") else text
    if not password or not password.isprintable() or password != password.strip():
        return [Finding("error", "directory.bind_password_file", "does not hold one line of printable characters "
                        "(an empty password, a second line, a control character or a space at either end)",
                        "write the password alone on one line, e.g. printf '%s\\n' PASSWORD > FILE")]
    return []


def _file_findings(path: str, value, kind: FileKind) -> list[Finding]:
    expanded = value.expanduser()
    if not os.path.lexists(expanded):
        return [Finding("error", path, f"'{value}' does not exist", kind.fix)]
    try:
        check_regular(expanded, kind)
    except UnreadableFile as exc:
        return [Finding("error", path, exc.message, exc.hint or "")]
    return []
