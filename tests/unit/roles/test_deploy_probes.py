"""Each role reads a node in one probe and changes only what differs (issue 22): the reading is where a mistake would
hide drift, so it is pinned here, table-driven, by real Ansible templating of the roles' own vars/main.yml.

For every case the probe's output is a converged node's, with one thing changed by hand; the role's list of what
differs must name exactly that thing (and be empty for the converged node). The safe direction is the one that
matters: a node that differs must never read as converged.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
ROLES = REPO / "playbooks" / "roles"
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
KEY_SHA = "0123456789abcdef0123456789abcdef01234567"
FILES = {"slurm.conf": "a" * 40, "gres.conf": "b" * 40, "cgroup.conf": "c" * 40, "mpi.conf": "d" * 40}
ARCHIVE_SHA = "e" * 40

COMMON = ["lists present", "package ca-certificates ii", "package procps ii", "package iproute2 ii",
          "package rsync ii", "hostname {host} {host}",
          "account munge 980 980 980 /nonexistent /usr/sbin/nologin",
          "account slurm 981 981 981 /var/lib/slurm /usr/sbin/nologin",
          "hosts|# BEGIN gpu-provision test", "hosts|10.0.0.10 ctl", "hosts|10.0.0.11 node",
          "hosts|# END gpu-provision test"]
MUNGE = ["package munge ii", f"key munge munge 400 {KEY_SHA}", "service ActiveState=active",
         "service UnitFileState=enabled", "credential ok"]
SLURM_COMMON = ["package slurm-client ii", "package libpmix-dev ii", "directory /etc/slurm root root 755",
                "directory /var/log/slurm slurm slurm 755", "directory /var/lib/slurm/slurmctld slurm slurm 755",
                "directory /var/lib/slurm/slurmd slurm slurm 755", "listening 0.0.0.0:22"] + [
                f"file /etc/slurm/{name} root root 644 {sha}" for name, sha in FILES.items()]
SLURM = {"node": SLURM_COMMON + ["package slurmd ii", "service slurmd ActiveState=active",
                                 "service slurmd UnitFileState=enabled", "listening 0.0.0.0:6818"],
         "ctl": SLURM_COMMON + ["package slurmctld ii", "package slurmdbd ii", "package mariadb-server ii",
                                "mariadb socket present", "listening 0.0.0.0:6817", "listening 0.0.0.0:6819"]
         + [f"service {unit} {state}" for unit in ("slurmctld", "mariadb", "slurmdbd")
            for state in ("ActiveState=active", "UnitFileState=enabled")]}
MPI = ["package openmpi-bin ii", "package libopenmpi-dev ii", "package gcc ii", "package libc6-dev ii",
       "wrapper answers"]
CERTIFY_LINES = ["package iperf3 ii", "nvidia-ml-py 1.0",
                 f"archive 644 {ARCHIVE_SHA}", "archive unpacked"]


def _without(lines: list[str], line: str) -> list[str]:
    assert line in lines, line
    return [entry for entry in lines if entry != line]


def _with(lines: list[str], old: str, new: str) -> list[str]:
    assert old in lines, old
    return [new if entry == old else entry for entry in lines]


# (case id, host, role, probe lines, the role's list of what differs)
CASES = [
    ("common converged", "node", "common", COMMON, []),
    ("common package missing", "node", "common", _without(COMMON, "package rsync ii"), ["packages"]),
    ("common package removed, config left", "node", "common",
     _with(COMMON, "package rsync ii", "package rsync rc"), ["packages"]),
    ("common no package lists", "node", "common", _without(COMMON, "lists present"), ["package lists"]),
    ("common interrupted dpkg", "node", "common", COMMON + ["dpkg interrupted"],
     ["interrupted package configuration"]),
    ("common host name", "node", "common", _with(COMMON, "hostname {host} {host}", "hostname other {host}"),
     ["host name"]),
    ("common /etc/hostname", "node", "common", _with(COMMON, "hostname {host} {host}", "hostname {host} other"),
     ["host name"]),
    ("common hosts line missing", "node", "common", _without(COMMON, "hosts|10.0.0.10 ctl"), ["/etc/hosts"]),
    ("common hosts line edited", "node", "common", _with(COMMON, "hosts|10.0.0.10 ctl", "hosts|10.0.0.99 ctl"),
     ["/etc/hosts"]),
    ("common hosts block absent", "node", "common", [x for x in COMMON if not x.startswith("hosts|")],
     ["/etc/hosts"]),
    ("common account uid", "node", "common", _with(COMMON, "account munge 980 980 980 /nonexistent /usr/sbin/nologin",
                                                   "account munge 980 990 980 /nonexistent /usr/sbin/nologin"),
     ["service accounts"]),
    ("common account group", "node", "common", _with(COMMON, "account munge 980 980 980 /nonexistent /usr/sbin/nologin",
                                                     "account munge 970 980 980 /nonexistent /usr/sbin/nologin"),
     ["service accounts"]),
    ("common account home and shell", "node", "common",
     _with(COMMON, "account slurm 981 981 981 /var/lib/slurm /usr/sbin/nologin",
           "account slurm 981 981 981 /home/slurm /bin/bash"), ["service accounts"]),
    ("common account missing", "node", "common",
     _with(COMMON, "account slurm 981 981 981 /var/lib/slurm /usr/sbin/nologin", "account slurm"),
     ["service accounts"]),
    ("munge converged", "node", "munge", MUNGE, []),
    ("munge package", "node", "munge", _without(MUNGE, "package munge ii"), ["package"]),
    ("munge key content", "node", "munge", _with(MUNGE, f"key munge munge 400 {KEY_SHA}", f"key munge munge 400 {'1' * 40}"),
     ["key"]),
    ("munge key mode", "node", "munge", _with(MUNGE, f"key munge munge 400 {KEY_SHA}", f"key munge munge 644 {KEY_SHA}"),
     ["key"]),
    ("munge key owner", "node", "munge", _with(MUNGE, f"key munge munge 400 {KEY_SHA}", f"key root munge 400 {KEY_SHA}"),
     ["key"]),
    ("munge key absent", "node", "munge", _without(MUNGE, f"key munge munge 400 {KEY_SHA}"), ["key"]),
    ("munge stopped", "node", "munge", _with(MUNGE, "service ActiveState=active", "service ActiveState=inactive"),
     ["daemon"]),
    ("munge disabled", "node", "munge", _with(MUNGE, "service UnitFileState=enabled", "service UnitFileState=disabled"),
     ["daemon"]),
    ("munge does not answer", "node", "munge", _without(MUNGE, "credential ok"), ["credential"]),
    ("slurm compute converged", "node", "slurm", SLURM["node"], []),
    ("slurm controller converged", "ctl", "slurm", SLURM["ctl"], []),
    # packages going in during the run: the directories they may create are checked by the file module again
    ("slurm package", "node", "slurm", _without(SLURM["node"], "package slurmd ii"),
     ["packages", "/var/log/slurm", "/var/lib/slurm/slurmctld", "/var/lib/slurm/slurmd"]),
    ("slurm config dir mode", "node", "slurm", _with(SLURM["node"], "directory /etc/slurm root root 755",
                                                     "directory /etc/slurm root root 700"),
     ["configuration directory"]),
    ("slurm data dir owner", "node", "slurm", _with(SLURM["node"], "directory /var/log/slurm slurm slurm 755",
                                                    "directory /var/log/slurm root root 755"), ["/var/log/slurm"]),
    ("slurm data dir absent", "node", "slurm", _without(SLURM["node"], "directory /var/lib/slurm/slurmd slurm slurm 755"),
     ["/var/lib/slurm/slurmd"]),
    ("slurm file edited", "node", "slurm", _with(SLURM["node"], f"file /etc/slurm/cgroup.conf root root 644 {'c' * 40}",
                                                 f"file /etc/slurm/cgroup.conf root root 644 {'0' * 40}"),
     ["cgroup.conf"]),
    ("slurm file mode", "node", "slurm", _with(SLURM["node"], f"file /etc/slurm/slurm.conf root root 644 {'a' * 40}",
                                               f"file /etc/slurm/slurm.conf root root 600 {'a' * 40}"),
     ["slurm.conf"]),
    ("slurm file absent", "node", "slurm", _without(SLURM["node"], f"file /etc/slurm/gres.conf root root 644 {'b' * 40}"),
     ["gres.conf"]),
    ("slurmd stopped", "node", "slurm", _with(SLURM["node"], "service slurmd ActiveState=active",
                                              "service slurmd ActiveState=failed"), ["slurmd"]),
    ("slurmd not listening", "node", "slurm", _without(SLURM["node"], "listening 0.0.0.0:6818"), ["slurmd port"]),
    ("slurmdbd disabled", "ctl", "slurm", _with(SLURM["ctl"], "service slurmdbd UnitFileState=enabled",
                                                "service slurmdbd UnitFileState=disabled"), ["slurmdbd"]),
    ("slurmctld not listening", "ctl", "slurm", _without(SLURM["ctl"], "listening 0.0.0.0:6817"),
     ["slurmctld port"]),
    ("mariadb socket gone", "ctl", "slurm", _without(SLURM["ctl"], "mariadb socket present"), ["MariaDB socket"]),
    ("mpi converged", "node", "mpi", MPI, []),
    ("mpi compiler missing", "node", "mpi", _without(MPI, "package gcc ii"), ["gcc"]),
    ("certify converged", "node", "certify", CERTIFY_LINES, []),
    ("certify package", "node", "certify", _without(CERTIFY_LINES, "package iperf3 ii"), ["packages"]),
    ("certify nvml version", "node", "certify", _with(CERTIFY_LINES, "nvidia-ml-py 1.0", "nvidia-ml-py 0.9"),
     ["nvidia-ml-py"]),
    ("certify nvml missing", "node", "certify", _without(CERTIFY_LINES, "nvidia-ml-py 1.0"), ["nvidia-ml-py"]),
    ("certify archive content", "node", "certify", _with(CERTIFY_LINES, f"archive 644 {ARCHIVE_SHA}",
                                                         f"archive 644 {'0' * 40}"), ["archive"]),
    ("certify archive mode", "node", "certify", _with(CERTIFY_LINES, f"archive 644 {ARCHIVE_SHA}",
                                                      f"archive 600 {ARCHIVE_SHA}"), ["archive"]),
    ("certify unpacked file edited", "node", "certify", _without(CERTIFY_LINES, "archive unpacked"),
     ["unpacked files"]),
]
# What each role calls its list of differences; mpi's is its missing packages.
TODO = {"common": "_common_todo", "munge": "_munge_todo", "slurm": "_slurm_todo", "mpi": "_mpi_missing_packages",
        "certify": "_certify_todo"}

INVENTORY = {"all": {
    "hosts": {"ctl": {"ansible_host": "10.0.0.10"}, "node": {"ansible_host": "10.0.0.11"}},
    "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "cluster_name": "test",
             "provision_sandbox": True, "slurm_controller_host": "ctl"},
    "children": {"controller": {"hosts": {"ctl": {}}}, "compute": {"hosts": {"node": {}}}}}}

PLAYBOOK = """\
- name: Read the roles' probe answers
  hosts: all
  gather_facts: false
  tasks:
    - name: Load each role's defaults and computed vars
      ansible.builtin.include_vars: "{{{{ item }}}}"
      loop: {var_files}
    - name: Stand in for what the control node provides
      ansible.builtin.set_fact:
        _munge_key_source: {{stat: {{checksum: "{key_sha}"}}}}
        _certify_staged: {{wheel_name: nvidia_ml_py-1.0-py3-none-any.whl, nvml_version: "1.0"}}
        _certify_tree: {{checksum: "{archive_sha}"}}
        _slurm_expected_files: {slurm_files}
        _answers: {{}}
    - name: Read each case
      ansible.builtin.include_tasks: case.yml
      loop: {cases}
      loop_control:
        loop_var: case
      when: case.host == inventory_hostname
    - name: Write the answers
      ansible.builtin.copy:
        content: "{{{{ _answers | to_json }}}}"
        dest: "{out}/{{{{ inventory_hostname }}}}.json"
        mode: "0644"
