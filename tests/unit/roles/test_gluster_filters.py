"""The glusterfs_server role's filters (playbooks/roles/glusterfs_server/filter_plugins/gluster.py): the role decides
whether to probe a peer, wait, create or start the volume from what they read out of the gluster CLI's XML. A wrong
reading would skip the volume's start or probe a peer twice, so they are pinned against answers recorded from
glusterfs 11.1 (tests/fixtures/gluster/), and anything else fails instead of reading as "absent"."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from role_plugins import load_plugin

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "playbooks" / "roles" / "glusterfs_server"
ANSWERS = REPO / "tests" / "fixtures" / "gluster"


def _load():
    return load_plugin(ROLE / "filter_plugins" / "gluster.py", "gluster_filters")


gluster = _load()


def answer(name: str) -> str:
    return (ANSWERS / name).read_text()


def test_the_pool_lists_each_peer_with_its_names_and_whether_it_is_connected():
    assert gluster.gluster_peers(answer("pool-list.xml")) == [
        {"hostname": "store02", "hostnames": ["store02"], "uuid": "a4f6bcf7-d654-4151-9ce7-4803b17918c0",
         "connected": True},
        {"hostname": "localhost", "hostnames": ["localhost"], "uuid": "32af8a20-c9be-47c8-8d6d-904989b081e5",
         "connected": True}]
    assert [p["hostname"] for p in gluster.gluster_peers(answer("pool-list-store02.xml"))] == ["store01", "localhost"]


def test_a_peer_whose_glusterd_is_down_reads_as_not_connected():
    peers = gluster.gluster_peers(answer("pool-list-disconnected.edited.xml"))
    assert [(p["hostname"], p["connected"]) for p in peers] == [("store02", False), ("localhost", True)]


def test_a_node_alone_knows_only_itself():
    assert [p["hostname"] for p in gluster.gluster_peers(answer("pool-list-alone.edited.xml"))] == ["localhost"]


def test_the_volume_reads_as_started_replicated_with_its_bricks():
    assert gluster.gluster_volume(answer("volume-info-started.xml"), "shared") == {
        "name": "shared", "status": "Started", "started": True, "type": "Replicate", "replica": 2,
        "bricks": ["store01:/data/glusterfs/shared/brick", "store02:/data/glusterfs/shared/brick"],
        "options": {"cluster.granular-entry-heal": "on", "storage.fips-mode-rchecksum": "on",
                    "transport.address-family": "inet", "nfs.disable": "on", "performance.client-io-threads": "off"}}


def test_the_volume_reads_the_options_set_on_it():
    options = gluster.gluster_volume(answer("volume-info-quorum.edited.xml"), "shared")["options"]
    assert options["cluster.quorum-type"] == "auto" and len(options) == 6


def test_a_created_volume_is_not_started():
    volume = gluster.gluster_volume(answer("volume-info-created.edited.xml"), "shared")
    assert (volume["status"], volume["started"]) == ("Created", False)


def test_a_volume_gluster_does_not_know_is_none_although_the_cli_exits_0():
    assert gluster.gluster_volume(answer("volume-info-missing.xml"), "nosuchvol") is None
    assert gluster.gluster_volume(answer("volume-info-started.xml"), "other") is None


def test_a_login_banner_before_the_answer_is_passed_over():
    banner = '"System is booting up. Unprivileged users are not permitted to log in yet."\n'
    assert gluster.gluster_volume(banner + answer("volume-info-started.xml"), "shared")["started"] is True


@pytest.mark.parametrize("text", ["", "Connection failed. Please check if gluster daemon is operational.\n",
                                  "<?xml version='1.0'?><cliOutput><opRet>0</opRet>", "<?xml version='1.0'?><other/>"])
def test_anything_but_an_answer_fails_with_what_came_back(text):
    with pytest.raises(AnsibleFilterError, match="gluster pool list"):
        gluster.gluster_peers(text)
    with pytest.raises(AnsibleFilterError, match="gluster volume info shared"):
        gluster.gluster_volume(text, "shared")


def test_an_answer_reporting_another_error_fails_with_its_message():
    text = answer("volume-info-missing.xml").replace("Volume does not exist", "Locking failed on store02")
    with pytest.raises(AnsibleFilterError, match="Locking failed on store02"):
        gluster.gluster_volume(text, "shared")


def test_the_role_decides_from_the_filters_in_a_real_play(tmp_path):
    """The role's vars and filters through Ansible itself: store01's recorded pool knows store02, so only a new peer
    is probed; the recorded volume is started."""
    play = tmp_path / "play.yml"
    play.write_text(f"""
