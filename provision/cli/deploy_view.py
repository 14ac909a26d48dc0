"""Rich rendering of a deploy: a live per-stage view (hosts done / running / failed, elapsed time, the task running
now, what a rolling deploy waits for) ending with a per-stage summary, one line per host and stage without a
terminal, and the final recap table with, in check mode, the diff of each file."""
from __future__ import annotations

import re
import time

from rich.console import Console, Group
from rich.live import Live
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from provision import hostlist
from provision.cli.output import err, out
from provision.deploy.diffs import DiffBlock
from provision.deploy.progress import FAILED_STATES, HostFinished, PlayProgress, StageProgress
from provision.deploy.records import DeployResult

_COLOURS = {"ok": "green", "changed": "yellow", "failed": "red", "unreachable": "magenta", "done": "green"}
SHOWN_STAGES = 8  # the live view shows the newest stages; the log has them all
_SHOWN_HOSTS = 64  # host states on the live view's last line
_DIGITS = re.compile(r"[0-9]+")


class _Snapshot:
    """The live view at one event: the stages' rows and hosts' states copied out (the runner keeps changing the
    progress), the running stage's elapsed time computed when rich draws, so it ticks between events."""

    def __init__(self, progress: PlayProgress) -> None:
        self.rows = [(s.name, s.count("done"), s.count("running"), s.count("failed", "unreachable"), s.started,
                      s.ended, s.task if s.ended is None else "") for s in progress.stages[-SHOWN_STAGES:]]
        self.earlier = max(0, len(progress.stages) - SHOWN_STAGES)
        self.hosts = sorted(progress.host_state.items())

    def __rich_console__(self, console: Console, options):
        """The table as wide as the terminal, stage and task names wrapped (never cut), then the hosts."""
        now = time.time()
        title = f"deploy ({self.earlier} earlier stages not shown)" if self.earlier else "deploy"
        table = Table(title=title, title_justify="left", expand=True)
        table.add_column("stage", overflow="fold", ratio=1)
        for name in ("done", "running", "failed", "elapsed"):
            table.add_column(name, justify="right", no_wrap=True)
        table.add_column("task", overflow="fold", ratio=1)
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
    manager); on a terminal, stop() leaves a summary per stage of every run watched (a rolling deploy runs one per
    batch). `line` is a Progress callback for what happens between runs (a rolling deploy's holds and waits): on a
    terminal the newest line stays under the table, with a spinner, while the next one is awaited."""

    def __init__(self, quiet: bool, json_out: bool, console: Console = err, live: bool | None = None) -> None:
        live = (not quiet and not json_out and console.is_terminal) if live is None else live
        self._console = console
        self._live = Live(console=console, refresh_per_second=4, transient=True) if live else None
        self._log = StageLog(console) if not live and not quiet and not json_out else None
        self._quiet = quiet or json_out
        self._runs: list[PlayProgress] = []  # every run watched, the current one last
        self._note = ""
        self._printed = ""  # the last line printed above the live view, digits taken out

    def start(self) -> None:
        if self._live:
            self._live.start()

    def stop(self) -> None:
        if self._live:
            self._live.stop()
            if self._runs:
                self._console.print(stage_summary(self._runs))

    def __enter__(self) -> DeployWatch:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def update(self, progress: PlayProgress) -> None:
        """Redraw on every event (rich throttles the terminal writes), or print what finished since the last one."""
        if not self._runs or self._runs[-1] is not progress:
            self._runs.append(progress)
            self._note = ""
            if self._log:
                self._log = StageLog(self._log.console)  # a new run: its stages are all new
        if self._live:
            self._live.update(self._view())
        elif self._log:
            self._log.print_new(progress)

    def line(self, text: str) -> None:
        """A status line: printed (above the live view, once per kind of news: a wait that only counts up is shown
        under the table), and on a terminal kept under the table until the next run or line."""
        if self._quiet:
            return
        kind = _DIGITS.sub("#", text)
        if not self._live or kind != self._printed:
            self._console.print(Text.assemble(("-", "dim"), " ", text))
        self._printed = kind
        if self._live:
            self._note = text
            self._live.update(self._view())

    def _view(self) -> Group:
        """The newest run's table, then the newest status line with a spinner."""
        parts: list = [_Snapshot(self._runs[-1])] if self._runs else []
        if self._note:
            parts.append(Spinner("dots", text=Text(self._note)))
        return Group(*parts)


class StageLog:
    """For logs: a line when a host finishes a stage (done, or failed at a task), and one when a stage ends."""

    def __init__(self, console: Console = err) -> None:
        self.console = console
        self._hosts_printed = 0
        self._stages_printed = 0

    def print_new(self, progress: PlayProgress) -> None:
        """Print the hosts that finished and the stages that ended since the last call."""
        for finished in progress.finished[self._hosts_printed:]:
            self.console.print(host_line(finished))
        self._hosts_printed = len(progress.finished)
        ended = [s for s in progress.stages if s.ended is not None]
        for stage in ended[self._stages_printed:]:
            self.console.print(stage_line(stage))
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


def stage_summary(runs: list[PlayProgress], now: float | None = None) -> Table:
    """Per stage of every run: hosts ok (nothing changed), changed, failed, and the stage's time; with several runs
    (the batches of a rolling deploy) each stage is labelled with the run's hosts."""
    now = time.time() if now is None else now
    table = Table(title="deploy summary", title_justify="left")
    table.add_column("stage", overflow="fold")
    for name in ("ok", "changed", "failed", "time"):
        table.add_column(name, justify="right", no_wrap=True)
    for progress in runs:
        hosts = hostlist.compress(sorted({h for s in progress.stages for h in s.hosts}))
        for stage in progress.stages:
            ok, changed, failed = _host_counts(stage)
            name = f"[{hosts}] {stage.name}" if len(runs) > 1 else stage.name
            table.add_row(name, str(ok), Text(str(changed), style="yellow" if changed else ""),
                          Text(str(failed), style="red" if failed else ""), duration(stage.elapsed(now)))
    return table


def _host_counts(stage: StageProgress) -> tuple[int, int, int]:
    """Hosts of a stage that changed nothing, changed something, failed (or were unreachable)."""
    failed = stage.count(*FAILED_STATES)
    changed = sum(1 for h, state in stage.hosts.items() if state not in FAILED_STATES and stage.changed.get(h))
    return len(stage.hosts) - failed - changed, changed, failed


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
    for block in result.diffs:
        show_diff(block, console)
    if result.cancelled:
        err.print(Text("deploy cancelled (signal); run it again to converge", style="red"))
    if result.check_mode and result.ok:
        changed = result.changed_hosts
        console.print(f"drift on {', '.join(changed)}: a deploy would change what is listed above" if changed
                  else "no changes: every host matches the spec")
    if not result.ok:
        failed = ", ".join(result.failed_hosts) or "the run itself"
        err.print(Text.assemble((f"failed: {failed}", "red"), f"; artifacts: {result.artifacts_dir}"))
    for note in result.notes:
        err.print(Text(f"note: {note}", style="yellow"))


def show_diff(block: DiffBlock, console: Console = out) -> None:
    """One task's file diff: a line naming the hosts that share it and the task, then the unified diff coloured."""
    count = len(block.nodes)
    console.print(Text.assemble(("diff on ", "bold"), (block.hostlist, "bold"),
                                f" ({count} host{'s' * (count > 1)}): ", (block.task, "bold")))
    for line in block.text.splitlines():
        console.print(Text(line, style=_diff_style(line)))


def _diff_style(line: str) -> str:
    """Added lines green, removed red, hunk headers cyan, file headers bold."""
    if line.startswith(("+++", "---")):
        return "bold"
    return {"+": "green", "-": "red", "@": "cyan"}.get(line[:1], "")
