"""users_plan: what the users role must change on a node, decided in Python from the node_probe answer.

    {{ users_list | users_plan(_users_state, users_home_base, makes_homes, locked_shell) }}
    -> {record, dropped, accounts, homes, key_files, todo}

- record: the text of the managed file this run leaves: every name ever managed on the node (so a user dropped from
  the list stays locked on every later run) and the entries applied, as sorted JSON;
- dropped: names the previous record manages that the list no longer has (to lock: usermod -L, expiry, nologin);
- accounts: names whose account (uid, own group's gid, home, shell) differs from the list, or is missing;
- homes: names whose home is not a directory they own with mode 0700 (only where this node makes homes);
- key_files: names whose .ssh/authorized_keys differs from their keys (only where this node makes homes);
- todo: the kinds of change, empty on a converged node (and on a node that never had a user: no record is written).
A record the role did not write (not JSON, or not a mapping) fails the run rather than dropping nobody.
"""
from __future__ import annotations

import hashlib
import json

from ansible.errors import AnsibleFilterError


def authorized_keys(user: dict) -> str:
    """The authorized_keys text of a user: one key a line (they were checked at validate), or nothing."""
    keys = user.get("ssh_public_keys") or []
    return "".join(f"{key}\n" for key in keys)


def key_file(user: dict, home_base: str) -> dict:
    """A config_files entry: the user's authorized_keys, theirs, 0600."""
    return {"dest": f"{home_base}/{user['name']}/.ssh/authorized_keys", "content": authorized_keys(user),
            "owner": user["name"], "group": user["name"], "mode": "0600"}


def _previous(text) -> list[str]:
    if not text:
        return []
    try:
        record = json.loads(text)
    except ValueError:
        raise AnsibleFilterError("users_plan: the managed file is not JSON; it is the users role's record of the names "
                                 "it manages: restore it, or remove it to manage only the listed users") from None
    if not isinstance(record, dict) or not isinstance(record.get("managed", []), list):
        raise AnsibleFilterError("users_plan: the managed file holds no list 'managed'")
    return [str(name) for name in record.get("managed", [])]


def _account_differs(user: dict, found: dict | None, home_base: str) -> bool:
    if not found or found.get("uid") is None:
        return True
    gid = user.get("gid") if user.get("gid") is not None else user["uid"]
    return (found["uid"], found["gid"], found.get("group_gid"), found["home"], found["shell"]) != \
        (user["uid"], gid, gid, f"{home_base}/{user['name']}", user.get("shell") or "/bin/bash")


def _home_wrong(user: dict, found: dict | None) -> bool:
    return not found or (found.get("type"), found.get("owner"), found.get("mode")) != ("directory", user["name"], "0700")


def _keys_wrong(user: dict, found: dict | None) -> bool:
    text = authorized_keys(user)
    if not found or found.get("type") is None:
        return bool(text)
    return (found.get("sha1"), found.get("owner"), found.get("mode")) != (
        hashlib.sha1(text.encode()).hexdigest(), user["name"], "0600")


def users_paths(users: list, home_base: str, managed_file: str) -> dict:
    """node_probe's `files` read: each user's home and authorized_keys, and the managed file, keyed by what they are."""
    paths = {"managed": managed_file}
    for user in users:
        home = f"{home_base}/{user['name']}"
        paths.update({f"home:{user['name']}": home, f"keys:{user['name']}": f"{home}/.ssh/authorized_keys"})
    return paths


def users_plan(users: list, probe: dict, home_base: str, makes_homes: bool) -> dict:
    names = [user["name"] for user in users]
    previous = _previous((probe.get("outputs") or {}).get("managed"))
    record = json.dumps({"managed": sorted(set(previous) | set(names)), "home_base": home_base,
                         "users": [{k: user[k] for k in sorted(user)} for user in users]},
                        indent=2, sort_keys=True) + "\n"
    files, accounts = probe.get("files") or {}, probe.get("accounts") or {}
    plan = {
        "record": record,
        "dropped": [name for name in previous if name not in names],
        "accounts": [u["name"] for u in users if _account_differs(u, accounts.get(u["name"]), home_base)],
        "homes": [u["name"] for u in users if makes_homes and _home_wrong(u, files.get(f"home:{u['name']}"))],
        "key_files": [u["name"] for u in users if makes_homes and _keys_wrong(u, files.get(f"keys:{u['name']}"))],
    }
    record_sha1 = hashlib.sha1(record.encode()).hexdigest()
    plan["todo"] = [kind for kind in ("dropped", "accounts", "homes", "key_files") if plan[kind]] + \
        (["record"] if (names or previous) and (files.get("managed") or {}).get("sha1") != record_sha1 else [])
    return plan


class FilterModule:
    def filters(self):
        return {"users_plan": users_plan, "users_paths": users_paths, "users_key_file": key_file}
