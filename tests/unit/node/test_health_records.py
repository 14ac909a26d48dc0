"""`provision health` reads each node's last pass (a record, none yet, or one it cannot read), and `--now` runs one
on every compute node at once, waiting out a pass that holds the program's lock."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from provision.errors import ConnectionFailure, UsageError
from provision.node import health
from provision.node.health import parse, parse_pass
from provision.records import ClusterInfo, NodeInfo
from provision.remote.commands import CommandResult


def test_a_failed_pass_names_its_checks_and_what_slurm_was_told():
    record = {"node": "compute02", "started": "2026-11-23T19:00:00+0000", "seconds": 0.08, "ok": False,
              "action": "drained", "reason": "hc:munge: munge: Error (gpu-provision-health)", "trigger": "service",
              "checks": [{"check": "health.munge", "verdict": "fail", "subject": None},
                         {"check": "health.mount", "verdict": "fail", "subject": "/shared"},
                         {"check": "health.config", "verdict": "pass", "subject": None}]}
    found = parse(CommandResult("compute02", 0, json.dumps(record), ""))
    assert found.ok is False and found.failed == ("health.munge", "health.mount[/shared]")
    assert found.action == "drained" and found.trigger == "service" and found.to_dict()["failed"] == list(found.failed)


def test_no_record_yet_and_an_unreadable_one_are_told_apart():
    missing = parse(CommandResult("compute01", 1, "", "cat: /var/lib/gpu-provision/health/last.json: No such file or "
                                                      "directory\n"))
    assert missing.ok is None and missing.error == "no health record yet"
    garbled = parse(CommandResult("compute01", 0, "{not json", ""))
    assert garbled.ok is None and garbled.error.startswith("unreadable health record")
    unreachable = parse(CommandResult("compute03", 255, "", "compute03: connection refused\n"))
    assert unreachable.ok is None and unreachable.error == "compute03: connection refused"


RECORD = {"node": "compute01", "started": "2026-11-27T16:13:25+0000", "seconds": 0.1, "ok": False, "action": "drained",
          "reason": "hc:slurmd: no slurmd process is running (gpu-provision-health)", "trigger": "once",
          "checks": [{"check": "health.slurmd", "verdict": "fail", "subject": None}]}


@pytest.mark.parametrize(("result", "ok", "said"), [
    (CommandResult("c1", 1, json.dumps(RECORD) + "\n", ""), False, ""),  # exit 1: a check failed, a record all the same
    (CommandResult("c1", 0, json.dumps({**RECORD, "ok": True, "checks": []}), ""), True, ""),
    (CommandResult("c1", 0, "", ""), None, "the health program is not installed on the node yet"),
    (CommandResult("c1", 0, '{"node": "c1", "skipped": "another pass is running"}', ""), None,
     "no pass ran: another pass is running"),
    (CommandResult("c1", 124, "", ""), None, "no pass ran: it did not end within 30 s"),
    (CommandResult("c1", 2, "", "gpu-provision-health: /etc/gpu-provision/health.json: cannot read\n"), None,
     "no pass ran: gpu-provision-health: /etc/gpu-provision/health.json: cannot read"),
    (CommandResult("c1", 255, "", "c1 (10.0.0.1:22): connection refused\n"), None,
     "no pass ran: c1 (10.0.0.1:22): connection refused"),
])
def test_a_pass_run_now_is_read_from_what_the_program_printed(result, ok, said):
    found = parse_pass(result)
    assert found.ok is ok and found.error.startswith(said)
    if ok is False:
        assert found.failed == ("health.slurmd",) and found.reason.startswith("hc:slurmd: ")


def _cluster() -> ClusterInfo:
    return ClusterInfo(name="c", provider="static", nodes=(
        NodeInfo(name="ctl01", group="ctl", roles=("controller",), address="10.0.0.10", state="unknown"),
        *(NodeInfo(name=f"c{i}", group="compute", roles=("compute",), address=f"10.0.0.{i}", state="unknown")
          for i in (1, 2, 3))))


def test_now_runs_one_pass_on_every_compute_node_and_waits_out_a_running_one(monkeypatch, tmp_path: Path):
    """The command each node gets, run by a real shell against a stand-in program: on c2 another pass holds the lock
    for the first two tries; c3 cannot be reached."""
    program = tmp_path / "gpu-provision-health"
    program.write_text("#!/bin/sh\n"
                       f"n=$(cat {tmp_path}/$NODE.tries 2>/dev/null || echo 0); echo $((n + 1)) > {tmp_path}/$NODE.tries\n"
                       'if [ "$NODE" = c2 ] && [ "$n" -lt 2 ]; then echo \'{"node": "c2", "skipped": "another pass is '
                       'running"}\'; exit 0; fi\n'
                       f"echo '{json.dumps(RECORD)}' | sed \"s/compute01/$NODE/\"; exit 1\n")
    program.chmod(0o755)
    asked = []

    def run_on(cluster, node, command, timeout):
        asked.append(node.name)
        if node.name == "c3":
            raise ConnectionFailure("c3 (10.0.0.3:22): connection refused")
        done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=timeout,
                              env={"PATH": "/usr/bin:/bin", "NODE": node.name})
        return CommandResult(node.name, done.returncode, done.stdout, done.stderr)
    monkeypatch.setattr(health, "run_on", run_on)
    found = {p.node: p for p in health.pass_now(_cluster(), program=str(program))}
    assert sorted(asked) == ["c1", "c2", "c3"]  # compute nodes only
    assert found["c1"].ok is False and found["c1"].failed == ("health.slurmd",)
    assert found["c2"].ok is False and (tmp_path / "c2.tries").read_text().strip() == "3"
    assert found["c3"].ok is None and "connection refused" in found["c3"].error


def test_now_is_refused_where_the_spec_switched_the_program_off():
    spec = SimpleNamespace(name="demo", health=SimpleNamespace(enabled=False))
    with pytest.raises(UsageError, match="switched off in the spec"):
        health.run_now(spec, _cluster())


def _active(checks, **fields) -> CommandResult:
    from provision.certify.probe.nodehealth.active import ActiveRecord
    record = ActiveRecord("compute02", started=1795898892.43, checks=checks, **fields).to_dict()
    return CommandResult("compute02", 0, json.dumps(record), "")


def test_an_active_pass_shows_where_it_ran_what_failed_and_why_one_gave_no_verdict():
    net = {"check": "active.net", "verdict": "fail", "subject": None, "detail": "confirmed: 0.0165 then 0.0189 Gb/s"}
    failed = health.parse_active(_active([net, {"check": "active.memory_bw", "verdict": "pass"}], where="job",
                                         action="drained", reason="ac:net: confirmed ... (gpu-provision-active)"))
    assert failed.ok is False and failed.failed == ("active.net",) and failed.trigger == "job"
    assert failed.action == "drained" and failed.started == "2026-11-28T20:48:12+0000"
    passed = health.parse_active(_active([{"check": "active.net", "verdict": "pass"}], where="direct",
                                         action="resumed"))
    assert passed.ok is True and passed.action == "resumed" and passed.trigger == "direct"
    preempted = health.parse_active(_active([], where="job", why="no verdict: the job ended without one (srun: "
                                                                   "Force Terminated StepId=12.0)"))
    assert preempted.ok is None and preempted.error.startswith("no verdict: the job ended")
    none_yet = health.parse_active(CommandResult("compute02", 1, "", "cat: active.json: No such file or directory"))
    assert none_yet.ok is None and none_yet.error == "no active pass yet"
