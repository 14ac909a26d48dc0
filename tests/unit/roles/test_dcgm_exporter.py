"""The dcgm role's exporter settings: the counters file as NVIDIA's dcgm-exporter reads it, holding exactly the DCGM
names of the metrics catalogue, and the drop-in for the package's unit, rendered by real Ansible templating (an
undefined variable fails the render) with the action the role writes it with, from the role's defaults and vars."""
from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from provision.certify.probe.metrics import catalogue
from provision.node import compat

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "playbooks/roles/dcgm"
COUNTERS = ROLE / "files/dcgm-exporter-counters.csv"
GOLDEN = Path(__file__).parent / "golden" / "dcgm"
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
TYPES = {"gauge", "counter"}  # dcgm-exporter also takes histogram, summary and label; our series are these two

PLAYBOOK = """\
- name: Render the dcgm role's exporter drop-in
  hosts: gpu
  gather_facts: false
  vars_files: [{role_vars}]
  tasks:
    - name: Render the drop-in with the action the role writes it with
      config_files:
        files: [{{dest: "{{{{ out }}}}/{{{{ inventory_hostname }}}}.conf", template: "{template}"}}]

# The role's restart decision (vars/main.yml) on what node_probe reads before and after the role's write: the files
# rendered by lookups there are the files config_files writes, so a second run finds nothing stale.
- name: Write the exporter's files twice as the role does
  hosts: idem
  gather_facts: false
  vars_files: [{role_vars}]
  tasks:
    - name: Read the files before the first write
      node_probe:
        files: ["{{{{ dcgm_exporter_counters }}}}", "{{{{ _dcgm_exporter_dropin }}}}"]
      register: _dcgm_exporter_state
    - name: Record that the first run would restart the exporter
      ansible.builtin.set_fact:
        first_run_stale: "{{{{ _dcgm_exporter_settings_stale | bool }}}}"
    - name: Write them as tasks/exporter.yml does
      config_files:
        files:
          - {{dest: "{{{{ dcgm_exporter_counters }}}}", content: "{{{{ _dcgm_exporter_counters_text }}}}"}}
          - {{dest: "{{{{ _dcgm_exporter_dropin }}}}", template: nvidia-dcgm-exporter.conf.j2}}
        known: "{{{{ _dcgm_exporter_state.files }}}}"
    - name: Read the files again, as the next run does
      node_probe:
        files: ["{{{{ dcgm_exporter_counters }}}}", "{{{{ _dcgm_exporter_dropin }}}}"]
      register: _dcgm_exporter_state
    - name: Write what each run decided
      ansible.builtin.copy:
        dest: "{{{{ out }}}}/stale.json"
        content: "{{{{ {{'first': first_run_stale, 'second': _dcgm_exporter_settings_stale | bool}} | to_json }}}}"
        mode: "0644"
"""

# host -> (inventory variables, the -a the exporter must get)
HOSTS = {
    "gpu01": ({"ansible_host": "10.0.0.21"}, "10.0.0.21:9400"),
    "gpu02": ({"ansible_host": "10.0.0.22", "dcgm_exporter_listen_address": "192.168.7.22",
               "dcgm_exporter_port": 9500}, "192.168.7.22:9500"),
    "gpu03": ({"ansible_host": "fd00::23"}, "[fd00::23]:9400"),
}


def _counters() -> list[list[str]]:
    """The records as dcgm-exporter reads them: Go's encoding/csv with '#' comments, each field trimmed of spaces."""
    with COUNTERS.open(newline="") as handle:
        lines = [line for line in handle if line.strip() and not line.startswith("#")]
    return [[field.strip(" ") for field in row] for row in csv.reader(lines, strict=True)]


def test_every_counter_is_a_field_a_type_and_a_help_line():
    for record in _counters():
        assert len(record) == 3, record  # a comma in the help text would make a fourth field: the exporter refuses
        name, kind, help_text = record
        assert re.fullmatch(r"DCGM_FI_[A-Z0-9_]+", name) and kind in TYPES and help_text, record
        assert '"' not in "".join(record), record  # Go's reader refuses a bare quote


