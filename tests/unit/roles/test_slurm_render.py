"""Golden files for the slurm role's cluster-wide files (slurm.conf, gres.conf, cgroup.conf, mpi.conf, slurmdbd.conf),
rendered and written by the config_files action the role writes them with, from node entries that
provision.slurm.layout builds out of recorded hardware.

Four sets: each cluster shape at 24.11 (Debian 13, the default), and the sandbox at 22.05 (Debian 12) for what the
series changes (pid files, cgroups, PMIx connections); the shapes render alike at both series otherwise, which
test_the_series_changes_only_what_the_installed_slurm_needs checks line by line."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from provision.node.hardware import NodeHardware
from provision.records import ClusterInfo, NodeInfo
from provision.slurm import layout

REPO = Path(__file__).resolve().parents[3]
GOLDEN = Path(__file__).parent / "golden" / "slurm"
TEMPLATES = REPO / "playbooks" / "roles" / "slurm" / "templates"
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
FILES = ("slurm.conf", "gres.conf", "cgroup.conf", "mpi.conf", "slurmdbd.conf")
VERSIONS = {"22.05": "22.05.8", "24.11": "24.11.5"}  # what `sinfo --version` prints on Debian 12 and Debian 13

PLAYBOOK = """\
- name: Render the slurm role's cluster-wide files
  hosts: localhost
  gather_facts: false
  vars_files: [{defaults}, {role_vars}]
  tasks:
    - name: Render each template with the action the role writes them with
      config_files:
        files: "{{{{ golden_files }}}}"