"""
CASE = """\
- name: Give the case's probe output to its role
  ansible.builtin.set_fact:
    "{{ '_' ~ case.role ~ '_probe' }}": {stdout_lines: "{{ case.lines }}"}
- name: Record what the role finds different
  ansible.builtin.set_fact:
    _answers: "{{ _answers | combine({case.id: lookup('ansible.builtin.vars', case.todo)}) }}"
"""


@pytest.fixture(scope="module")
def answers(tmp_path_factory) -> dict[str, list[str]]:
    tmp = tmp_path_factory.mktemp("probes")
    var_files = [str(ROLES / role / kind / "main.yml") for role in TODO for kind in ("defaults", "vars")]
    cases = [{"id": case_id, "host": host, "role": role, "todo": TODO[role],
              "lines": [line.replace("{host}", host) for line in lines]} for case_id, host, role, lines, _ in CASES]
    (tmp / "hosts.yml").write_text(yaml.safe_dump(INVENTORY))
    (tmp / "case.yml").write_text(CASE)
    (tmp / "play.yml").write_text(PLAYBOOK.format(
        var_files=json.dumps(var_files), key_sha=KEY_SHA, cases=json.dumps(cases), out=tmp,
        slurm_files=json.dumps([f"file /etc/slurm/{n} root root 644 {s}" for n, s in FILES.items()]),
        archive_sha=ARCHIVE_SHA))
    result = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(tmp / "hosts.yml"), str(tmp / "play.yml")],
                            capture_output=True, text=True, cwd=tmp, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:]
    return {**json.loads((tmp / "ctl.json").read_text()), **json.loads((tmp / "node.json").read_text())}


@pytest.mark.parametrize("case_id, expected", [(c[0], c[4]) for c in CASES], ids=[c[0] for c in CASES])
def test_the_probe_reads_exactly_what_differs(answers, case_id, expected):
    assert answers[case_id] == expected
