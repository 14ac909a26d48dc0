"""The users role's decisions (playbooks/roles/users/filter_plugins/users_plan.py), from node_probe answers: a
converged node changes nothing; a new user, a changed uid, a missing home or changed keys are named; a user dropped
from the list is locked on this run and every later one (the record keeps their name), never deleted."""
from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "playbooks" / "roles" / "users"


def _load():
    spec = importlib.util.spec_from_file_location("users_plan_under_test", ROLE / "filter_plugins" / "users_plan.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


up = _load()
BASE = "/shared/home"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHYlQ3q6RUZpWp8G2oGWKJCbHcdLuDGF8jL5vYtgt3+J alice@laptop"
USERS = [{"name": "alice", "uid": 2001, "groups": [], "shell": "/bin/bash", "ssh_public_keys": [KEY]},
         {"name": "bob", "uid": 2002, "gid": 3002, "groups": ["alice"], "shell": "/usr/bin/zsh", "ssh_public_keys": []}]


def _account(name, uid, gid, shell):
    return {"name": name, "uid": uid, "gid": gid, "group_gid": gid, "home": f"{BASE}/{name}", "shell": shell}


def _file(path, owner, mode, kind="directory", sha1=None):
    return {"path": path, "exists": True, "type": kind, "owner": owner, "group": owner, "mode": mode, "sha1": sha1}


def _converged(users=USERS, previous=None) -> dict:
    """What node_probe answers on a node the role has converged."""
    record = up.users_plan(users, {"outputs": {"managed": previous}}, BASE, True)["record"]
    keys = up.authorized_keys(users[0])
    return {
        "accounts": {u["name"]: _account(u["name"], u["uid"], u.get("gid") or u["uid"], u["shell"]) for u in users},
        "files": {"managed": _file("/var/lib/gpu-provision/users.json", "root", "0600", "file",
                                   hashlib.sha1(record.encode()).hexdigest()),
                  **{f"home:{u['name']}": _file(f"{BASE}/{u['name']}", u["name"], "0700") for u in users},
                  "keys:alice": _file(f"{BASE}/alice/.ssh/authorized_keys", "alice", "0600", "file",
                                      hashlib.sha1(keys.encode()).hexdigest()),
                  "keys:bob": {"path": f"{BASE}/bob/.ssh/authorized_keys", "exists": False, "type": None}},
        "outputs": {"managed": record},
    }


def test_a_converged_node_changes_nothing():
    assert up.users_plan(USERS, _converged(), BASE, True)["todo"] == []


def test_a_fresh_node_creates_every_account_home_and_key_and_the_record():
    fresh = {"accounts": {u["name"]: {"name": u["name"], "uid": None, "gid": None, "home": None, "shell": None}
                          for u in USERS},
             "files": {}, "outputs": {"managed": None}}
    plan = up.users_plan(USERS, fresh, BASE, True)
    assert (plan["accounts"], plan["homes"], plan["key_files"], plan["dropped"]) == (["alice", "bob"], ["alice", "bob"],
                                                                                 ["alice"], [])
    assert plan["todo"] == ["accounts", "homes", "key_files", "record"]
    assert json.loads(plan["record"])["managed"] == ["alice", "bob"]


def test_a_node_that_does_not_make_homes_leaves_them_and_the_keys_alone():
    probe = _converged()
    probe["files"] = {k: v for k, v in probe["files"].items() if k == "managed"}
    assert up.users_plan(USERS, probe, BASE, False)["todo"] == []


@pytest.mark.parametrize("change, kind", [
    (lambda p: p["accounts"]["alice"].update(uid=2999), "accounts"),
    (lambda p: p["accounts"]["bob"].update(group_gid=2002), "accounts"),
    (lambda p: p["accounts"]["bob"].update(shell="/bin/bash"), "accounts"),
    (lambda p: p["files"]["home:bob"].update(mode="0755"), "homes"),
    (lambda p: p["files"]["home:bob"].update(owner="root"), "homes"),
    (lambda p: p["files"]["keys:alice"].update(sha1="0" * 40), "key_files"),
    (lambda p: p["files"]["keys:alice"].update(mode="0644"), "key_files"),
])
def test_what_differs_on_the_node_is_named(change, kind):
    probe = _converged()
    change(probe)
    assert up.users_plan(USERS, probe, BASE, True)["todo"] == [kind]


def test_a_change_in_the_list_alone_rewrites_the_record_and_reapplies_the_accounts():
    changed = [USERS[0], {**USERS[1], "groups": []}]
    plan = up.users_plan(changed, _converged(), BASE, True)
    assert plan["todo"] == ["record"]


def test_a_dropped_user_is_locked_now_and_on_every_later_run():
    probe = _converged()
    plan = up.users_plan(USERS[:1], probe, BASE, True)
    assert plan["dropped"] == ["bob"] and "dropped" in plan["todo"]
    assert json.loads(plan["record"])["managed"] == ["alice", "bob"]
    later = _converged(USERS[:1], previous=plan["record"])
    assert up.users_plan(USERS[:1], later, BASE, True)["dropped"] == ["bob"]


def test_a_record_the_role_did_not_write_fails_the_run():
    probe = _converged()
    probe["outputs"]["managed"] = "alice bob"
    with pytest.raises(AnsibleFilterError, match="not JSON"):
        up.users_plan(USERS, probe, BASE, True)


def test_the_key_file_is_the_user_s_own_0600_with_one_key_a_line():
    assert up.key_file(USERS[0], BASE) == {"dest": f"{BASE}/alice/.ssh/authorized_keys", "content": KEY + "\n",
                                           "owner": "alice", "group": "alice", "mode": "0600"}


def test_every_filter_the_role_names_is_the_plugin_s():
    named = set()
    for path in list((ROLE / "tasks").glob("*.yml")) + [ROLE / "vars" / "main.yml"]:
        text = path.read_text()
        named |= {f for f in up.FilterModule().filters() if f in text}
    assert named == set(up.FilterModule().filters())
    assert yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())["users_list"] == []


def test_a_node_without_users_gets_no_record():
    assert up.users_plan([], {"accounts": {}, "files": {}, "outputs": {"managed": None}}, BASE, True)["todo"] == []
