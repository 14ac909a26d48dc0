"""The glusterfs_server role's filters (playbooks/roles/glusterfs_server/filter_plugins/gluster.py): the role decides
whether to probe a peer, wait, create or start the volume from what they read out of the gluster CLI's XML. A wrong
reading would skip the volume's start or probe a peer twice, so they are pinned against answers recorded from
glusterfs 11.1 (tests/fixtures/gluster/), and anything else fails instead of reading as "absent"."""
from __future__ import annotations

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
        "bricks": ["store01:/data/glusterfs/shared/brick", "store02:/data/glusterfs/shared/brick"]}


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
