"""The roles as a whole: ansible-lint's production profile, and check mode that tells the truth.

`provision deploy --check` is a drift detector, so in check mode:
- every read-only command (changed_when: false) must run (check_mode: false) or be a verification skipped in check
  mode (when: not ansible_check_mode): a skipped probe answers nothing, and a retry loop on it waits out its retries;
- a command that would have changed something is reported (playbooks/callback_plugins/gpu_provision_would_run.py).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
ROLES = REPO / "playbooks" / "roles"
BIN = Path(sys.executable).parent


def _tasks(items):
    for task in items or []:
        if "block" in task:
            yield from _tasks(task["block"])
            yield from _tasks(task.get("rescue"))
            yield from _tasks(task.get("always"))
        else:
            yield task


def test_ansible_lint_passes_at_the_production_profile():
    result = subprocess.run([str(BIN / "ansible-lint"), "--profile", "production", "playbooks/"], cwd=REPO,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]


def test_every_read_only_command_answers_in_check_mode():
    silent = []
    for path in sorted(ROLES.glob("*/tasks/*.yml")):
        for task in _tasks(yaml.safe_load(path.read_text())):
            command = any(key.split(".")[-1] in ("command", "shell") for key in task)
            skipped_in_check = "ansible_check_mode" in str(task.get("when", ""))
            if command and task.get("changed_when") is False and "check_mode" not in task and not skipped_in_check:
                silent.append(f"{path.relative_to(REPO)}: {task['name']}")
    assert silent == []


PLAYBOOK = """\
- name: Check mode's commands
  hosts: localhost
  gather_facts: false
  tasks:
    - name: A command that would change something
      ansible.builtin.command: touch {marker}
      changed_when: true
    - name: A command whose condition is false
      ansible.builtin.command: touch {marker}
      when: false
    - name: A read-only probe
      ansible.builtin.command: "true"
      changed_when: false
      check_mode: false
"""


def test_the_callback_reports_commands_that_would_run_and_nothing_else(tmp_path):
    marker, record = tmp_path / "marker", tmp_path / "would_run.jsonl"
    (tmp_path / "play.yml").write_text(PLAYBOOK.format(marker=marker))
    (tmp_path / "ansible.cfg").write_text(f"[defaults]\ncallback_plugins = {REPO / 'playbooks/callback_plugins'}\n"
                                          "callbacks_enabled = gpu_provision_would_run\n")
    env = {**os.environ, "ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg"), "GPU_PROVISION_WOULD_RUN_FILE": str(record)}
    result = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", "--check",
                             "-e", f"ansible_python_interpreter={sys.executable}", str(tmp_path / "play.yml")],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:]
    assert [json.loads(line) for line in record.read_text().splitlines()] == [
        {"host": "localhost", "task": "A command that would change something"}]
    assert not marker.exists()