- hosts: localhost
  gather_facts: false
  roles: []
  vars_files: [{ROLE}/vars/main.yml]
  vars:
    glusterfs_server_volume: shared
    _glusterfs_server_pool: {{stdout: "{{{{ lookup('file', '{ANSWERS}/pool-list.xml') }}}}"}}
    _glusterfs_server_volume_info: {{stdout: "{{{{ lookup('file', '{ANSWERS}/volume-info-started.xml') }}}}"}}
  tasks:
    - ansible.builtin.assert:
        that:
          - "'store02' in _glusterfs_server_pool_names and 'store03' not in _glusterfs_server_pool_names"
          - _glusterfs_server_volume_found.started
""")
    env = {"ANSIBLE_FILTER_PLUGINS": str(ROLE / "filter_plugins"), "ANSIBLE_LOCALHOST_WARNING": "false",
           "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           str(play)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


SETTLED = {"pool": answer("pool-list.xml"), "volume": answer("volume-info-started.xml")}


@pytest.mark.parametrize("reads, peers, connected, settled", [
    (SETTLED, ["store02"], 2, True),  # the converged pool of two: nothing to form
    (SETTLED, [], 1, True),  # the other storage node is not in this run
    (SETTLED, ["store02", "store03"], 3, False),  # a storage node the pool does not know yet: probe it
    (SETTLED, ["store02"], 3, False),  # fewer connected than the run's storage nodes: wait
    ({**SETTLED, "pool": answer("pool-list-disconnected.edited.xml")}, ["store02"], 2, False),
    ({**SETTLED, "volume": answer("volume-info-created.edited.xml")}, ["store02"], 2, False),  # created, not started
    ({**SETTLED, "volume": answer("volume-info-missing.xml")}, ["store02"], 2, False),  # no volume yet
    ({**SETTLED, "pool": None}, ["store02"], 2, False),  # glusterd did not answer the probe
    ({**SETTLED, "volume": None}, ["store02"], 2, False),
    ({}, [], 1, False),  # not the first storage node: nothing was read
    (None, [], 1, False),
])
def test_the_first_node_is_settled_only_when_nothing_could_change(reads, peers, connected, settled):
    assert gluster.gluster_settled(reads, "shared", peers, connected) is settled


def test_a_probe_answer_that_is_not_the_clis_xml_fails_rather_than_reading_as_settled():
    with pytest.raises(AnsibleFilterError, match="pool list"):
        gluster.gluster_settled({**SETTLED, "pool": "glusterd is not running"}, "shared", [], 1)


QUORUM = {"cluster.quorum-type": "auto"}


@pytest.mark.parametrize("volume, options, settled", [
    ("volume-info-quorum.edited.xml", QUORUM, True),  # quorum set: nothing to do
    ("volume-info-quorum.edited.xml", {**QUORUM, "nfs.disable": "on"}, True),
    ("volume-info-quorum.edited.xml", {}, True),  # a distributed volume wants none
    ("volume-info-started.xml", QUORUM, False),  # gluster's default (none) is not listed: set it
    ("volume-info-quorum.edited.xml", {"cluster.quorum-type": "fixed"}, False),  # another value
    ("volume-info-started.xml", {"performance.client-io-threads": "on"}, False),
])
def test_the_first_node_is_settled_only_when_every_wanted_option_has_its_value(volume, options, settled):
    reads = {**SETTLED, "volume": answer(volume)}
    assert gluster.gluster_settled(reads, "shared", ["store02"], 2, options) is settled


def test_option_values_are_compared_as_strings():
    reads = {**SETTLED, "volume": answer("volume-info-started.xml")}
    assert gluster.gluster_settled(reads, "shared", [], 1, {"nfs.disable": "on"}) is True
    assert gluster.gluster_settled(reads, "shared", [], 1, {"nfs.disable": True}) is False  # YAML's on is not "on"


def test_only_the_options_that_differ_are_set_and_all_of_them_on_a_new_volume():
    volume = gluster.gluster_volume(answer("volume-info-started.xml"), "shared")
    wanted = {"nfs.disable": "on", "cluster.quorum-type": "auto", "performance.client-io-threads": "on"}
    assert gluster.gluster_options_to_set(volume, wanted) == [
        {"name": "cluster.quorum-type", "value": "auto"}, {"name": "performance.client-io-threads", "value": "on"}]
    assert gluster.gluster_options_to_set(None, QUORUM) == [{"name": "cluster.quorum-type", "value": "auto"}]
    assert gluster.gluster_options_to_set(volume, {}) == []


def test_a_hostile_option_value_stays_data():
    """A value read from the volume, or wanted, is a string compared and handed on whole (one argv element): never
    parsed, split or quoted for a shell."""
    hostile = "auto; rm -rf / #$(reboot)`id`"
    text = answer("volume-info-quorum.edited.xml").replace("<value>auto</value>", f"<value>{hostile}</value>")
    volume = gluster.gluster_volume(text, "shared")
    assert volume["options"]["cluster.quorum-type"] == hostile
    assert gluster.gluster_options_to_set(volume, QUORUM) == [{"name": "cluster.quorum-type", "value": "auto"}]
    assert gluster.gluster_options_to_set(volume, {"cluster.quorum-type": hostile}) == []
    assert gluster.gluster_options_to_set(None, {"cluster.quorum-type": hostile}) == [
        {"name": "cluster.quorum-type", "value": hostile}]


def _play(tmp_path, tasks: str, extra_vars: str) -> subprocess.CompletedProcess:
    """A play on localhost with the role's defaults, vars and filters (Ansible itself templating them), and
    `extra_vars` (YAML) given as the inventory would."""
    given = tmp_path / "given.yml"
    given.write_text(extra_vars)
    play = tmp_path / "play.yml"
    play.write_text(f"""
