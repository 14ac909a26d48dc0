"""The node health program (provision.certify.probe.nodehealth) against stand-in commands: what it checks, what it
tells Slurm, and that it ends within its deadline when slurmctld does not answer. The real program runs on sandbox
nodes in tests/e2e/test_health.py."""
from __future__ import annotations

import json
import os
import stat
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from provision.certify.probe.metrics.catalogue import TEXTFILES
from provision.certify.probe.nodehealth import checks, gpu, reason, textfiles
from provision.certify.probe.nodehealth.__main__ import main
from provision.certify.probe.nodehealth.config import GpuExpectation, HealthConfig
from provision.certify.probe.nodehealth.passes import one_pass
from provision.certify.probe.nodehealth.run import Deadline
from provision.certify.probe.nodehealth.slurm import parse_node

REAL_DRAINED = ("NodeName=compute03 CoresPerSocket=2  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=N/A "
                "AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=compute03 NodeHostName=compute03  "
                "RealMemory=22900 AllocMem=0 FreeMem=N/A Sockets=1 Boards=1 State=UNKNOWN+DRAIN ThreadsPerCore=1 "
                "TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=batch  BootTime=None SlurmdStartTime=None "
                "LastBusyTime=2026-11-23T18:30:47 CfgTRES=cpu=2,mem=22900M,billing=2 AllocTRES= CapWatts=n/a "
                "CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s "
                "Reason=admin: bad fan [root@2026-11-23T18:26:22]")
REAL_IDLE = REAL_DRAINED.replace("State=UNKNOWN+DRAIN", "State=IDLE").split(" Reason=")[0]
# Recorded on a sandbox node of Slurm 22.05.8 (an admin's reason with "key=value" and "|" in it)
REAL_MIXED_DRAIN = (
    "NodeName=compute01 Arch=x86_64 CoresPerSocket=2  CPUAlloc=1 CPUEfctv=2 CPUTot=2 CPULoad=4.59 "
    "AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=compute01 NodeHostName=compute01 "
    "Version=22.05.8 OS=Linux 6.18.44-fc-v782 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=22900 AllocMem=11450 "
    "FreeMem=20029 Sockets=1 Boards=1 State=MIXED+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A "
    "Partitions=batch  BootTime=2026-11-27T13:59:53 SlurmdStartTime=2026-11-27T15:55:46 "
    "LastBusyTime=2026-11-27T15:55:46 CfgTRES=cpu=2,mem=22900M,billing=2 AllocTRES=cpu=1,mem=11450M CapWatts=n/a "
    "CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s "
    "Reason=admin: swap fan | ticket=123 (rack 4, slot 7) [root@2026-11-27T15:56:18]")
# ... and of 24.11.5 (ResumeAfterTime, two spaces before Reason)
REAL_MIXED_DRAIN_24 = (
    "NodeName=compute01 Arch=x86_64 CoresPerSocket=2  CPUAlloc=1 CPUEfctv=2 CPUTot=2 CPULoad=6.68 "
    "AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=compute01 NodeHostName=compute01 "
    "Version=24.11.5 OS=Linux 6.18.44-fc-v782 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=22900 AllocMem=11450 "
    "FreeMem=19658 Sockets=1 Boards=1 State=MIXED+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A "
    "Partitions=batch  BootTime=2026-11-27T13:59:54 SlurmdStartTime=2026-11-27T16:16:10 "
    "LastBusyTime=2026-11-27T16:16:10 ResumeAfterTime=None CfgTRES=cpu=2,mem=22900M,billing=2 "
    "AllocTRES=cpu=1,mem=11450M CurrentWatts=0 AveWatts=0  "
    "Reason=admin: swap fan | ticket=123 (rack 4, slot 7) [root@2026-11-27T16:18:01]")

