"""The settings that differ between the last deploy and the spec: per variable, the nodes it reaches (from the roles),
what it restarts; nodes that join or leave are the node table's, not a setting's."""
from __future__ import annotations

from provision.settings.applied import GROUPS, Settings
from provision.settings.diff import by_node, compare, named_entry_changes, restarts

HOSTS = {
    "ctl01": {"ansible_host": "10.0.0.10", "node_group": "ctl", GROUPS: ["controller", "nodegroup_ctl"]},
    "cn01": {"ansible_host": "10.0.0.11", "node_group": "cn", GROUPS: ["compute", "nodegroup_cn"]},
    "cn02": {"ansible_host": "10.0.0.12", "node_group": "cn", GROUPS: ["compute", "nodegroup_cn"]},
    "st01": {"ansible_host": "10.0.0.13", "node_group": "st", GROUPS: ["nodegroup_st", "storage"]},
}
COMMON = {"slurm_health_interval": 300, "slurm_conf_parameters": {}, "munge_key_file": "/k", "certify_level": "quick"}


def settings(common: dict | None = None, hosts: dict | None = None) -> Settings:
    return Settings({**COMMON, **(common or {})}, hosts if hosts is not None else HOSTS)


def test_nothing_differs_nothing_changes():
    assert compare(settings(), settings()) == []


def test_a_common_variable_reaches_the_nodes_of_the_plays_whose_roles_read_it():
    changes = compare(settings(), settings({"slurm_health_interval": 120, "slurm_conf_parameters": {"KillWait": "60"}}))
    assert [(c.variable, c.before, c.after) for c in changes] == [
        ("slurm_conf_parameters", {}, {"KillWait": "60"}), ("slurm_health_interval", 300, 120)]
    assert all(c.nodes == ("ctl01", "cn01", "cn02") for c in changes)  # slurm: controller:compute:login, not st01
    assert changes[0].hostlist == "cn[01-02],ctl01" and changes[0].restarts == ("slurmctld", "slurmd")
    assert by_node(changes) == {n: ["slurm_conf_parameters", "slurm_health_interval"] for n in ("ctl01", "cn01", "cn02")}
    assert restarts(changes) == ["slurmctld", "slurmd"]


def test_a_variable_every_node_reads_reaches_every_node_and_one_no_role_reads_none():
    certify, munge = compare(settings(), settings({"munge_key_file": "/other", "certify_level": "full"}))
    assert certify.variable == "certify_level" and certify.nodes == () and certify.roles == ()
    assert munge.nodes == tuple(HOSTS) and munge.restarts == ("munge",)


def test_a_hosts_own_change_is_one_per_variable_and_values_and_addresses_go_wide():
    hosts = {**HOSTS, "cn01": {**HOSTS["cn01"], "node_gpu_count": 8}, "cn02": {**HOSTS["cn02"], "node_gpu_count": 8},
             "ctl01": {**HOSTS["ctl01"], "ansible_host": "10.0.0.20"}}
    changes = {c.variable: c for c in compare(settings(), settings(hosts=hosts))}
    assert changes["node_gpu_count"].nodes == ("cn01", "cn02") and changes["node_gpu_count"].before is None
    assert changes["ansible_host"].nodes == tuple(HOSTS)  # the controller's address is in every node's files


def test_nodes_joining_or_leaving_are_not_setting_changes():
    grown = {**HOSTS, "cn03": {**HOSTS["cn02"], "ansible_host": "10.0.0.14"}}
    shrunk = {k: v for k, v in HOSTS.items() if k != "cn02"}
    assert compare(settings(), settings(hosts=grown)) == []
    assert compare(settings(), settings(hosts=shrunk)) == []


def test_a_host_that_changes_groups_is_reached_itself():
    moved = {**HOSTS, "st01": {**HOSTS["st01"], GROUPS: ["compute", "nodegroup_st", "storage"]}}
    (change,) = compare(settings(), settings(hosts=moved))
    assert change.variable == GROUPS and change.nodes == ("st01",)


def test_a_list_of_people_accounts_or_qos_changes_entry_by_entry():
    alice = {"name": "alice", "uid": 2001, "shell": "/bin/bash", "ssh_public_keys": ["ssh-ed25519 A a"]}
    carol = {"name": "carol", "uid": 2003, "shell": "/bin/bash", "ssh_public_keys": []}
    dave = {"name": "dave", "uid": 2004, "shell": "/bin/bash", "ssh_public_keys": []}
    before, after = [alice, carol], [{**alice, "shell": "/usr/bin/zsh", "ssh_public_keys": []}, dave]
    changes = compare(settings({"users_list": before}), settings({"users_list": after}))
    assert changes[0].entries == ["carol: removed", "dave: added",
                                  'alice: shell /bin/bash -> /usr/bin/zsh, ssh_public_keys ["ssh-ed25519 A a"] -> []']
    assert changes[0].as_dict()["entries"] == changes[0].entries
    physics = {"name": "physics", "parent": "root", "max_jobs": 20, "grp_tres": {}}
    assert named_entry_changes([physics], [{**physics, "max_jobs": None, "grp_tres": {"cpu": 64}}]) == [
        'physics: max_jobs 20 -> (unset), grp_tres {} -> {"cpu":64}']
    assert named_entry_changes(None, [physics]) == ["physics: added"]


def test_values_that_are_not_lists_of_named_records_have_no_entries():
    assert named_entry_changes(300, 120) == []
    assert named_entry_changes({"KillWait": "30"}, {"KillWait": "60"}) == []
    assert named_entry_changes(["a"], ["b"]) == []
    assert named_entry_changes([{"uid": 1}], [{"uid": 2}]) == []
