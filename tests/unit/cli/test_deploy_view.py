"""The deploy on screen: a live table per stage (hosts done / running / failed, elapsed time, current task) and,
without a terminal, one line per host and stage rather than one per task."""
from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace

from rich.console import Console

from provision.cli import deploy_view
from provision.deploy.events import EventTracker

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