FAKE_SCONTROL = """#!{python}
import json, sys, time
from pathlib import Path
here = Path(__file__).parent
node = json.loads((here / "node.json").read_text())
(here / "calls.log").open("a").write(" ".join(sys.argv[1:]) + "\\n")
time.sleep(node.get("sleep", 0))
if node.get("down"):
    print("slurm_load_node error: Unable to contact slurm controller (connect failure)", file=sys.stderr)
    sys.exit(1)
if sys.argv[1:3] == ["-o", "show"]:
    reason = f" Reason={{node['reason']}} [root@2026-11-23T18:26:22]" if node.get("reason") else ""
    print(f"NodeName={{sys.argv[4]}} CPUTot=2 State={{node['state']}} Partitions=batch{{reason}}")
elif sys.argv[1] == "update":
    fields = dict(a.split("=", 1) for a in sys.argv[2:])
    if fields["State"] == "DRAIN":
        node.update(state=node["state"].split("+")[0] + "+DRAIN", reason=fields["Reason"])
    else:
        node.update(state=node["state"].split("+")[0], reason="")
    (here / "node.json").write_text(json.dumps(node))
"""


def _script(path: Path, text: str) -> str:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


class StandIn:
    """A node's stand-in commands in `bin_dir`: its Slurm state (node.json, kept by FAKE_SCONTROL) set and read."""

    def __init__(self, cfg: HealthConfig, bin_dir: Path) -> None:
        self.cfg, self.bin = cfg, bin_dir

    def set(self, **values) -> None:
        data = json.loads((self.bin / "node.json").read_text())
        data.update(values)
        (self.bin / "node.json").write_text(json.dumps(data))

    def slurm(self) -> dict:
        return json.loads((self.bin / "node.json").read_text())


