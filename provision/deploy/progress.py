"""Deploy progress as a live view or a log shows it (pure, no I/O).

A stage is one Ansible play ("Set up munge authentication on every node"). Within a stage each host is running,
done, failed or unreachable; a host is done when the stage ends (the next play starts, or the run's stats arrive),
failed the moment a task fails on it. `finished` records, in order, every host that finished a stage, so a log can
print one line per host and stage instead of one per task.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

RUNNING, DONE = "running", "done"
FAILED_STATES = ("failed", "unreachable")


@dataclass(frozen=True)
class HostFinished:
    """One host leaving one stage: done, or failed at a task."""

    stage: str
    host: str
    state: str  # done | failed | unreachable
    tasks: int  # tasks that finished on the host in this stage
    changed: int  # of which changed something
    seconds: float  # from the host's first task in the stage to its end
    task: str = ""  # the task that failed, if it failed


@dataclass
class StageProgress:
    """One stage: each host's state, the task running now, when it started and ended (epoch seconds, from the
    runner's event times)."""

    name: str
    started: float
    ended: float | None = None
    task: str = ""
    hosts: dict[str, str] = field(default_factory=dict)  # host -> running | done | failed | unreachable
    tasks: dict[str, int] = field(default_factory=dict)  # host -> tasks finished
    changed: dict[str, int] = field(default_factory=dict)  # host -> tasks that changed something
    since: dict[str, float] = field(default_factory=dict)  # host -> its first task's start

    def count(self, *states: str) -> int:
        """How many hosts are in any of the states."""
        return sum(1 for state in self.hosts.values() if state in states)

    def elapsed(self, now: float) -> float:
        """Seconds from the stage's start to its end, or to `now` while it runs."""
        return max(0.0, (self.ended if self.ended is not None else now) - self.started)

    def finish(self, host: str, state: str, when: float, task: str = "") -> HostFinished:
        """The host leaves the stage in `state`; its record for the log."""
        self.hosts[host] = state
        return HostFinished(self.name, host, state, self.tasks.get(host, 0), self.changed.get(host, 0),
                            max(0.0, when - self.since.get(host, when)), task)


@dataclass
class PlayProgress:
    """What a live view shows: the current play and task, each host's latest state, every stage so far, and the hosts
    that finished a stage, in order."""

    play: str = ""
    task: str = ""
    host_state: dict[str, str] = field(default_factory=dict)
    tasks_done: int = 0
    stages: list[StageProgress] = field(default_factory=list)
    finished: list[HostFinished] = field(default_factory=list)  # append-only

    @property
    def current(self) -> StageProgress | None:
        """The stage running now, if any."""
        return self.stages[-1] if self.stages and self.stages[-1].ended is None else None

    def start_stage(self, name: str, when: float) -> None:
        """A play starts: the one before it ends."""
        self.end_stage(when)
        self.stages.append(StageProgress(name, when))

    def end_stage(self, when: float) -> None:
        """The running stage ends: every host still running in it is done."""
        stage = self.current
        if stage is None:
            return
        for host in sorted(h for h, state in stage.hosts.items() if state == RUNNING):
            self.finished.append(stage.finish(host, DONE, when))
        stage.ended = when

    def task_started(self, task: str, when: float) -> None:
        """The stage's current task."""
        self._stage(when).task = task

    def host_started(self, host: str, when: float) -> None:
        """A task starts on a host: the host runs in this stage (unless it already failed in it)."""
        stage = self._stage(when)
        stage.since.setdefault(host, when)
        stage.hosts.setdefault(host, RUNNING)

    def host_task_done(self, host: str, changed: bool, when: float) -> None:
        """A task ended on a host (ok, changed or skipped)."""
        self.host_started(host, when)
        stage = self._stage(when)
        stage.tasks[host] = stage.tasks.get(host, 0) + 1
        stage.changed[host] = stage.changed.get(host, 0) + int(changed)

    def host_failed(self, host: str, state: str, task: str, when: float) -> None:
        """A task failed on a host (or it became unreachable): it leaves the stage now."""
        self.host_started(host, when)
        stage = self._stage(when)
        if stage.hosts[host] == RUNNING:
            stage.tasks[host] = stage.tasks.get(host, 0) + 1
            self.finished.append(stage.finish(host, state, when, task))

    def _stage(self, when: float) -> StageProgress:
        """The running stage; an unnamed one if events come before any play (never from ansible-playbook)."""
        if self.current is None:
            self.stages.append(StageProgress(self.play or "(no play)", when))
        return self.stages[-1]


OnUpdate = Callable[[PlayProgress], None]
