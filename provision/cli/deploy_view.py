"""Rich rendering of a deploy: live play/task/host view, and the final recap table."""
from __future__ import annotations

from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from provision.cli.output import err, escape, out
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


class LiveDeployView:
    """A context manager whose update() is the engine's on_update callback."""

    def __init__(self, enabled: bool) -> None:
        self._live = Live(console=err, refresh_per_second=4, transient=True) if enabled else None
        self._last_task = ""

    def __enter__(self) -> "LiveDeployView":
        if self._live:
            self._live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._live:
            self._live.__exit__(*exc)

    def update(self, progress: PlayProgress) -> None:
        """Redraw on every event (rich throttles the terminal writes)."""
        if self._live:
            self._live.update(_live_renderable(progress))


def quiet_lines(progress: PlayProgress, seen: set[str]) -> None:
    """For CI logs: one line per new task, no live redraw."""
    key = f"{progress.play}/{progress.task}"
    if progress.task and key not in seen:
        seen.add(key)
        err.print(f"[dim]task[/dim] {escape(progress.task)}", markup=True, highlight=False)


def recap(result: DeployResult) -> None:
    """The final table: per host counts, status, and the failing task with its message."""
    title = "plan (check mode): what would change" if result.check_mode else "deploy recap"
    table = Table("host", "ok", "changed", "failed", "unreachable", "status", "failed task / message", title=title)
    for host in result.hosts:
        colour = _COLOURS.get(host.status, "")
        detail = f"{host.failed_task}: {host.message}" if host.failed_task else ""
        if result.check_mode and host.changed_tasks:
            detail = "would change: " + "; ".join(dict.fromkeys(host.changed_tasks))
        table.add_row(host.host, str(host.ok), str(host.changed), str(host.failed), str(host.unreachable),
                      Text(host.status, style=colour), detail)
    out.print(table)
    if result.cancelled:
        err.print("[red]deploy cancelled (signal); run it again to converge[/red]", markup=True)
    if result.check_mode and result.ok:
        changed = result.changed_hosts
        out.print(f"drift on {', '.join(changed)}: a deploy would change what is listed above" if changed
                  else "no changes: every host matches the spec")
    if not result.ok:
        failed = ", ".join(result.failed_hosts) or "the run itself"
        err.print(f"[red]failed: {escape(failed)}[/red]; artifacts: {escape(str(result.artifacts_dir))}", markup=True,
                  highlight=False)