@pytest.fixture
def node(tmp_path: Path):
    """A node's stand-in commands: scontrol keeping the node's state in node.json, munge/unmunge that work until
    `munge_down` is created."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "node.json").write_text(json.dumps({"state": "IDLE", "reason": ""}))
    munge = (f"#!/bin/sh\n[ -e {tmp_path}/munge_down ] && "
             "{ echo 'munge: Error: Failed to access socket' >&2; exit 6; }\necho CRED\n")
    commands = {"scontrol": _script(bin_dir / "scontrol", FAKE_SCONTROL.format(python=sys.executable)),
                "munge": _script(bin_dir / "munge", munge),
                "unmunge": _script(bin_dir / "unmunge", "#!/bin/sh\ncat >/dev/null\n"),
                "munged": "/nonexistent/munged", "runuser": "/nonexistent/runuser", "stat": "/usr/bin/stat"}
    config = tmp_path / "slurm.conf"
    config.write_text("ClusterName=t\n")
    cfg = HealthConfig(node="compute01", deadline_s=4.0, state_dir=tmp_path / "state", slurmd=False,
                       files={str(config): checks.sha1(config)}, commands=commands, slurm_conf=config,
                       written=time.time() + 3600)  # written after any edit the tests make: drift fails at once

    class Node(StandIn):
        def __init__(self) -> None:
            super().__init__(cfg, bin_dir)
            self.root = tmp_path

        def updates(self) -> list[str]:
            log = bin_dir / "calls.log"
            return [ln for ln in log.read_text().splitlines() if ln.startswith("update")] if log.exists() else []

    return Node()


def test_a_real_scontrol_line_gives_state_and_reason():
    drained = parse_node(REAL_DRAINED)
    assert drained.state == "UNKNOWN+DRAIN" and drained.reason == "admin: bad fan"
    assert drained.drained and not drained.drained_by_health
    idle = parse_node(REAL_IDLE)
    assert idle.state == "IDLE" and idle.reason == "" and not idle.drained
    assert parse_node("slurm_load_node error: Invalid node name specified") is None



@pytest.mark.parametrize("line", [REAL_MIXED_DRAIN, REAL_MIXED_DRAIN_24], ids=["22.05", "24.11"])
def test_a_reason_with_key_value_text_in_it_is_read_whole(line):
    drained = parse_node(line)
    assert drained.state == "MIXED+DRAIN" and drained.reason == "admin: swap fan | ticket=123 (rack 4, slot 7)"
    assert drained.drained and not drained.drained_by_health


def test_the_reason_names_the_check_evidence_and_program_in_one_bounded_line():
    text = reason.text([("health.munge", "munge: Error:\nFailed = socket"), ("health.mount[/shared]", "")])
    assert text == "hc:munge: munge: Error: Failed : socket; mount[/shared] (gpu-provision-health)"
    long = reason.text([("health.config", "x" * 500)])
    assert len(long) == 200 and long.endswith("... (gpu-provision-health)") and reason.is_own(long)


# The first failed check of every check the program has, with evidence as it writes it: sinfo -R's default column
# (20 characters) shows the check's name whole, or the part that tells it apart.
FIRST_20 = [
    ("health.munge", 'munge: Error: Failed to access "/run/munge/munge.socket.2"', "hc:munge: munge: Err"),
    ("health.slurmd", "no slurmd process is running", "hc:slurmd: no slurmd"),
    ("health.mount[/shared]", "/shared is not mounted", "hc:mount[/shared]: /"),
    ("health.config", "/etc/slurm/slurm.conf sha1 0123 (deployed 4567)", "hc:config: /etc/slur"),
    ("health.gpu.count", "2 GPUs, the spec says 4", "hc:gpu.count: 2 GPUs"),
    ("health.gpu.ecc.volatile_uncorrected[0]", "3", "hc:gpu.ecc.volatile_"),
    ("health.gpu.row_remap.failure[1]", "yes", "hc:gpu.row_remap.fai"),
    ("health.xid", "Xid 79 on 0000:3b:00.0 (fallen off the bus)", "hc:xid: Xid 79 on 00"),
]


@pytest.mark.parametrize(("check", "evidence", "shown"), FIRST_20)
def test_sinfo_r_default_width_shows_the_failed_check(check, evidence, shown):
    assert reason.text([(check, evidence)])[:20] == shown


@pytest.mark.parametrize(("text", "own"), [
    ("hc:munge: munge: Error (gpu-provision-health)", True),
    (reason.text([("health.xid", "Xid 79")]), True),
    ("gpu-provision-health: health.munge: munge: Error", True),  # set by an earlier version: still resumed
    ("hc: bad fan", False),  # an admin's, in the same shorthand
    ("admin: bad fan (gpu-provision-health)", False),
    ("certify: slurm.srun", False),
    ("gpu-provision-rolling: batch 2: deploy failed", False),
    ("", False),
])
def test_the_program_knows_its_own_reasons_and_no_other(text, own):
    assert reason.is_own(text) is own


def test_a_healthy_node_is_left_alone(node):
    record = one_pass(node.cfg)
    assert record.ok and record.action == "none" and node.updates() == []
    saved = json.loads((node.cfg.state_dir / "last.json").read_text())
    assert saved["ok"] is True and {c["check"] for c in saved["checks"]} == {"health.munge", "health.config"}


def test_a_failed_check_drains_naming_the_check_and_a_pass_resumes(node):
    Path(next(iter(node.cfg.files))).write_text("ClusterName=edited\n")
    record = one_pass(node.cfg)
    assert not record.ok and record.action == "drained"
    assert node.slurm()["state"] == "IDLE+DRAIN"
    assert node.slurm()["reason"].startswith("hc:config: ") and "slurm.conf" in node.slurm()["reason"]
    assert one_pass(node.cfg).action == "still drained" and len(node.updates()) == 1  # no second update
    Path(next(iter(node.cfg.files))).write_text("ClusterName=t\n")
    assert one_pass(node.cfg).action == "resumed"
    assert node.slurm() == {"state": "IDLE", "reason": ""}


def test_a_drain_with_another_reason_is_never_touched(node):
    node.set(state="IDLE+DRAIN", reason="admin: bad fan")
    assert one_pass(node.cfg).action == "none"
    Path(next(iter(node.cfg.files))).write_text("changed\n")
    assert one_pass(node.cfg).action == "left alone"
    assert node.slurm()["reason"] == "admin: bad fan" and node.updates() == []


def test_a_drain_of_an_earlier_version_is_resumed_and_one_in_its_shorthand_by_hand_is_not(node):
    node.set(state="IDLE+DRAIN", reason="gpu-provision-health: health.munge: munge: Error")
    assert one_pass(node.cfg).action == "resumed" and node.slurm() == {"state": "IDLE", "reason": ""}
    node.set(state="IDLE+DRAIN", reason="hc: swapping the fan")
    assert one_pass(node.cfg).action == "none" and node.slurm()["reason"] == "hc: swapping the fan"


def test_munge_down_without_a_private_munged_reports_instead_of_hanging(node):
    (node.root / "munge_down").touch()
    record = one_pass(node.cfg)
    assert not record.ok and record.action.startswith("slurmctld unreachable: munge is down")
    assert [c["detail"] for c in record.checks if c["check"] == "health.munge"] == [
        "munge: Error: Failed to access socket"]


def test_an_unanswering_slurmctld_ends_the_pass_within_its_deadline(node):
    node.set(sleep=30)
    began = time.monotonic()
    record = one_pass(node.cfg)
    assert time.monotonic() - began < node.cfg.deadline_s + 10  # the fake sleeps 30 s; slack for a loaded CI
    assert record.action.startswith("slurmctld unreachable")
    node.set(sleep=0, down=True)
    assert "Unable to contact slurm controller" in one_pass(node.cfg).action


def test_a_missing_mount_fails_and_a_mounted_one_passes(node, tmp_path):
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text("36 35 98:0 / /shared rw,noatime master:1 - fuse.glusterfs srv:/shared rw\n"
                         "37 35 98:0 / /with\\040space rw - ext4 /dev/x rw\n")
    assert checks.mounted(mountinfo.read_text()) == {"/shared", "/with space"}
    cfg = HealthConfig(node="n", mounts=("/shared", "/scratch"), commands={**node.cfg.commands, "stat": "/bin/true"})
    found = {r.subject: r for r in checks.mounts(cfg, Deadline(3), mountinfo)}
    assert found["/shared"].verdict == "pass"
    assert found["/scratch"].verdict == "fail" and found["/scratch"].detail == "/scratch is not mounted"


def test_a_mount_that_does_not_answer_fails_within_the_deadline(node, tmp_path):
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text("36 35 98:0 / /shared rw - fuse.glusterfs srv:/shared rw\n")
    hung = _script(tmp_path / "stat", "#!/bin/sh\nexec sleep 60\n")
    cfg = HealthConfig(node="n", mounts=("/shared",), commands={**node.cfg.commands, "stat": hung})
    began = time.monotonic()
    [result] = checks.mounts(cfg, Deadline(1.0), mountinfo)
    assert time.monotonic() - began < 10  # stat sleeps 60 s: ended by the deadline, with slack for a loaded CI
    assert result.verdict == "fail" and "no answer before the deadline" in result.detail


XID_79 = "[  100.1] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.\n"
XID_13 = "[   50.0] NVRM: Xid (PCI:0000:18:00): 13, pid=1234, Graphics Exception: ESR 0x404600\n"


def test_xids_already_in_the_log_are_the_baseline_and_a_new_fatal_one_stays_until_reboot():
    cfg = HealthConfig(node="gpu01", gpu=GpuExpectation("H100-SXM", 8))
    memory: dict = {}
    log = XID_13

    def reader(_timeout: float) -> tuple[str, str]:
        return log, "journalctl -k"

    assert gpu.xid_check(cfg, memory, reader, this_boot="b1").verdict == "pass"  # first pass: baseline
    log = XID_13 + XID_79
    failed = gpu.xid_check(cfg, memory, reader, this_boot="b1")
    assert failed.verdict == "fail" and "Xid 79" in failed.detail and failed.value == 1
    assert gpu.xid_check(cfg, memory, reader, this_boot="b1").verdict == "fail"  # sticky in this boot
    log = ""
    assert gpu.xid_check(cfg, memory, reader, this_boot="b2").verdict == "pass"  # rebooted


def test_nvml_checks_drain_only_on_what_means_take_the_node_out():
    from provision.certify.probe.nvml import NvmlSnapshot
    cfg = HealthConfig(node="gpu01", gpu=GpuExpectation("H100-SXM", 8))
    results = gpu.nvml_checks(cfg, snapshot=lambda: NvmlSnapshot(available=False, reason="driver not loaded"))
    assert {r.check for r in results if r.verdict == "fail"} == {"health.gpu.nvml", "health.gpu.count"}
    assert gpu.nvml_checks(HealthConfig(node="cpu01")) == []


def test_the_command_line_exits_2_on_a_bad_config_and_prints_json(node, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["--config", str(bad)]) == 2
    assert "'node'" in capsys.readouterr().err
    good = tmp_path / "health.json"
    good.write_text(json.dumps({"node": "compute01", "state_dir": str(node.cfg.state_dir), "slurmd": False,
                                "files": node.cfg.files, "commands": node.cfg.commands}))
    assert main(["--config", str(good), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["ok"] is True and printed["trigger"] == "once"
    assert os.path.exists(node.cfg.state_dir / "memory.json")


def test_a_file_rewritten_just_after_the_health_config_only_warns_until_it_settles(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("new\n")
    os.utime(conf, (1000.0, 1000.0))
    cfg = HealthConfig(node="n", files={str(conf): "0" * 40}, written=900.0)  # the deploy is writing it now
    assert checks.config_files(cfg, now=1010.0).verdict == "warn"
    assert checks.config_files(cfg, now=1000.0 + checks.SETTLE_S + 1).verdict == "fail"  # a drift that stayed
    assert checks.config_files(HealthConfig(node="n", files=cfg.files, written=1100.0), now=1010.0).verdict == "fail"


def _fake_proc(root, processes: dict[str, str]):
    for pid, comm in processes.items():
        (root / pid).mkdir(parents=True)
        (root / pid / "comm").write_text(comm + "\n")
    (root / "self").mkdir(exist_ok=True)  # not a process entry
    return root


def test_slurmd_check_finds_the_daemon_by_name_not_by_a_pid_file(tmp_path):
    cfg = HealthConfig(node="compute01", deadline_s=4.0, state_dir=tmp_path / "state")
    running = checks.slurmd(cfg, _fake_proc(tmp_path / "a", {"1": "sandbox-init", "40": "slurmd", "41": "slurmstepd"}))
    assert running.verdict == "pass"
    only_steps = checks.slurmd(cfg, _fake_proc(tmp_path / "b", {"1": "sandbox-init", "41": "slurmstepd"}))
    assert only_steps.verdict == "fail" and "no slurmd process" in only_steps.detail
    assert checks.slurmd(cfg, tmp_path / "missing").verdict == "fail"


# The pass's metrics: node exporter's textfile (nodehealth.textfiles)

def _textfile(directory: Path, writer: str) -> dict[tuple[str, tuple], float]:
    from exposition import parse
    text = (directory / TEXTFILES[writer]).read_text()
    return {(name, tuple(sorted(labels.items()))): value for name, labels, value in parse(text)}


def test_each_pass_writes_its_verdicts_for_node_exporter(node, tmp_path):
    metrics = tmp_path / "node-exporter"
    metrics.mkdir()
    cfg = replace(node.cfg, metrics_dir=metrics, mounts=("/not-mounted",))
    record = one_pass(cfg)
    series = _textfile(metrics, "health")
    assert series[("gpu_provision_health_check_ok", (("check", "health.munge"),))] == 1
    assert series[("gpu_provision_health_check_ok", (("check", "health.config"),))] == 1
    assert series[("gpu_provision_health_check_ok", (("check", "health.mount[/not-mounted]"),))] == 0
    assert series[("gpu_provision_health_pass_ok", ())] == 0 and not record.ok
    assert abs(series[("gpu_provision_health_last_pass_timestamp_seconds", ())] - time.time()) < 60
    assert record.metrics == ""
    assert one_pass(replace(cfg, mounts=())).ok
    assert _textfile(metrics, "health")[("gpu_provision_health_pass_ok", ())] == 1
    assert ("gpu_provision_health_check_ok", (("check", "health.mount[/not-mounted]"),)) not in _textfile(
        metrics, "health")  # the file is the last pass's, whole


def test_a_metrics_directory_that_is_missing_is_noted_and_the_pass_goes_on(node, tmp_path):
    record = one_pass(replace(node.cfg, metrics_dir=tmp_path / "absent"))
    assert record.ok and record.action == "none"
    assert record.metrics.startswith("metrics not written: ") and "absent" in record.metrics
    saved = json.loads((node.cfg.state_dir / "last.json").read_text())
    assert saved["metrics"] == record.metrics


def test_an_unwritable_metrics_directory_never_fails_a_pass(node, tmp_path, monkeypatch):
    from provision.certify.probe.metrics import textfile

    real = os.replace

    def full(source, target):
        if Path(target).parent == tmp_path / "m":
            raise OSError(28, "No space left on device")
        real(source, target)

    monkeypatch.setattr(textfile.os, "replace", full)
    (tmp_path / "m").mkdir()
    record = one_pass(replace(node.cfg, metrics_dir=tmp_path / "m"))
    assert record.ok and record.metrics == "metrics not written: No space left on device"
    assert list((tmp_path / "m").iterdir()) == []


def test_without_a_metrics_directory_nothing_is_written(node, tmp_path):
    assert node.cfg.metrics_dir is None
    assert one_pass(node.cfg).metrics == ""


@pytest.mark.parametrize(("value", "expected"), [(None, None), ("", None),
                                                 ("/var/lib/prometheus/node-exporter",
                                                  Path("/var/lib/prometheus/node-exporter"))])
def test_the_config_s_metrics_dir_is_a_path_or_off(value, expected):
    data = {"node": "n"} if value is None else {"node": "n", "metrics_dir": value}
    assert HealthConfig.from_dict(data).metrics_dir == expected


@pytest.mark.parametrize("value", ["relative/dir", 3, ["/x"]])
def test_a_bad_metrics_dir_is_refused_naming_the_field(value):
    with pytest.raises(ValueError, match="metrics_dir"):
        HealthConfig.from_dict({"node": "n", "metrics_dir": value})


def test_an_active_pass_s_checks_become_verdicts_and_figures():
    checks = [{"check": "active.net", "verdict": "fail", "subject": None, "value": 0.019, "unit": "Gb/s"},
              {"check": "active.gpu.gemm_bf16", "verdict": "pass", "subject": "gpu0", "value": 700, "unit": "TFLOP/s"},
              {"check": "active.dcgm", "verdict": "warn", "subject": None, "value": None, "unit": None},
              {"check": "active.fs", "verdict": "pass", "subject": None, "value": True, "unit": None}]
    samples = {(s.name, s.labels): s.value for s in textfiles.active_samples(checks, 1700000000.5)}
    assert samples[("gpu_provision_active_check_ok", (("check", "active.net"),))] == 0
    assert samples[("gpu_provision_active_check_ok", (("check", "active.dcgm"),))] == 1  # a warning does not drain
    assert samples[("gpu_provision_active_check_value", (("check", "active.gpu.gemm_bf16[gpu0]"),
                                                         ("unit", "TFLOP/s")))] == 700
    assert samples[("gpu_provision_active_check_value", (("check", "active.net"), ("unit", "Gb/s")))] == 0.019
    assert not any(n == "gpu_provision_active_check_value" and ("check", "active.fs") in labels
                   for n, labels in samples)  # a yes/no is no figure
    assert samples[("gpu_provision_active_last_pass_timestamp_seconds", ())] == 1700000000.5


def test_an_active_pass_without_verdicts_leaves_the_last_measured_file(tmp_path):
    checks = [{"check": "active.net", "verdict": "pass", "subject": None, "value": 1.0, "unit": "Gb/s"}]
    assert textfiles.publish_active(tmp_path, checks) == ""
    before = (tmp_path / TEXTFILES["active"]).read_text()
    assert textfiles.publish_active(tmp_path, []) == ""
    assert (tmp_path / TEXTFILES["active"]).read_text() == before
    assert textfiles.publish_active(None, checks) == ""


def _role_health_config(**overrides) -> HealthConfig:
    """The health config the slurm role renders for an 8-GPU node (vars/main.yml's _slurm_health_json, templated by
    Ansible with the role's defaults), read by the program."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import init_plugin_loader
    from ansible.template import Templar
    from ansible.utils.collection_loader import AnsibleCollectionConfig
    if not AnsibleCollectionConfig.collection_finder:
        init_plugin_loader()  # the template filters are plugins
    role, loader = Path(__file__).resolve().parents[3] / "playbooks/roles/slurm", DataLoader()
    variables = {**loader.load_from_file(str(role / "defaults/main.yml"), trusted_as_template=True), **overrides,
                 **loader.load_from_file(str(role / "vars/main.yml"), trusted_as_template=True)}
    variables.update(inventory_hostname="gpu01", node_gpu_model="H100-SXM", node_gpu_count=8, groups={"compute": []},
                     _slurm_config_paths=["/etc/slurm/slurm.conf"], _slurm_config_files=["slurm.conf"],
                     _slurm_expected_files={"slurm.conf": "a" * 40}, hostvars={})
    rendered = Templar(loader=loader, variables=variables).template(variables["_slurm_health_json"])
    return HealthConfig.from_dict(json.loads(str(rendered)))


def test_the_slurm_role_gives_the_program_node_exporter_s_directory_or_none():
    from provision.certify.probe.metrics.catalogue import TEXTFILE_DIR
    assert _role_health_config().metrics_dir == Path(TEXTFILE_DIR)
    assert _role_health_config(slurm_health_metrics_dir="").metrics_dir is None
