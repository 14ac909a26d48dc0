"""Golden files for the shared_mount role's client configuration, rendered by real Ansible templating."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
GOLDEN = Path(__file__).parent / "golden"
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"

CASES = {
    "glusterfs": {"filesystem_type": "glusterfs", "filesystem_volume": "shared"},
    "lustre-fsx": {"filesystem_type": "lustre", "filesystem_server": "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
                   "filesystem_remote_path": "abcdefgh", "filesystem_mount_point": "/fsx"},
    "lustre-onprem": {"filesystem_type": "lustre", "filesystem_server": "mgs01", "filesystem_remote_path": "scratch",
                      "shared_mount_extra_options": "localflock"},
    "beegfs": {"filesystem_type": "beegfs", "filesystem_server": "beegfs-mgmt01", "filesystem_mount_point": "/beegfs"},
    "nfs": {"filesystem_type": "nfs", "filesystem_server": "nas01", "filesystem_remote_path": "/export/home",
            "filesystem_mount_point": "/home/shared"},
}

PLAYBOOK = """\
- name: Render the shared filesystem client configuration
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Render through the role
      ansible.builtin.include_role:
        name: shared_mount
        tasks_from: render
"""


def _render(tmp_path: Path, variables: dict) -> dict[str, str]:
    out = tmp_path / "out"
    out.mkdir()
    inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local",
                                                 "ansible_python_interpreter": sys.executable}},
                         "children": {"storage": {"hosts": {"fs01": {}, "fs02": {}, "fs03": {}}}},
                         "vars": {**variables, "shared_mount_render_dir": str(out)}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    env = {**os.environ, "ANSIBLE_ROLES_PATH": str(REPO / "playbooks" / "roles"), "ANSIBLE_NOCOLOR": "1"}
    result = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:]
    return {p.name: p.read_text() for p in sorted(out.iterdir())}


@pytest.mark.parametrize("case", sorted(CASES))
def test_client_configuration_matches_golden_files(tmp_path, case):
    rendered = _render(tmp_path, CASES[case])
    expected_dir = GOLDEN / case
    if os.environ.get("UPDATE_GOLDEN") == "1":
        expected_dir.mkdir(parents=True, exist_ok=True)
        for name, text in rendered.items():
            (expected_dir / name).write_text(text)
    assert rendered == {p.name: p.read_text() for p in sorted(expected_dir.iterdir())}