"""


def _node(name: str, group: str, gpu: tuple[str, int] | None = None, partition: str | None = None, **extra) -> NodeInfo:
    return NodeInfo(name=name, group=group, roles=("compute",), partition=partition or group,
                    gpu_model=gpu[0] if gpu else None, gpu_count=gpu[1] if gpu else 0, **extra)


SANDBOX_HW = NodeHardware(2, 1, 1, 2, 1, 24105)
HGX_HW = NodeHardware(192, 1, 2, 48, 2, 2_063_000)
L40S_HW = NodeHardware(64, 1, 1, 32, 2, 515_000)

CASES = {
    # the sandbox: 3 identical nodes from recorded hardware, no cgroup, stand-in GPUs would use File= lines
    "sandbox": ([_node(f"compute0{i}", "compute", partition="batch", default_partition=True) for i in (1, 2, 3)],
                {f"compute0{i}": SANDBOX_HW for i in (1, 2, 3)},
                {"provision_sandbox": True, "slurm_cgroup_enabled": False, "_slurm_autodetect_nvml": False}),
    # two GPU groups in their own partitions, NVML autodetection, one node whose hardware is not recorded yet and
    # one whose spec caps its CPUs (the topology is then left out: Slurm derives it from CPUs); active checks on
    "hgx-l40s": ([_node(f"gpu0{i}", "hgx", ("H100-SXM", 8)) for i in (1, 2, 3)]
                 + [_node("l40s01", "l40s", ("L40S", 4)), _node("l40s02", "l40s", ("L40S", 4), cpus=32)]
                 + [_node("l40s03", "l40s", ("L40S", 4))],
                 {"gpu01": HGX_HW, "gpu02": HGX_HW, "gpu03": HGX_HW, "l40s01": L40S_HW, "l40s02": L40S_HW},
                 {"provision_sandbox": False, "slurm_cgroup_enabled": True, "_slurm_autodetect_nvml": True,
                  "slurm_accounting_enforce": True,  # the spec's accounting.enforce
                  "slurm_active_enabled": True,  # health.active: the hidden partition, preempted by the others
                  # the spec's software.slurm.config: ReturnToService replaces the role's own line
                  "slurm_conf_parameters": {"SchedulerParameters": "bf_continue,bf_max_job_test=500",
                                            "KillWait": "60", "ReturnToService": "1"}}),
    # explicit device files (no NVML plugin), and no accounting: slurmctld would refuse AccountingStorageTRES then
    "gres-files": ([_node("one01", "one", ("L4", 1)), _node("eight01", "eight", ("H100-SXM", 8))],
                   {"one01": SANDBOX_HW, "eight01": HGX_HW},
                   {"provision_sandbox": False, "slurm_cgroup_enabled": True, "_slurm_autodetect_nvml": False,
                    "slurm_accounting_enabled": False}),
}


def _render(tmp_path: Path, case: str, version: str) -> dict[str, str]:
    nodes, hardware, switches = CASES[case]
    cluster = ClusterInfo(name="golden", provider="static",
                          nodes=(NodeInfo(name="ctl01", group="ctl", roles=("controller",)), *nodes))
    out = tmp_path / "out"
    out.mkdir()
    variables = {"cluster_name": "golden", "slurm_controller_host": "ctl01", "slurm_accounting_enabled": True,
                 "slurm_nodes": layout.node_entries(cluster, hardware),
                 "slurm_partitions": layout.partition_entries(cluster, hardware), **switches,
                 # as the role reads it from the installed Slurm (tasks/probe.yml: the node_probe action's answer)
                 "_slurm_installed": {"versions": {"slurm": version}, "files": {}},
                 "slurm_accounting_db_password_file": str(tmp_path / "db-password"),
                 "golden_files": [{"dest": str(out / name), "template": str(TEMPLATES / f"{name}.j2")}
                                  for name in FILES]}
    (tmp_path / "db-password").write_text("golden-not-a-secret")
    inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local",
                                                 "ansible_python_interpreter": sys.executable},
                                   "ctl01": {"ansible_host": "10.0.0.10"}}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    defaults = REPO / "playbooks/roles/slurm/defaults/main.yml"
    role_vars = REPO / "playbooks/roles/slurm/vars/main.yml"
    (tmp_path / "play.yml").write_text(PLAYBOOK.format(defaults=defaults, role_vars=role_vars))
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_MANAGED": "Ansible managed (golden)",
           "ANSIBLE_ACTION_PLUGINS": str(REPO / "playbooks/roles/platform/action_plugins")}
    (tmp_path / "vars.json").write_text(json.dumps(variables))  # extra vars: above the role defaults, as in a play
    result = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
                             "-e", f"@{tmp_path / 'vars.json'}"], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]
    return {name: (out / name).read_text() for name in FILES}


# (series, cluster shape): every shape at the default series, the sandbox at the other one too.
SETS = [("24.11", case) for case in ("sandbox", "hgx-l40s", "gres-files")] + [("22.05", "sandbox")]


@pytest.mark.parametrize("series, case", SETS)
def test_cluster_wide_files_match_golden_files(tmp_path, series, case):
    rendered = _render(tmp_path, case, VERSIONS[series])
    golden = GOLDEN / series / case
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.mkdir(parents=True, exist_ok=True)
        for name, text in rendered.items():
            (golden / name).write_text(text)
    assert rendered == {name: (golden / name).read_text() for name in FILES}


# What 22.05 writes instead of 24.11's lines, in every file of every shape: the daemons' units of 24.05 and later keep
# their pid files in RuntimeDirectory=, CgroupPlugin=disabled exists only there, and Open MPI 5 (with 24.11) crashes
# less with direct PMIx connections, Open MPI 4.1 (with 22.05) more.
OLDER_SERIES = {
    "SlurmctldPidFile=/run/slurmctld/slurmctld.pid": "SlurmctldPidFile=/run/slurmctld.pid",
    "SlurmdPidFile=/run/slurm/slurmd.pid": "SlurmdPidFile=/run/slurmd.pid",
    "PidFile=/run/slurmdbd/slurmdbd.pid": "PidFile=/run/slurmdbd.pid",
    "PMIxDirectConn=true": "PMIxDirectConn=false",
}


@pytest.mark.parametrize("case", ["hgx-l40s", "gres-files"])
def test_the_series_changes_only_what_the_installed_slurm_needs(tmp_path, case):
    """A shape rendered at 22.05 is its 24.11 golden set with the lines above swapped: the renders are keyed on the
    version read from the node, and nothing else differs between the series (the sandbox's set at 22.05, where
    cgroups are off, shows the rest)."""
    rendered = _render(tmp_path, case, VERSIONS["22.05"])
    golden = {name: (GOLDEN / "24.11" / case / name).read_text() for name in FILES}
    for new, old in OLDER_SERIES.items():
        golden = {name: text.replace(new, old) for name, text in golden.items()}
    assert rendered == golden


def test_what_differs_between_the_series_is_what_the_installed_slurm_needs():
    old, new = (GOLDEN / "22.05" / "sandbox", GOLDEN / "24.11" / "sandbox")
    assert "SlurmctldPidFile=/run/slurmctld.pid" in (old / "slurm.conf").read_text()
    assert "SlurmctldPidFile=/run/slurmctld/slurmctld.pid" in (new / "slurm.conf").read_text()
    assert "PidFile=/run/slurmdbd/slurmdbd.pid" in (new / "slurmdbd.conf").read_text()
    assert "CgroupPlugin=disabled" in (new / "cgroup.conf").read_text()
    assert "CgroupPlugin=disabled" not in (old / "cgroup.conf").read_text()
    assert "TaskPlugin=task/none" in (old / "slurm.conf").read_text()  # 22.05 without cgroups: no task plugin
    assert "CgroupPlugin=autodetect" in (GOLDEN / "24.11" / "hgx-l40s" / "cgroup.conf").read_text()
    assert "PMIxDirectConn=true" in (new / "mpi.conf").read_text()
    assert "PMIxDirectConn=false" in (old / "mpi.conf").read_text()
