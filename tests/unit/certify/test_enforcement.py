"""slurm.enforce_memory and slurm.enforce_procs: the controller's configuration (recorded on the e2e sandbox, and that
recording edited to a cluster with cgroups on), the memory task run for real here, and the judgement of each answer."""
from __future__ import annotations

import shlex
import subprocess
import time
from pathlib import Path

import pytest

from provision.certify.control import enforcement
from provision.certify.control.slurm_checks import parse_fields
from provision.certify.control.srun import NODE_MARK, StepOutput

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"
SANDBOX = (FIXTURES / "scontrol_show_config_sandbox.txt").read_text()
CGROUP_SECTION = """
Cgroup Support Configuration:
AllowedRAMSpace         = 100.0%
AllowedSwapSpace        = 0.0%
CgroupPlugin            = autodetect
ConstrainCores          = yes
ConstrainDevices        = yes
ConstrainRAMSpace       = yes
ConstrainSwapSpace      = no
"""
CONFINED = (SANDBOX.replace("proctrack/linuxproc", "proctrack/cgroup").replace("TaskPlugin              = (null)",
                                                                                "TaskPlugin              = task/cgroup,task/affinity")
            .replace("\nSlurmctld(primary)", CGROUP_SECTION + "\nSlurmctld(primary)"))


def test_the_sandbox_confines_nothing_and_says_which_settings():
    config = enforcement.parse_config(SANDBOX)
    assert not config.confined and not config.memory
    assert "ProctrackType=proctrack/linuxproc" in config.settings and "TaskPlugin=(null)" in config.settings
    checks = enforcement.not_applicable(["a01"], config)
    assert {c.check for c in checks} == {"slurm.enforce_memory", "slurm.enforce_procs"}
    assert all(c.verdict == "na" and "ProctrackType=proctrack/linuxproc" in c.detail for c in checks)


def test_an_unreadable_configuration_warns_on_every_node():
    checks = enforcement.unknown(["a01", "a02"], "slurm_load_ctl_conf error: Unable to contact slurm controller")
    assert len(checks) == 4 and all(c.verdict == "warn" and "Unable to contact" in c.detail for c in checks)


def test_cgroups_on_confine_processes_and_memory():
    assert CONFINED != SANDBOX
    config = enforcement.parse_config(CONFINED)
    assert config.confined and config.memory


def _output(texts: dict[str, str], errors: dict[str, str] | None = None, general: list[str] | None = None):
    return StepOutput(0, {n: f"{NODE_MARK}{n}\n{t}" for n, t in texts.items()}, errors or {}, general or [])


def test_a_job_stopped_for_memory_passes_one_that_kept_it_fails_one_held_below_it_passes():
    one = enforcement.memory_step(["a01", "a02", "a03", "a04"], "certify-enforce-mem-x")
    assert "--mem=64M" in one.extra
    output = _output({"a01": "mem=start\n", "a02": "mem=start\nmem=survived\nallocated_mib=256\nrss_mib=257\n",
                      "a03": "mem=start\nmem=survived\nallocated_mib=256\nrss_mib=60\n", "a04": "mem=start\n"},
                     {"a01": "Out Of Memory", "a04": "Exited with exit code 1"},
                     ["slurmstepd: error: Detected 1 oom_kill event in StepId=9.0."])
    got = {c.node: c for c in enforcement.memory_checks(one, output, enforcement.parse_config(CONFINED))}
    assert {n: c.verdict for n, c in got.items()} == {"a01": "pass", "a02": "fail", "a03": "pass", "a04": "fail"}
    assert "Out Of Memory" in got["a01"].detail and "kept 257 MiB resident" in got["a02"].detail
    assert "held: 60 MiB" in got["a03"].detail and "exit code 1" in got["a04"].detail  # another node's OOM is not its


def test_memory_is_na_where_processes_are_confined_but_memory_is_not():
    one = enforcement.memory_step(["a01"], "x")
    config = enforcement.parse_config(CONFINED.replace("ConstrainRAMSpace       = yes", "ConstrainRAMSpace       = no"))
    [check] = enforcement.memory_checks(one, _output({"a01": "mem=start\nmem=survived\nrss_mib=256\n"}), config)
    assert check.verdict == "na" and "ConstrainRAMSpace=no" in check.detail


def test_the_memory_task_really_fills_four_times_the_limit_and_reports_it():
    task = shlex.split(enforcement.memory_step(["a01"], "x").command)[-1]
    done = subprocess.run(["sh", "-c", task], capture_output=True, text=True, timeout=60)
    fields = parse_fields(done.stdout)
    assert done.returncode == 0 and fields["mem"] == "survived"
    assert int(fields["rss_mib"]) >= enforcement.ALLOCATE_MIB * enforcement.HELD_FRACTION  # no cgroup here: resident


def test_a_process_that_outlives_its_job_fails_and_is_ended_one_gone_passes():
    one = enforcement.leave_step(["a01", "a02", "a03", "a04"], "certify-enforce-procs-x")
    output = _output({"a01": "left_pid=4101\n", "a02": "left_pid=4102\n", "a03": "left_pid=4103\n"})
    pids = enforcement.left_pids(one, output)
    assert pids == {"a01": 4101, "a02": 4102, "a03": 4103}
    got = {c.node: c for c in enforcement.procs_checks(one, pids, {"a01": "left=gone\n", "a02": "left=alive\n"})}
    assert {n: c.verdict for n, c in got.items()} == {"a01": "pass", "a02": "fail", "a03": "warn", "a04": "fail"}
    assert "pid 4102 outlived its job" in got["a02"].detail


@pytest.mark.parametrize("alive", [True, False])
def test_the_follow_up_finds_a_left_process_and_ends_it(alive):
    sleeper = subprocess.Popen(["sleep", "30"]) if alive else None
    pid = sleeper.pid if sleeper else 2 ** 22 + 7  # above pid_max's default: no such process
    try:
        done = subprocess.run(["sh", "-c", enforcement.survivor_command(pid)], capture_output=True, text=True,
                              timeout=30)
        assert parse_fields(done.stdout)["left"] == ("alive" if alive else "gone")
        if sleeper:
            assert sleeper.wait(timeout=10) != 0  # ended by the follow-up, by its pid
    finally:
        if sleeper and sleeper.poll() is None:
            sleeper.kill()


def test_the_leaving_task_starts_a_process_in_a_session_of_its_own():
    task = shlex.split(enforcement.leave_step(["a01"], "x").command)[-1]
    done = subprocess.run(["sh", "-c", task], capture_output=True, text=True, timeout=30)
    pid = int(parse_fields(done.stdout)["left_pid"])
    try:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0] != b"sleep" and time.monotonic() < deadline:
            time.sleep(0.05)  # $! is the shell's child: it runs setsid, which then runs sleep
        sid = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3]
        assert int(sid) == pid  # setsid: its own session, outside the shell's
    finally:
        subprocess.run(["kill", str(pid)], check=False)
