"""Rich rendering of a deploy: a live per-stage view (hosts done / running / failed, elapsed time, the task running
now), one line per host and stage without a terminal, and the final recap table."""
from __future__ import annotations

import time

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from provision.cli.output import err, out
from provision.deploy.progress import HostFinished, PlayProgress, StageProgress
from provision.deploy.records import DeployResult

_COLOURS = {"ok": "green", "changed": "yellow", "failed": "red", "unreachable": "magenta", "done": "green"}
SHOWN_STAGES = 8  # the live view shows the newest stages; the log has them all
_SHOWN_HOSTS = 64  # host states on the live view's last line
_FIXED_WIDTH = 7 + 6 * 2 + len("donerunningfailedelapsed") + 1  # borders, padding and the count columns


class _Snapshot:
    """The live view at one event: the stages' rows and hosts' states copied out (the runner keeps changing the
    progress), the running stage's elapsed time computed when rich draws, so it ticks between events."""

    def __init__(self, progress: PlayProgress) -> None:
        self.rows = [(s.name, s.count("done"), s.count("running"), s.count("failed", "unreachable"), s.started,
                      s.ended, s.task if s.ended is None else "") for s in progress.stages[-SHOWN_STAGES:]]
        self.earlier = max(0, len(progress.stages) - SHOWN_STAGES)
        self.hosts = sorted(progress.host_state.items())

    def __rich_console__(self, console: Console, options):
        """The table fitted to the terminal's width (stage and task names cut with an ellipsis), then the hosts."""
        now = time.time()
        title = f"deploy ({self.earlier} earlier stages not shown)" if self.earlier else "deploy"
        table = Table(title=title, title_justify="left")
        names = max(16, options.max_width - _FIXED_WIDTH)  # what the stage and the task share
        table.add_column("stage", no_wrap=True, overflow="ellipsis", width=min(36, names // 2))
        for name in ("done", "running", "failed", "elapsed"):
            table.add_column(name, justify="right", no_wrap=True)
        table.add_column("task", no_wrap=True, overflow="ellipsis", width=names - min(36, names // 2))
        for name, done, running, failed, started, ended, task in self.rows:
            elapsed = (ended if ended is not None else now) - started
            table.add_row(name, str(done), str(running), Text(str(failed), style="red" if failed else ""),
                          duration(elapsed), task)
        hosts = Text()
        for host, state in self.hosts[:_SHOWN_HOSTS]:
            hosts.append(f"{host}:{state} ", style=_COLOURS.get(state, ""))
        if len(self.hosts) > _SHOWN_HOSTS:
            hosts.append(f"... {len(self.hosts) - _SHOWN_HOSTS} more hosts")
        yield table
        yield hosts


class DeployWatch:
    """The engine's on_update callback as the terminal shows it: a live view on a terminal, one line per host and
    stage otherwise (CI logs), nothing for --json. start() and stop() bracket the run (or use it as a context
    manager)."""

    def __init__(self, quiet: bool, json_out: bool) -> None:
        live = not quiet and not json_out and err.is_terminal
        self._live = Live(console=err, refresh_per_second=4, transient=True) if live else None
        self._log = StageLog() if not live and not json_out else None

    def start(self) -> None:
        if self._live:
            self._live.start()

    def stop(self) -> None:
        if self._live:
            self._live.stop()

    def __enter__(self) -> DeployWatch:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def update(self, progress: PlayProgress) -> None:
        """Redraw on every event (rich throttles the terminal writes), or print what finished since the last one."""
        if self._live:
            self._live.update(_Snapshot(progress))
        elif self._log:
            self._log.print_new(progress)


class StageLog:
    """For logs: a line when a host finishes a stage (done, or failed at a task), and one when a stage ends."""

    def __init__(self, console: Console = err) -> None:
        self._console = console
        self._hosts_printed = 0
        self._stages_printed = 0

    def print_new(self, progress: PlayProgress) -> None:
        """Print the hosts that finished and the stages that ended since the last call."""
        for finished in progress.finished[self._hosts_printed:]:
            self._console.print(host_line(finished))
        self._hosts_printed = len(progress.finished)
        ended = [s for s in progress.stages if s.ended is not None]
        for stage in ended[self._stages_printed:]:
            self._console.print(stage_line(stage))
        self._stages_printed = len(ended)


def host_line(finished: HostFinished) -> Text:
    """`[stage] host done: 12 tasks, 3 changed, 41 s` or `... failed at "task": 3 tasks, 4 s`."""
    state = f"{finished.state} at {finished.task!r}" if finished.task else finished.state
    return Text.assemble(("[", "dim"), finished.stage, ("] ", "dim"), finished.host, " ",
                         (state, _COLOURS.get(finished.state, "")),
                         f": {finished.tasks} tasks, {finished.changed} changed, {duration(finished.seconds)}")


def stage_line(stage: StageProgress) -> Text:
    """`[stage] finished in 41 s: 4 hosts done, 0 failed`."""
    failed = stage.count("failed", "unreachable")
    took = duration(stage.elapsed(stage.ended or stage.started))
    return Text.assemble(("[", "dim"), stage.name, ("] ", "dim"), f"finished in {took}: "
                         f"{stage.count('done')} hosts done, ", (f"{failed} failed", "red" if failed else ""))


def duration(seconds: float) -> str:
    """41 s, 12m05s, 2h03m."""
    whole = int(max(seconds, 0.0))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def recap(result: DeployResult, console: Console = out) -> None:
    """The final table: per host counts, status, and the failing task with its message (on `console`)."""
    title = "plan (check mode): what would change" if result.check_mode else "deploy recap"
    table = Table("host", "ok", "changed", "failed", "unreachable", "status", "failed task / message", title=title)
    for host in result.hosts:
        colour = _COLOURS.get(host.status, "")
        detail = f"{host.failed_task}: {host.message}" if host.failed_task else ""
        if result.check_mode and host.changed_tasks:
            detail = "would change: " + "; ".join(dict.fromkeys(host.changed_tasks))
        table.add_row(host.host, str(host.ok), str(host.changed), str(host.failed), str(host.unreachable),
                      Text(host.status, style=colour), detail)
    console.print(table)
    if result.cancelled:
        err.print(Text("deploy cancelled (signal); run it again to converge", style="red"))
    if result.check_mode and result.ok:
        changed = result.changed_hosts
        console.print(f"drift on {', '.join(changed)}: a deploy would change what is listed above" if changed
                  else "no changes: every host matches the spec")
    if not result.ok:
        failed = ", ".join(result.failed_hosts) or "the run itself"
        err.print(Text.assemble((f"failed: {failed}", "red"), f"; artifacts: {result.artifacts_dir}"))