- hosts: localhost
  gather_facts: false
  vars_files: [{ROLE}/defaults/main.yml, {ROLE}/vars/main.yml]
  vars:
    _glusterfs_server_volume_info: {{stdout: "{{{{ lookup('file', '{ANSWERS}/volume-info-started.xml') }}}}"}}
  tasks:
{tasks}
""")
    env = {"ANSIBLE_FILTER_PLUGINS": str(ROLE / "filter_plugins"), "ANSIBLE_LOCALHOST_WARNING": "false",
           "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false", "PATH": "/usr/bin:/bin"}
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", f"@{given}", str(play)], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("replica, options", [(2, {"cluster.quorum-type": "auto"}), (3, {"cluster.quorum-type": "auto"}),
                                              (0, {}), (1, {})])
def test_a_replicated_volume_gets_client_quorum_by_default_and_the_recorded_volume_lacks_it(tmp_path, replica, options):
    """The default is the role's interface: replica 2 and up want cluster.quorum-type auto, which the recorded volume
    (gluster's defaults) does not list, so the task sets it; a distributed volume wants nothing."""
    wanted = [{"name": k, "value": v} for k, v in options.items()]
    done = _play(tmp_path, """
    - ansible.builtin.assert:
        that:
          - glusterfs_server_volume_options == _want_options
          - _glusterfs_server_bad_option_names == []
          - (_glusterfs_server_volume_found | gluster_options_to_set(glusterfs_server_volume_options)) == _want_set
""", f"filesystem_replica: {replica}\n_want_options: {json.dumps(options)}\n_want_set: {json.dumps(wanted)}")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_an_option_name_that_is_not_one_is_named(tmp_path):
    done = _play(tmp_path, """
    - ansible.builtin.assert:
        that: _glusterfs_server_bad_option_names == ['quorum', 'a.b c', 'x;y.z']
""", """glusterfs_server_volume_options: {cluster.quorum-type: auto, quorum: auto, "a.b c": "1", "x;y.z": "1",
                                  performance.cache-size: 64MB}""")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
