"""A run folder keeps no secret: ansible-playbook gets an allow-listed environment, so ansible-runner's command file,
the events, stdout and the fact cache hold none of this process's credentials; secrets read under no_log stay out."""
from __future__ import annotations

import base64
import secrets
import sys
from pathlib import Path

import pytest
import yaml

from provision.adaptors.ansible import PlaybookRun, child_env, run_playbook
from provision.deploy.events import EventTracker

REPO = Path(__file__).resolve().parents[3]
CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GITHUB_TOKEN")
# The shape of the munge role: the key read on the control node under no_log, then handed to a command on stdin.
PLAY = """\
- name: Read this machine's environment and a secret
  hosts: localhost
  gather_facts: true
  gather_subset: [env]
  tasks:
    - name: Print the environment ansible-playbook runs with
      ansible.builtin.command: env
      changed_when: false
    - name: Read the secret on the control node
      ansible.builtin.slurp:
        src: "{{ secret_file }}"
      register: _secret
      no_log: true
    - name: Hand the secret to a command on stdin
      ansible.builtin.shell:
        cmd: base64 -d | wc -c
        stdin: "{{ _secret.content }}"
      changed_when: false
      no_log: true
"""


@pytest.fixture
def credentials(monkeypatch) -> dict[str, str]:
    """Unique values in this process's environment for every credential, and a locale variable that must pass."""
    values = {name: f"{name.lower()}-{secrets.token_hex(16)}" for name in CREDENTIALS}
    values["LC_PROVISION_TEST"] = f"passes-{secrets.token_hex(8)}"
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def files_holding(folder: Path, needles: list[bytes]) -> dict[str, list[str]]:
    """Every file under the folder that contains one of the byte strings: {path: [needles found]}."""
    found = {}
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            hits = [needle.decode() for needle in needles if needle in data]
            if hits:
                found[str(path.relative_to(folder))] = hits
    return found


def test_the_run_folder_holds_no_credential_from_the_environment_nor_a_no_log_secret(tmp_path, credentials):
    secret = secrets.token_bytes(64)
    (tmp_path / "secret").write_bytes(secret)
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "play.yml").write_text(PLAY)
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    run = PlaybookRun(private_data_dir=tmp_path / "run", project_dir=tmp_path / "project", playbook="play.yml",
                      inventory=tmp_path / "hosts.yml", ansible_cfg=tmp_path / "ansible.cfg",
                      extra_vars={"secret_file": str(tmp_path / "secret")})

    outcome = run_playbook(run, EventTracker())

    assert outcome.rc == 0, [p.read_text()[-2000:] for p in (run.private_data_dir / "artifacts").glob("*/stdout")]
    marker = credentials.pop("LC_PROVISION_TEST").encode()
    # the control: what the environment passes is recorded (the command file, the events of `env` and the facts)
    recorded = {next(part for part in ("job_events", "fact_cache", Path(p).name) if part in p)
                for p in files_holding(run.private_data_dir, [marker])}
    assert {"command", "job_events", "fact_cache"} <= recorded, recorded
    forms = [secret, base64.b64encode(secret), secret.hex().encode()]
    assert files_holding(run.private_data_dir, [v.encode() for v in credentials.values()] + forms) == {}


def test_the_child_environment_keeps_the_session_and_ours_and_drops_the_rest():
    prepared = {"HOME": "/home/u", "PATH": "/usr/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "SSH_AUTH_SOCK": "/run/a",
                "AWS_SECRET_ACCESS_KEY": "s", "GOOGLE_APPLICATION_CREDENTIALS": "/k.json", "VAULT_TOKEN": "t",
                "ANSIBLE_SSH_ARGS": "-o StrictHostKeyChecking=no", "ANSIBLE_HOST_KEY_CHECKING": "False",
                "ANSIBLE_STDOUT_CALLBACK": "awx_display", "AWX_ISOLATED_DATA_DIR": "/run/art"}
    ours = {"PATH": "/venv/bin:/usr/bin", "ANSIBLE_CONFIG": "/state/ansible.cfg", "ANSIBLE_HOST_KEY_CHECKING": "True"}
    assert child_env(prepared, ours) == {
        "HOME": "/home/u", "LANG": "C.UTF-8", "LC_ALL": "C", "SSH_AUTH_SOCK": "/run/a",
        "ANSIBLE_STDOUT_CALLBACK": "awx_display", "AWX_ISOLATED_DATA_DIR": "/run/art", **ours}


def tasks_in(items: list[dict]) -> list[dict]:
    """Every task of a task file, blocks opened."""
    found = []
    for item in items or []:
        nested = [t for key in ("block", "rescue", "always") if isinstance(item.get(key), list) for t in item[key]]
        found += tasks_in(nested) if nested else [item]
    return found


def test_roles_handle_the_cluster_secrets_only_under_no_log():
    """Every task that reads or carries the munge key, the database password or the directory's bind password hides its
    arguments and result (a stat of the file or an assert naming its path carries neither)."""
    carriers = ("_munge_key_content", "{{ munge_key_file }}", "slurm_accounting_db_password_file)", "slurmdbd.conf.j2",
                "sssd_ldap_bind_password_file,", "| sssd_conf")
    checked = []
    for path in (REPO / "playbooks" / "roles").glob("*/tasks/*.yml"):
        for task in tasks_in(yaml.safe_load(path.read_text())):
            if {"ansible.builtin.stat", "ansible.builtin.assert"} & set(task):
                continue
            if any(word in yaml.safe_dump(task) for word in carriers):
                checked.append(task["name"])
                assert task.get("no_log") is True, f"{path.relative_to(REPO)}: {task['name']!r} lacks no_log: true"
    assert {"Read the cluster's munge key on the control node", "Install the cluster's munge key",
            "Create the accounting database and its user", "Render slurmdbd.conf (holds the database password)",
            "Render the directory's SSSD domain (holds the bind password)"} <= set(checked)