def test_the_counters_are_exactly_the_catalogues_dcgm_names_each_once():
    names = [record[0] for record in _counters()]
    assert sorted(names) == sorted(set(names)) == sorted(catalogue.DCGM)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("dcgm")
    out = tmp / "out"
    out.mkdir()
    hosts = {host: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, **variables}
             for host, (variables, _) in HOSTS.items()}
    # the role's defaults as group variables: below the hosts' own, as role defaults are below the inventory's
    defaults = yaml.safe_load((ROLE / "defaults/main.yml").read_text())
    idem = {"idem": {**hosts["gpu01"], "dcgm_exporter_counters": str(out / "counters.csv")}}
    (tmp / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"gpu": {"hosts": hosts}, "idem": {"hosts": idem}},
                                                           "vars": {**defaults, "out": str(out)}}}))
    for folder in ("files", "templates"):  # where the lookups of the role's vars look, beside the playbook
        (tmp / folder).symlink_to(ROLE / folder)
    (tmp / "play.yml").write_text(PLAYBOOK.format(role_vars=ROLE / "vars/main.yml",
                                                  template=ROLE / "templates/nvidia-dcgm-exporter.conf.j2"))
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_MANAGED": "Ansible managed (golden)",
           "ANSIBLE_ACTION_PLUGINS": str(REPO / "playbooks/roles/platform/action_plugins")}
    result = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(tmp / "hosts.yml"), str(tmp / "play.yml"),
                             "-e", f"_dcgm_exporter_dropin={out / 'idem.conf'}"],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]
    return {**{host: (out / f"{host}.conf").read_text() for host in [*HOSTS, "idem"]},
            "stale.json": (out / "stale.json").read_text(), "counters.csv": (out / "counters.csv").read_text()}


def test_drop_in_matches_the_golden_file(rendered):
    golden = GOLDEN / "gpu-provision.conf"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(rendered["gpu01"])
    assert rendered["gpu01"] == golden.read_text()


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_exporter_runs_our_counters_on_the_nodes_address_against_the_role_host_engine(rendered, host):
    exec_lines = [line for line in rendered[host].splitlines() if line.startswith("ExecStart=")]
    assert exec_lines == ["ExecStart=",  # clears the package's ExecStart (default counters, every address)
                          "ExecStart=/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/gpu-provision-counters.csv "
                          f"-a {HOSTS[host][1]} -r 127.0.0.1:5555"]


def test_the_exporter_restarts_when_its_files_change_and_not_on_the_next_run(rendered):
    assert json.loads(rendered["stale.json"]) == {"first": True, "second": False}
    assert rendered["counters.csv"] == COUNTERS.read_text()  # the role's file as it is, its last newline kept
    counters = re.search(r" -f (\S+) ", rendered["idem"]).group(1)  # this host's counters file is in the test's folder
    assert rendered["idem"] == rendered["gpu01"].replace("/etc/dcgm-exporter/gpu-provision-counters.csv", counters)


def test_exporter_follows_the_host_engine_and_restarts_on_failure(rendered):
    lines = rendered["gpu01"].splitlines()
    assert {"After=nvidia-dcgm.service", "Wants=nvidia-dcgm.service", "Restart=on-failure"} <= set(lines)


VALIDATE = """\
- name: Check the dcgm role's inputs
  hosts: all
  gather_facts: false
  vars_files: [{compat}, {role_vars}]
  tasks:
    - name: Run the role's checks
      ansible.builtin.import_tasks: {validate}
"""

# host -> (driver branch, pinned exporter version): the compatibility table's cases, checked by the role's own tasks
PINS = {"ok570": (570, "4.8.2-1"), "epoch": (570, "1:4.1.3-1"), "ok580": (580, "4.5.0-1"),
        "old580": (580, "4.4.1-1"), "dcgm3": (570, "3.3.9-1"), "word": (570, "latest")}


def test_the_role_refuses_the_pinned_exporters_the_compatibility_table_refuses(tmp_path):
    defaults = yaml.safe_load((ROLE / "defaults/main.yml").read_text())
    hosts = {host: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                    "ansible_host": "10.0.0.30", "nvidia_driver_branch": branch, "dcgm_exporter_version": version}
             for host, (branch, version) in PINS.items()}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts,
                                                                "vars": {**defaults, "gpu_base_has_gpu": True}}}))
    (tmp_path / "play.yml").write_text(VALIDATE.format(compat=REPO / "playbooks/roles/gpu_base/vars/main.yml",
                                                       role_vars=ROLE / "vars/main.yml",
                                                       validate=ROLE / "tasks/validate.yml"))
    result = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
                            capture_output=True, text=True, env={**os.environ, "ANSIBLE_NOCOLOR": "1"}, timeout=300)
    failed = set(re.findall(r"^(\w+)\s+: ok=\d+\s+changed=\d+\s+unreachable=\d+\s+failed=1", result.stdout, re.M))
    refused = {host for host, (branch, version) in PINS.items() if compat.dcgm_exporter_version_problem(branch, version)}
    assert refused == {"old580", "dcgm3", "word"}
    assert failed == refused, result.stdout[-3000:]
    assert "use 4.5.0-1 or a newer 4.x" in result.stdout
