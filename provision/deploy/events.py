"""Turn ansible-runner's event stream into live progress and per-host results (pure, no I/O)."""
from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable
from datetime import datetime

from provision.deploy.diffs import task_diff
from provision.deploy.progress import OnUpdate, PlayProgress
from provision.deploy.records import HostResult

__all__ = ["EventTracker", "OnUpdate", "PlayProgress", "failure_message"]
# OpenSSH's words when StrictHostKeyChecking=yes refuses a key
_HOST_KEY_REFUSED = "Host key verification failed"
_CHANGED_KEY = re.compile(r"Host key for (\S+) has changed")
_UNKNOWN_KEY = re.compile(r"host key is known for (\S+) and")
_REMOVE_KEY = re.compile(r'ssh-keygen -f "([^"]+)" -R "([^"]+)"')
_STAT_KEYS = {"ok": "ok", "changed": "changed", "failures": "failed", "dark": "unreachable", "skipped": "skipped"}


class EventTracker:
    """Consumes runner events; keeps progress and the failure details the recap needs."""

    def __init__(self, on_update: OnUpdate | None = None, clock: Callable[[], float] = time.time) -> None:
        self.progress = PlayProgress()
        self.hosts: dict[str, HostResult] = {}
        self.stats_seen = False
        self._on_update = on_update
        self._clock = clock
        self._when = 0.0  # the time of the event being handled (epoch seconds)

    def __call__(self, event: dict) -> bool:
        """ansible-runner event_handler: record the event; True keeps it in the artifacts."""
        handler = getattr(self, f"_on_{event.get('event', '')}", None)
        if handler:
            self._when = event_time(event, self._clock)
            handler(event.get("event_data", {}))
            if self._on_update:
                self._on_update(self.progress)
        return True

    def _host(self, name: str) -> HostResult:
        return self.hosts.setdefault(name, HostResult(host=name))

    def _on_playbook_on_play_start(self, data: dict) -> None:
        self.progress.play = data.get("play", "")
        self.progress.start_stage(self.progress.play, self._when)

    def _on_playbook_on_task_start(self, data: dict) -> None:
        self.progress.task = data.get("task", "")
        self.progress.tasks_done += 1
        self.progress.task_started(self.progress.task, self._when)

    def _on_runner_on_start(self, data: dict) -> None:
        self.progress.host_started(data.get("host", ""), self._when)

    def _on_runner_on_ok(self, data: dict) -> None:
        host = data.get("host", "")
        res = data.get("res") or {}
        changed = bool(res.get("changed"))
        self.progress.host_state[host] = "changed" if changed else "ok"
        self.progress.host_task_done(host, changed, self._when)
        if changed:
            self._host(host).changed_tasks.append(data.get("task", ""))
            diff = task_diff(data.get("task", ""), res)  # None for a no_log task: its result is censored
            if diff:
                self._host(host).diffs.append(diff)

    def _on_runner_on_failed(self, data: dict) -> None:
        if data.get("ignore_errors"):
            self.progress.host_task_done(data.get("host", ""), False, self._when)
            return
        self._record_failure(data, "failed")

    def _on_runner_on_unreachable(self, data: dict) -> None:
        self._record_failure(data, "unreachable")

    def _on_runner_on_skipped(self, data: dict) -> None:
        self.progress.host_state.setdefault(data.get("host", ""), "ok")
        self.progress.host_task_done(data.get("host", ""), False, self._when)

    def _record_failure(self, data: dict, kind: str) -> None:
        """Keep the first failing task on a host and its message (one line)."""
        host = self._host(data.get("host", ""))
        self.progress.host_state[host.host] = kind
        self.progress.host_failed(host.host, kind, data.get("task", ""), self._when)
        if host.failed_task is None:
            host.failed_task = data.get("task", "")
            host.message = failure_message(data.get("res") or {})

    def _on_playbook_on_stats(self, data: dict) -> None:
        self.stats_seen = True
        self.progress.end_stage(self._when)
        for stat, attr in _STAT_KEYS.items():
            for host, count in (data.get(stat) or {}).items():
                setattr(self._host(host), attr, count)

    def would_run(self, tasks: list[tuple[str, str]]) -> None:
        """Check mode: command tasks skipped because they would have run count as tasks that would change."""
        for host, task in tasks:
            found = self._host(host)
            if task not in found.changed_tasks:
                found.changed_tasks.append(task)

    def results(self) -> list[HostResult]:
        """Per-host results sorted by name."""
        return [self.hosts[name] for name in sorted(self.hosts)]


def event_time(event: dict, clock: Callable[[], float]) -> float:
    """When the runner created the event (its `created` stamp), else now."""
    try:
        return datetime.fromisoformat(event["created"]).timestamp()
    except (KeyError, TypeError, ValueError):
        return clock()


def failure_message(res: dict) -> str:
    """The most useful single line of a failed task's result."""
    if res.get("censored"):
        return "output hidden (no_log); see the role's validate messages"
    if _HOST_KEY_REFUSED in str(res.get("msg", "")):
        return host_key_message(str(res["msg"]))
    for key in ("msg", "stderr", "module_stderr", "stdout"):
        text = res.get(key)
        if text:
            lines = [line for line in str(text).strip().splitlines() if line.strip()]
            if lines:
                return lines[-1][:400] if key != "msg" else " ".join(lines)[:400]
    return "failed without a message"


def host_key_message(ssh_error: str) -> str:
    """ssh's refusal of an unknown or changed host key (before any login), in our words and with the fix."""
    changed = _CHANGED_KEY.search(ssh_error)
    if changed:
        remove = _REMOVE_KEY.search(ssh_error)
        fix = shlex.join(["ssh-keygen", "-f", remove[1], "-R", remove[2]]) if remove else "remove its known_hosts line"
        return (f"host key changed for {changed[1]}: ssh refused to log in (an impostor at the node's address, or "
                f"the node was reinstalled); if the change is expected: {fix}, then "
                "`provision preflight SPEC --accept-new-host-keys`")
    unknown = _UNKNOWN_KEY.search(ssh_error)
    where = f" for {unknown[1]}" if unknown else ""
    return (f"host key unknown{where}: ssh refused to log in (the cluster's known_hosts has no key for it); verify "
            "the node, then record its key with `provision preflight SPEC --accept-new-host-keys`")
