"""The slurm role's site-repository files as tasks/repository.yml writes them (deb822 source with Signed-By, pin,
keyring), shown by real Ansible in --check --diff on this machine: its read-only probe runs, nothing is written (the
files' paths point into a temporary directory anyway), apt is not called."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
KEY = REPO / "tests" / "fixtures" / "slurm_repository" / "site-key.asc"
FPR = "53EF24C03C61808FECDFCA64274B4CB61408D2C1"
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
PLAYBOOK = """\
- name: The site repository's files, in check mode
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Run the slurm role's repository tasks
      ansible.builtin.include_role: {name: slurm, tasks_from: repository}
"""


def _files(tmp_path: Path, **variables) -> dict[str, str]:
    """Each file the role would write (path -> its text), read from the --diff of a check-mode run."""
    paths = {name: str(tmp_path / name) for name in ("keyring.asc", "slurm.sources", "slurm.pref")}
    values = {"slurm_package_source": "repository", "slurm_repository_url": "https://slurm.example.internal/debian",
              "slurm_repository_key": KEY.read_text(), "slurm_repository_key_fingerprint": FPR,
              "slurm_repository_version": "24.11.5-1", "slurm_config_dir": str(tmp_path),
              "slurm_repository_keyring": paths["keyring.asc"], "slurm_repository_source_file": paths["slurm.sources"],
              "slurm_repository_pin_file": paths["slurm.pref"], **variables}
    (tmp_path / "vars.json").write_text(json.dumps(values))
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    inventory = {"all": {"children": {"compute": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_ROLES_PATH": str(REPO / "playbooks" / "roles"),
           "ANSIBLE_HOME": str(tmp_path / "ansible-home")}
    result = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
                             "--check", "--diff", "-e", f"@{tmp_path / 'vars.json'}"],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]
    assert not list(tmp_path.glob("slurm.*")) and not (tmp_path / "keyring.asc").exists()  # check mode wrote nothing
    return {Path(path).name: text for path, text in _after(result.stdout).items()}


def _after(output: str) -> dict[str, str]:
    """The new text of each file in a unified --diff ("+++ after: PATH", then "+" lines)."""
    files, current = {}, None
    for line in output.splitlines():
        if line.startswith("+++ after: "):
            current = line.removeprefix("+++ after: ")
            files[current] = ""
        elif current and line.startswith("+"):
            files[current] += line[1:] + "\n"
        elif current and not line.startswith(("@@", "-")):
            current = None
    return files


def test_the_source_trusts_its_own_keyring_and_the_fingerprint(tmp_path):
    files = _files(tmp_path, slurm_repository_suite="bookworm", slurm_repository_components=["main", "contrib"])
    assert files["slurm.sources"] == (
        "# Written by gpu-provision (slurm role): the site's Slurm repository, trusted with its own key only.\n"
        "Types: deb\nURIs: https://slurm.example.internal/debian\nSuites: bookworm\nComponents: main contrib\n"
        f"Signed-By: {tmp_path / 'keyring.asc'} {FPR}\n")
    assert files["keyring.asc"] == KEY.read_text()


def test_the_pin_holds_every_roles_packages_at_the_version_at_1001(tmp_path):
    files = _files(tmp_path, slurm_client_packages=["slurm-smd-client"], slurm_compute_packages=["slurm-smd-slurmd"],
                   slurm_controller_packages=["slurm-smd-slurmctld"],
                   slurm_accounting_packages=["slurm-smd-slurmdbd", "mariadb-server"])
    assert files["slurm.pref"] == (
        "# Written by gpu-provision (slurm role): Slurm from the site's repository at exactly this version.\n"
        "Package: slurm* libslurm* libpmi0* libpmi2-0* libpam-slurm* libnss-slurm* sview* slurm-smd-client "
        "slurm-smd-slurmctld slurm-smd-slurmdbd slurm-smd-slurmd\nPin: version 24.11.5-1\nPin-Priority: 1001\n")


@pytest.mark.parametrize("suite, components", [("./", None), ("", "absent")])
def test_a_flat_repository_has_no_components_and_the_default_suite_is_the_nodes_codename(tmp_path, suite, components):
    files = _files(tmp_path, slurm_repository_suite=suite, slurm_repository_key_fingerprint="")
    source = files["slurm.sources"]
    assert f"Signed-By: {tmp_path / 'keyring.asc'}\n" in source  # no fingerprint: the keyring alone
    if suite:
        assert "Suites: ./\n" in source and "Components" not in source
    else:
        release = Path("/etc/os-release").read_text()
        codename = re.search(r"^VERSION_CODENAME=\"?([a-z]+)", release, re.MULTILINE).group(1)
        assert f"Suites: {codename}\nComponents: main\n" in source
