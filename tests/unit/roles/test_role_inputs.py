"""Platform's role_inputs action: every role's variables from the inventory and extra vars checked against the roles'
argument specs once per run, on the control node, instead of one validation task per role and host (issue 37, deploy
speed). Run through ansible-playbook on local hosts: nothing connects anywhere."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ansible_runner
import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
ROLES = REPO / "playbooks" / "roles"
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
PLAY = [{"name": "Check the roles' variables", "hosts": "all", "gather_facts": False,
         "tasks": [{"name": "Check them", "ansible.builtin.import_role": {"name": "platform", "tasks_from": "inputs"}},
                   {"name": "Runs only when the check passed", "ansible.builtin.debug": {"msg": "after"}}]}]


def _inventory(tmp_path: Path, hosts: int, group_vars: dict, host_vars: dict | None = None) -> Path:
    names = [f"gpu{index:04d}" for index in range(hosts)]
    data = {"all": {"hosts": {name: (host_vars or {}).get(name) for name in names},
                    "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                             **group_vars}}}
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def _run(tmp_path: Path, inventory: Path, extra: dict | None = None) -> tuple[int, dict]:
    """(exit status, task name -> host -> result), from ansible-runner's events."""
    (tmp_path / "play.yml").write_text(yaml.safe_dump(PLAY, sort_keys=False))
    (tmp_path / "runner").mkdir()
    done = ansible_runner.run(private_data_dir=str(tmp_path / "runner"), playbook=str(tmp_path / "play.yml"),
                              inventory=str(inventory), extravars=extra, quiet=True,
                              envvars={"ANSIBLE_ROLES_PATH": str(ROLES), "ANSIBLE_FORKS": "5",
                                       "PATH": f"{ANSIBLE_PLAYBOOK.parent}:{os.environ['PATH']}"})
    tasks: dict[str, dict] = {}
    for event in done.events:
        if event["event"] in ("runner_on_ok", "runner_on_failed"):
            data = event["event_data"]
            failed = event["event"] == "runner_on_failed"
            tasks.setdefault(data["task"], {})[data["host"]] = {**data["res"], "failed": failed}
    return done.rc, tasks


GOOD = {"slurm_health_interval": 300, "nvidia_driver_branch": "550", "common_manage_etc_hosts": True}


def test_a_large_inventory_with_one_variable_set_is_checked_once_and_the_play_goes_on(tmp_path):
    rc, tasks = _run(tmp_path, _inventory(tmp_path, 300, GOOD))
    assert rc == 0, tasks
    [check] = [hosts for name, hosts in tasks.items() if name.startswith("Check every host's role variables")]
    [(host, result)] = check.items()  # run once, for all hosts
    assert (result["checked"], result["distinct"]) == (300, 1) and not result.get("failed")
    assert len(tasks["Runs only when the check passed"]) == 300


def test_a_wrong_value_on_one_host_stops_the_run_naming_host_role_variable_and_expectation(tmp_path):
    inventory = _inventory(tmp_path, 50, GOOD, {"gpu0042": {"slurm_health_interval": "hourly"}})
    rc, tasks = _run(tmp_path, inventory)
    assert rc != 0
    [result] = next(hosts for name, hosts in tasks.items() if name.startswith("Check every host's")).values()
    assert result["failed"] and result["distinct"] == 2
    assert "gpu0042: slurm: " in result["msg"] and "slurm_health_interval" in result["msg"], result["msg"]
    assert "int" in result["msg"] and "gpu0041" not in result["msg"]
    assert "Runs only when the check passed" not in tasks


def test_a_wrong_extra_var_is_named_for_the_first_hosts_and_counted_for_the_rest(tmp_path):
    rc, tasks = _run(tmp_path, _inventory(tmp_path, 30, GOOD), {"common_manage_etc_hosts": "perhaps"})
    [result] = next(hosts for name, hosts in tasks.items() if name.startswith("Check every host's")).values()
    assert rc != 0 and result["failed"] and result["distinct"] == 1  # an extra var is the same on every host
    assert result["msg"].startswith("role_inputs: 1 role variable(s) do not match the roles' argument specs: gpu0000: "
                                    "common: "), result["msg"]
    assert "common_manage_etc_hosts" in result["msg"] and "bool" in result["msg"]


def test_every_host_with_its_own_template_is_templated_for_itself(tmp_path):
    """A value templated from the host (its name) differs from host to host: no host is skipped as a repeat."""
    variables = {**GOOD, "slurm_health_interval": "{{ 300 if inventory_hostname != 'gpu0007' else 'never' }}"}
    rc, tasks = _run(tmp_path, _inventory(tmp_path, 12, variables))
    [result] = next(hosts for name, hosts in tasks.items() if name.startswith("Check every host's")).values()
    assert rc != 0 and result["distinct"] == 12 and result["failed"]
    assert "gpu0007: slurm: " in result["msg"] and "gpu0006" not in result["msg"]


def test_a_value_that_needs_a_role_s_own_variables_is_left_to_the_role(tmp_path):
    variables = {**GOOD, "slurm_health_interval": "{{ slurm_some_default_of_the_role }}"}
    rc, tasks = _run(tmp_path, _inventory(tmp_path, 3, variables))
    assert rc == 0 and len(tasks["Runs only when the check passed"]) == 3, tasks


def test_the_site_playbook_has_no_per_role_validation_task_and_one_check(tmp_path):
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1"}
    listed = subprocess.run([str(ANSIBLE_PLAYBOOK), "--list-tasks", "-i", str(REPO / "inventories" / "sandbox"),
                             str(REPO / "playbooks" / "site.yml")], capture_output=True, text=True, env=env,
                            timeout=120, check=True).stdout
    assert "Validating arguments against arg spec" not in listed
    assert listed.count("Check every host's role variables against the roles' argument specs") == 1


@pytest.mark.parametrize("spec_file", sorted(ROLES.glob("*/meta/argument_specs.yml")), ids=lambda p: p.parts[-3])
def test_the_action_reads_every_role_s_spec(spec_file):
    sys.path.insert(0, str(REPO / "tests" / "unit"))
    from role_plugins import load_plugin
    plugin = load_plugin(ROLES / "platform" / "action_plugins" / "role_inputs.py", "role_inputs_plugin")
    options = plugin.role_options(str(ROLES))
    assert options[spec_file.parts[-3]] == yaml.safe_load(spec_file.read_text())["argument_specs"]["interface"][
        "options"]
