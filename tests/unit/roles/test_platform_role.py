"""The platform role for real (ansible-playbook, local connection): each host reads its own os-release file; a
supported release passes and loads its vars file, any other OS is refused in exactly the words preflight uses
(provision.node.platforms), and in a later play the dependency costs one task however many roles list it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from provision.node import platforms

REPO = Path(__file__).resolve().parents[3]
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"

OS_RELEASE = {
    "bookworm": 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n',
    "trixie": "PRETTY_NAME='Debian GNU/Linux 13 (trixie)'\nNAME='Debian GNU/Linux'\nVERSION_ID='13'\nID=debian\n",
    "noble": 'NAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\nID_LIKE=debian\nPRETTY_NAME="Ubuntu 24.04.1 LTS"\n',
    "rocky": 'NAME="Rocky Linux"\nVERSION="9.4 (Blue Onyx)"\nID="rocky"\nID_LIKE="rhel centos fedora"\n'
             'VERSION_ID="9.4"\nPRETTY_NAME="Rocky Linux 9.4 (Blue Onyx)"\n',
    "bullseye": 'PRETTY_NAME="Debian GNU/Linux 11 (bullseye)"\nNAME="Debian GNU/Linux"\nVERSION_ID="11"\nID=debian\n',
    "focal": 'NAME="Ubuntu"\nVERSION_ID="20.04"\nID=ubuntu\nPRETTY_NAME="Ubuntu 20.04.6 LTS"\n',
    "sid": 'PRETTY_NAME="Debian GNU/Linux trixie/sid"\nNAME="Debian GNU/Linux"\nID=debian\n',
    "empty": "",
}
# What each supported host must have loaded: platform facts only (each role loads its own values per OS).
LOADED = {
    "bookworm": {"platform_release": "Debian-12", "platform_family": "Debian", "platform_slurm_series": "22.05"},
    "trixie": {"platform_release": "Debian-13", "platform_family": "Debian", "platform_slurm_series": "24.11"},
    "noble": {"platform_release": "Ubuntu-24", "platform_family": "Debian", "platform_slurm_series": "23.11"},
}
REFUSED = ["rocky", "bullseye", "focal", "sid", "empty"]

PLAYBOOK = """\
- name: First play, as site.yml's first role would run it
  hosts: all
  gather_facts: false
  roles:
    - role: platform
- name: A later play of the same run
  hosts: all
  gather_facts: false
  roles:  # two roles that depend on platform, tagged differently as in gpu.yml
    - {role: first_user, tags: [first]}
    - {role: second_user, tags: [second]}
  tasks:
    - name: Write what the host has loaded
      ansible.builtin.copy:
        content: "{{ {'loaded': _loaded} | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0644"
      vars:
        _loaded: "{{ dict(keys | zip(keys | map('extract', vars))) }}"
        keys: %s
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("platform")
    hosts = {}
    for name, text in OS_RELEASE.items():
        (tmp / f"{name}.os-release").write_text(text)
        hosts[name] = {"platform_os_release_file": str(tmp / f"{name}.os-release")}
    inventory = {"all": {"hosts": hosts, "vars": {"ansible_connection": "local", "out": str(tmp),
                                                   "ansible_python_interpreter": sys.executable,
                                                   "nvidia_driver_branch": 570}}}
    (tmp / "hosts.yml").write_text(yaml.safe_dump(inventory))
    for role in ("first_user", "second_user"):
        (tmp / "roles" / role / "meta").mkdir(parents=True)
        (tmp / "roles" / role / "meta" / "main.yml").write_text("dependencies: [platform]\n")
    (tmp / "play.yml").write_text(PLAYBOOK % json.dumps(sorted(LOADED["trixie"])))
    env = {**os.environ, "ANSIBLE_ROLES_PATH": f"{REPO / 'playbooks' / 'roles'}:{tmp / 'roles'}",
           "ANSIBLE_CALLBACKS_ENABLED": "tree", "ANSIBLE_CALLBACK_TREE_DIR": str(tmp / "tree"), "ANSIBLE_NOCOLOR": "1"}
    result = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(tmp / "hosts.yml"), str(tmp / "play.yml")],
                            capture_output=True, text=True, cwd=tmp, env=env, timeout=300)
    outcome = {"stdout": result.stdout, "rc": result.returncode}
    for name in OS_RELEASE:  # a host that reached the later play wrote an answer; the tree has its last result
        answer = tmp / f"{name}.json"
        outcome[name] = {"answer": json.loads(answer.read_text()) if answer.exists() else None,
                         "last": json.loads((tmp / "tree" / name).read_text())}
    return outcome


@pytest.mark.parametrize("host", sorted(LOADED))
def test_a_supported_release_passes_and_its_vars_file_holds_for_the_run(run, host):
    assert run[host]["answer"]["loaded"] == LOADED[host]


@pytest.mark.parametrize("host", REFUSED)
def test_an_unsupported_os_is_refused_in_the_words_preflight_uses(run, host):
    expected = platforms.refusal(host, platforms.parse_os_release(OS_RELEASE[host]))
    assert run[host]["answer"] is None  # stopped in the first play: no later task ran on it
    assert run[host]["last"]["assertion"] == "_platform_match is not none" and run[host]["last"]["msg"] == expected
    assert expected.startswith("gpu-provision supports Debian 12, Debian 13 (tested); Ubuntu 22.04, Ubuntu 24.04 "
                               "(untested); ")


def test_the_refusal_names_what_the_node_runs(run):
    assert run["rocky"]["last"]["msg"].endswith("; rocky runs Rocky Linux 9.4")
    assert run["sid"]["last"]["msg"].endswith("; sid runs Debian GNU/Linux")
    assert run["empty"]["last"]["msg"].endswith("; empty runs an OS without /etc/os-release")


def test_a_later_play_ends_the_dependency_at_a_meta_task_however_many_roles_depend_on_it(run):
    """The host was checked in the first play: in the later play each role's dependency ends at `meta: end_role`
    (handled by the strategy on the control node: no worker process, nothing sent to the node) and the check itself
    is not run again."""
    second = run["stdout"].split("PLAY [A later play of the same run]")[1]
    platform_tasks = [line for line in second.splitlines() if line.startswith("TASK [platform : ")]
    assert platform_tasks and all("End the OS check on a host that passed it earlier" in t for t in platform_tasks)
    assert "Read the node's OS" not in second and "Refuse an OS" not in second
    assert run["rc"] != 0  # the refused hosts fail the run


def test_every_role_depends_on_the_platform_role_first():
    """A role without it would run on any OS; listed first, the check comes before anything the role does."""
    roles = REPO / "playbooks" / "roles"
    first = {path.parent.parent.name: ((yaml.safe_load(path.read_text()) or {}).get("dependencies") or [{}])[0]
             for path in roles.glob("*/meta/main.yml") if path.parent.parent.name != "platform"}
    assert {role: dep.get("role") if isinstance(dep, dict) else dep for role, dep in first.items()} == \
        {role: "platform" for role in first}
    assert sorted(first) == sorted(p.name for p in roles.iterdir() if p.is_dir() and p.name != "platform")
