"""Rich rendering of a deploy: live play/task/host view, and the final recap table."""
from __future__ import annotations

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from provision.cli.output import err, out
from provision.deploy.events import PlayProgress
from provision.deploy.records import DeployResult

_COLOURS = {"ok": "green", "changed": "yellow", "failed": "red", "unreachable": "magenta"}


def _live_renderable(progress: PlayProgress) -> Group:
    """The current play and task, then one compact line of host states."""
    header = Text.assemble(("play ", "dim"), progress.play, ("  task ", "dim"), progress.task)
    hosts = Text()
    for host in sorted(progress.host_state):
        state = progress.host_state[host]
        hosts.append(f"{host}:{state} ", style=_COLOURS.get(state, ""))
    return Group(header, hosts)


class DeployWatch:
    """The engine's on_update callback as the terminal shows it: a live view on a terminal, one line per new task
    otherwise (CI logs), nothing for --json. start() and stop() bracket the run (or use it as a context manager)."""

    def __init__(self, quiet: bool, json_out: bool) -> None:
        live = not quiet and not json_out and err.is_terminal
        self._live = Live(console=err, refresh_per_second=4, transient=True) if live else None
        self._lines = not live and not json_out
        self._seen: set[str] = set()

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
        """Redraw on every event (rich throttles the terminal writes), or print a task's first line."""
        if self._live:
            self._live.update(_live_renderable(progress))
        elif self._lines:
            quiet_lines(progress, self._seen)


def quiet_lines(progress: PlayProgress, seen: set[str]) -> None:
    """For CI logs: one line per new task, no live redraw."""
    key = f"{progress.play}/{progress.task}"
    if progress.task and key not in seen:
        seen.add(key)
        err.print(Text.assemble(("task", "dim"), " ", progress.task))


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
