"""The deploy on screen: a live table per stage (hosts done / running / failed, elapsed time, current task) and,
without a terminal, one line per host and stage rather than one per task."""
from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from provision.cli import deploy_view
from provision.deploy.events import EventTracker
from provision.deploy.progress import PlayProgress
from provision.deploy.records import DeployResult, HostResult

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "deploy" / "four_nodes_probe_copy_failed.jsonl"


def _console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=240, markup=False, emoji=False, highlight=False), buffer


def test_the_log_prints_a_line_per_host_and_stage_not_per_task():
    console, buffer = _console()
    log = deploy_view.StageLog(console)
    events = [json.loads(line) for line in RECORDED.read_text().splitlines()]
    tracker = EventTracker(log.print_new)
    for event in events:
        tracker(event)
    lines = buffer.getvalue().splitlines()
    stages = tracker.progress.stages
    assert len(lines) == len(tracker.progress.finished) + len(stages)
    assert len(lines) < sum(e["event"] == "playbook_on_task_start" for e in events)
    assert lines[0].startswith("[Prepare every node] cn01 done: ") and lines[0].endswith(" s")
    assert lines[4].startswith("[Prepare every node] finished in ") and lines[4].endswith("4 hosts done, 0 failed")
    assert lines[-1].endswith("0 hosts done, 4 failed")
    assert "cn02 failed at 'Copy the probe, nvidia-ml-py, the sources and the launcher as one archive'" in lines[-5]


def test_the_live_view_shows_counts_elapsed_time_and_the_current_task(monkeypatch):
    tracker = EventTracker()
    for event in [json.loads(line) for line in RECORDED.read_text().splitlines()][:200]:
        tracker(event)
    progress = tracker.progress
    current = progress.current
    monkeypatch.setattr(deploy_view, "time", SimpleNamespace(time=lambda: current.started + 42.0))
    console, buffer = _console()
    console.print(deploy_view._Snapshot(progress))
    shown = buffer.getvalue()
    row = next(line for line in shown.splitlines() if current.name[:30] in line)
    cells = [c.strip() for c in row.split("│") if c.strip()]
    assert cells[1:5] == [str(current.count("done")), str(current.count("running")), "0", "42 s"]
    assert current.task[:20] in row
    first = next(line for line in shown.splitlines() if "Prepare every node" in line)
    assert [c.strip() for c in first.split("│") if c.strip()][1:4] == ["4", "0", "0"]
    assert "ctl01:" in shown and "cn03:" in shown


def test_durations_read_as_seconds_minutes_or_hours():
    assert [deploy_view.duration(s) for s in (0.4, 41.9, 60, 725, 7380, -3)] == \
        ["0 s", "41 s", "1m00s", "12m05s", "2h03m", "0 s"]


LONG_STAGE = ("Install the NVIDIA driver from the CUDA repository pinned to the spec's branch with its kernel modules "
              "built for the running kernel of every GPU node")


def _progress_with(stage: str) -> PlayProgress:
    progress = PlayProgress()
    progress.start_stage(stage, 100.0)
    progress.task_started("Build the kernel modules with DKMS for the running kernel and load them", 100.0)
    progress.host_started("gpu01", 100.0)
    return progress


@pytest.mark.parametrize("width", [200, 100, 60])
def test_stage_and_task_names_wrap_and_are_never_cut(monkeypatch, width):
    monkeypatch.setattr(deploy_view, "time", SimpleNamespace(time=lambda: 160.0))
    buffer = io.StringIO()
    Console(file=buffer, width=width, markup=False, emoji=False, highlight=False).print(
        deploy_view._Snapshot(_progress_with(LONG_STAGE)))
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in buffer.getvalue().splitlines()
            if line.startswith("│")]
    column = [" ".join(cell for cell in (row[i] for row in rows) if cell) for i in range(6)]
    unspaced = [text.replace(" ", "") for text in column]  # a narrow column folds a long word: no letter is lost
    assert unspaced[0] == LONG_STAGE.replace(" ", "") and "…" not in buffer.getvalue()
    assert unspaced[5] == "Build the kernel modules with DKMS for the running kernel and load them".replace(" ", "")
    assert column[4] == "1m00s"
    assert max(len(line) for line in buffer.getvalue().splitlines()) <= width


def test_a_rolling_wait_is_shown_under_the_table_and_the_view_ends_with_a_summary():
    buffer = io.StringIO()
    console = Console(file=buffer, width=160, markup=False, emoji=False, highlight=False, force_terminal=False)
    watch = deploy_view.DeployWatch(quiet=False, json_out=False, console=console, live=True)
    watch.start()
    first = _progress_with("Set up munge authentication on every node")
    first.host_task_done("gpu01", True, 103.0)
    first.end_stage(105.0)
    watch.update(first)
    watch.line("batch 2: holding gpu[03-04] (no new jobs there) and waiting for their jobs")
    watch.line("waiting for job(s) 41, 42 on gpu[03-04]: 0 s of 600 s (--drain-timeout)")
    watch.line("waiting for job(s) 41, 42 on gpu[03-04]: 10 s of 600 s (--drain-timeout)")
    shown = io.StringIO()
    Console(file=shown, width=160, markup=False, emoji=False, highlight=False).print(watch._view())
    assert "waiting for job(s) 41, 42 on gpu[03-04]: 10 s of 600 s (--drain-timeout)" in shown.getvalue()
    assert "Set up munge authentication on every node" in shown.getvalue()
    second = _progress_with("Set up munge authentication on every node")
    second.host_failed("gpu01", "failed", "Install munge", 110.0)
    watch.update(second)
    watch.stop()
    printed = buffer.getvalue()
    assert printed.count("waiting for job(s) 41, 42 on gpu[03-04]") == 1  # a wait that only counts up: printed once
    summary = printed[printed.index("deploy summary"):]
    rows = [[c.strip() for c in line.split("│") if c.strip()] for line in summary.splitlines() if "munge" in line]
    assert rows == [["[gpu01] Set up munge authentication on every node", "0", "1", "0", "5 s"],
                    ["[gpu01] Set up munge authentication on every node", "0", "0", "1", rows[1][-1]]]


def test_the_summary_counts_hosts_per_stage_of_a_recorded_deploy():
    tracker = EventTracker()
    for event in [json.loads(line) for line in RECORDED.read_text().splitlines()]:
        tracker(event)
    buffer = io.StringIO()
    Console(file=buffer, width=200, markup=False, emoji=False, highlight=False).print(
        deploy_view.stage_summary([tracker.progress]))
    rows = {cells[0]: cells[1:4] for line in buffer.getvalue().splitlines()
            if len(cells := [c.strip() for c in line.split("│") if c.strip()]) == 5}
    assert rows["Prepare every node"][2] == "0" and sum(map(int, rows["Prepare every node"])) == 4
    assert list(rows.values())[-1] == ["0", "0", "4"]


def test_a_deploys_notes_follow_its_recap_on_stderr_and_are_in_its_json(monkeypatch):
    console, shown = _console()
    errors, said = _console()
    monkeypatch.setattr(deploy_view, "err", errors)
    result = DeployResult([HostResult("ctl01", ok=3)], Path("/a"), rc=0,
                          notes=["deploy metrics: not written: the monitoring node ctl01 is unreachable in this run"])
    deploy_view.recap(result, console)
    assert "ctl01" in shown.getvalue() and "note: deploy metrics: not written" in said.getvalue()
    assert result.ok and result.as_dict()["notes"] == result.notes
