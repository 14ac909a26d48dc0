"""Per-stage, per-host deploy progress from runner events: who is running, done or failed in each play, when each
stage started and ended, and one record per host and stage for the log (synthetic and recorded events)."""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from provision.deploy.events import EventTracker, event_time
from provision.deploy.progress import HostFinished

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "deploy" / "four_nodes_probe_copy_failed.jsonl"


def _ev(kind: str, at: float, **data) -> dict:
    return {"event": kind, "created": datetime.fromtimestamp(at, timezone.utc).isoformat(), "event_data": data}


def _feed(tracker: EventTracker, events: list[dict]) -> EventTracker:
    for event in events:
        tracker(event)
    return tracker


PLAY_A = [
    _ev("playbook_on_play_start", 100.0, play="Set up munge"),
    _ev("playbook_on_task_start", 100.0, task="Install munge"),
    *[_ev("runner_on_start", 100.5, host=h) for h in ("n1", "n2", "n3")],
    _ev("runner_on_ok", 101.0, host="n1", task="Install munge", res={"changed": True}),
    _ev("runner_on_failed", 102.0, host="n2", task="Install munge", res={"msg": "no munge"}),
    _ev("runner_on_skipped", 103.0, host="n3"),
    _ev("playbook_on_task_start", 103.0, task="Start munge"),
    _ev("runner_on_start", 103.0, host="n1"),
    _ev("runner_on_start", 103.0, host="n3"),
]


def test_within_a_stage_hosts_run_until_one_fails():
    progress = _feed(EventTracker(), PLAY_A).progress
    stage = progress.current
    assert (stage.name, stage.task) == ("Set up munge", "Start munge")
    assert (stage.count("done"), stage.count("running"), stage.count("failed", "unreachable")) == (0, 2, 1)
    assert stage.elapsed(now=109.0) == 9.0
    assert progress.finished == [HostFinished("Set up munge", "n2", "failed", 1, 0, 1.5, "Install munge")]


def test_a_stage_ends_when_the_next_play_starts_and_its_running_hosts_are_done():
    progress = _feed(EventTracker(), [
        *PLAY_A,
        _ev("runner_on_ok", 104.0, host="n1", task="Start munge", res={"changed": True}),
        _ev("runner_on_ok", 104.0, host="n3", task="Start munge"),
        _ev("playbook_on_play_start", 110.0, play="Set up Slurm"),
        _ev("playbook_on_task_start", 110.0, task="Install slurmd"),
        _ev("runner_on_start", 110.5, host="n1"),
    ]).progress
    munge, slurm = progress.stages
    assert (munge.ended, munge.elapsed(now=999.0)) == (110.0, 10.0)  # an ended stage's time stands still
    assert (munge.count("done"), munge.count("running"), munge.count("failed")) == (2, 0, 1)
    assert progress.finished[1:] == [HostFinished("Set up munge", "n1", "done", 2, 2, 9.5),
                                     HostFinished("Set up munge", "n3", "done", 2, 0, 9.5)]
    assert progress.current is slurm and slurm.hosts == {"n1": "running"}  # the failed host takes no part
    assert slurm.elapsed(now=115.0) == 5.0


def test_the_stats_end_the_last_stage():
    progress = _feed(EventTracker(), [*PLAY_A, _ev("playbook_on_stats", 120.0, ok={"n1": 1})]).progress
    assert progress.current is None and progress.stages[0].ended == 120.0
    assert [(f.host, f.state) for f in progress.finished] == [("n2", "failed"), ("n1", "done"), ("n3", "done")]


def test_an_ignored_error_is_a_finished_task_not_a_failure():
    progress = _feed(EventTracker(), [*PLAY_A[:3], _ev("runner_on_failed", 101.0, host="n1", task="Probe",
                                                        ignore_errors=True, res={"msg": "absent"})]).progress
    assert progress.current.hosts["n1"] == "running" and progress.current.tasks["n1"] == 1
    assert progress.finished == []


def test_an_unreachable_host_leaves_the_stage_as_unreachable():
    progress = _feed(EventTracker(), [*PLAY_A[:3], _ev("runner_on_unreachable", 130.0, host="n1",
                                                        task="Gathering Facts", res={"msg": "No route"})]).progress
    assert progress.current.count("unreachable") == 1
    assert progress.finished[0].state == "unreachable" and progress.finished[0].task == "Gathering Facts"


def test_event_time_is_the_runner_stamp_or_now():
    assert event_time({"created": "2026-11-23T16:33:50.5+00:00"}, lambda: 0.0) == \
        datetime(2026, 11, 23, 16, 33, 50, 500000, tzinfo=timezone.utc).timestamp()
    assert event_time({"event": "x"}, lambda: 42.0) == 42.0


def test_a_recorded_four_node_deploy_gives_one_record_per_host_and_stage():
    events = [json.loads(line) for line in RECORDED.read_text().splitlines()]
    tracker = _feed(EventTracker(), events)
    progress = tracker.progress
    plays = [e["event_data"]["play"] for e in events if e["event"] == "playbook_on_play_start"]
    assert [s.name for s in progress.stages] == plays and all(s.ended is not None for s in progress.stages)
    per_stage = {(f.stage, f.host) for f in progress.finished}
    assert len(per_stage) == len(progress.finished)  # a host finishes a stage once
    taking_part = sum(len(s.hosts) for s in progress.stages)
    assert len(progress.finished) == taking_part
    last = progress.stages[-1]
    assert last.count("failed") == 4 and last.count("done") == 0
    failures = {f.host: f.task for f in progress.finished if f.state == "failed"}
    assert failures == {h: "Copy the probe, nvidia-ml-py, the sources and the launcher as one archive"
                        for h in ("ctl01", "cn01", "cn02", "cn03")}
    assert all(s.count("done") == len(s.hosts) for s in progress.stages[:-1])  # every earlier stage went through
    first_start, end = progress.stages[0].started, progress.stages[-1].ended
    assert abs(sum(s.elapsed(end) for s in progress.stages) - (end - first_start)) < 1e-6  # stages tile the run
    stats = {h.host: h for h in tracker.results()}
    for host, result in stats.items():  # tasks counted per stage add up to the run's own recap
        counted = sum(s.tasks.get(host, 0) for s in progress.stages)
        assert counted == result.ok + result.skipped + result.failed, host
