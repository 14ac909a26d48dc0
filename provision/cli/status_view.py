"""`provision status` on the terminal, readable at 80 columns: nothing a user needs is cut.

A table of one row per node (provider state, address, Slurm state, health verdict, certify verdict; long values fold
onto more lines), a summary line of the Slurm states, then the details a column cannot hold: each drain or down reason
with who set it and when, held nodes, failed health checks and certify checks, unreachable nodes, and what the nodes
run. Rows of nodes that differ only in name and address fold into one hostlist row when the cluster is large, and the
same detail on several nodes is one line with their hostlist. Last, the alerts Prometheus has active (where monitoring
is on), every value of theirs shown as plain text. `--json` has every node and field (ClusterStatus).
"""
from __future__ import annotations

from collections.abc import Iterable

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from provision import hostlist
from provision.cli.output import out
from provision.cli.plan_view import fold
from provision.slurm.admin import HOLD_RESERVATION
from provision.status.records import AlertsView, ClusterStatus, NodeStatus

FOLD_ABOVE = 24  # rows fold into hostlists when the cluster has more nodes than this
NAME_WIDTH = 24  # node names (or hostlists) up to this long stay on one line,
ADDRESS_WIDTH = 21  # and so do IPv4 addresses and their ranges (10.0.0.[100-254]); longer ones fold
_FLAG_WORDS = {"maintenance": "maint", "not_responding": "not responding"}
_COLOURS = {"idle": "green", "alloc": "cyan", "drain": "yellow", "down": "red", "other": "magenta"}
_SEVERITY = {"critical": "red", "warning": "yellow"}


def print_status(status: ClusterStatus) -> None:
    """The status on stdout."""
    out.print(render(status))


def render(status: ClusterStatus, fold_above: int = FOLD_ABOVE) -> RenderableType:
    """The table, the summary line and the details, as one renderable."""
    parts: list[RenderableType] = [table(status, fold_above), Text(summary(status))]
    if not status.slurm.answered:
        parts.append(Text(f"Slurm: {status.slurm.error}; provider states are shown", style="red"))
    found = details(status.nodes)
    if found:
        parts += [Text("details", style="bold"), _grid(found)]
    software = software_lines(status.nodes)
    if software:
        parts += [Text("software", style="bold"), _grid(software)]
    if status.alerts is not None:
        parts.append(alerts_part(status.alerts))
    return Group(*parts)


def alerts_part(view: AlertsView) -> RenderableType:
    """The alerts Prometheus has active, firing first (every value plain text, shown as Prometheus gave it), "none"
    when there is none, or why Prometheus did not answer."""
    if view.error:
        return Text(f"Prometheus did not answer: {plain(view.error)}", style="red")
    if not view.alerts:
        return Text("Alerts firing: none")
    grid = Table(title="Alerts firing", box=None, pad_edge=False, title_justify="left", header_style="bold underline")
    for column in ("alert", "severity", "node", "state", "since", "summary"):
        grid.add_column(column, overflow="fold")
    for alert in view.alerts:
        grid.add_row(Text(plain(alert.name)), Text(plain(alert.severity), style=_SEVERITY.get(alert.severity, "")),
                     Text(plain(alert.node)), Text(plain(alert.state), style="" if alert.firing else "dim"),
                     Text(_when(plain(alert.active_at))), Text(plain(alert.summary)))
    return grid


def plain(text: str) -> str:
    """A value from outside as one line of visible characters: a line feed, an escape or another control character
    is shown as its escape (\\n, \\x1b), never acted on."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def table(status: ClusterStatus, fold_above: int = FOLD_ABOVE) -> Table:
    """One row per node, or per run of nodes alike when there are more than `fold_above`."""
    grid = Table(title=f"{status.name} ({status.provider}): {len(status.nodes)} nodes", box=None, pad_edge=False,
                 title_justify="left", header_style="bold underline")
    rows = [(n, n.name, n.node.address or "-") for n in status.nodes]
    if len(status.nodes) > fold_above:
        rows = [(r.first, r.name, r.detail) for r in
                fold(status.nodes, lambda n: n.name, lambda n: n.node.address or "-",
                     lambda n: tuple(str(cell) for cell in _cells(n, status)))]
    _whole_column(grid, "node", [name for _, name, _ in rows], NAME_WIDTH)
    _whole_column(grid, "address", [address for _, _, address in rows], ADDRESS_WIDTH)
    for column in ("provider", "slurm", "health", "certify"):
        grid.add_column(column, overflow="fold")
    for node, name, address in rows:
        provider, slurm_cell, health_cell, certify_cell = _cells(node, status)
        grid.add_row(Text(name), Text(address), Text(provider), slurm_cell, Text(health_cell), Text(certify_cell))
    return grid


def _whole_column(grid: Table, header: str, values: list[str], widest: int) -> None:
    """A column as wide as its longest value when that is at most `widest` (never folded: the other columns give
    way), else one that folds its values onto more lines."""
    longest = max([len(header), *(len(v) for v in values)])
    if longest <= widest:
        grid.add_column(header, width=longest, no_wrap=True)
    else:
        grid.add_column(header, overflow="fold")


def _cells(node: NodeStatus, status: ClusterStatus) -> tuple[str, Text, str, str]:
    """provider, slurm, health and certify cells of a node (rows fold where these are equal)."""
    return node.node.state, slurm_cell(node, status), health_cell(node, status), certify_cell(node)


def slurm_cell(node: NodeStatus, status: ClusterStatus) -> Text:
    """Slurm's state and flags ("idle, drain"), "held" for the hold reservation; for the controller whether
    slurmctld answered; "?" when it did not."""
    if node.slurm is None:
        if not node.up:
            return Text("-")
        if node.node.has_role("controller"):
            return Text("slurmctld" if status.slurm.answered else "no answer",
                        style="" if status.slurm.answered else "red")
        return Text("?" if not status.slurm.answered else "-")
    words = [node.slurm.state, *(_FLAG_WORDS.get(f, f) for f in node.slurm.flags)]
    text = ", ".join(words + (["held"] if node.slurm.held else []))  # wraps between words in a narrow column
    return Text(text, style=_COLOURS.get(node.slurm.category, ""))


def health_cell(node: NodeStatus, status: ClusterStatus) -> str:
    """healthy / failed / no record of its last pass; "off" where the spec switched the program off."""
    if not node.node.has_role("compute"):
        return "-"
    if not status.health_enabled:
        return "off"
    if node.health is None:
        return "?" if node.up else "-"
    return "no record" if node.health.ok is None else ("healthy" if node.health.ok else "failed")


def certify_cell(node: NodeStatus) -> str:
    """The last certify verdict that named the node, with its level."""
    return f"{node.certify.verdict} ({node.certify.level})" if node.certify else "never"


def summary(status: ClusterStatus) -> str:
    """"4 nodes, 3 in Slurm: 1 idle, 1 alloc, 1 drain, 0 down; 1 held, 1 not responding"."""
    counts = status.counts()
    if not status.slurm.answered:
        return f"{len(status.nodes)} nodes; their Slurm states are unknown (slurmctld was not asked or did not answer)"
    line = f"{len(status.nodes)} nodes, {counts['in_slurm']} in Slurm: " + ", ".join(
        f"{counts[kind]} {kind}" for kind in ("idle", "alloc", "drain", "down"))
    extra = [f"{counts[key]} {word}" for key, word in (("other", "other"), ("held", "held"),
                                                       ("not_responding", "not responding")) if counts[key]]
    return line + ("; " + ", ".join(extra) if extra else "")


def details(nodes: Iterable[NodeStatus]) -> list[tuple[str, str]]:
    """(hostlist, detail) for everything a row cannot hold, each distinct detail once with the nodes that have it."""
    by_text: dict[str, list[str]] = {}
    for node in nodes:
        for text in node_details(node):
            by_text.setdefault(text, []).append(node.name)
    return [(hostlist.compress(names), text) for text, names in by_text.items()]


def node_details(node: NodeStatus) -> list[str]:
    """What one node's row cannot say: Slurm's reason (who set it, when), the hold, failed checks, why unreachable."""
    found = []
    slurm = node.slurm
    if slurm and slurm.reason:
        what = "down" if slurm.category == "down" else ("drained" if slurm.drained else "reason")
        who = " ".join(p for p in (f"by {slurm.reason_user}" if slurm.reason_user else "",
                                   f"at {_when(slurm.reason_time)}" if slurm.reason_time else "") if p)
        found.append(f"{what}{' ' + who if who else ''}: {slurm.reason}")
    elif slurm and slurm.not_responding:
        found.append("not responding to slurmctld")
    if slurm and slurm.held:
        found.append(f"held in {HOLD_RESERVATION} until certify passes (`provision certify SPEC --release`)")
    health = node.health
    if health and health.ok is False:
        found.append(f"health failed {', '.join(health.failed)} at {_when(health.started)} (told Slurm: "
                     f"{health.action})")
    elif health and health.ok is None and health.error:
        found.append(f"health: {health.error}")
    if node.certify and node.certify.verdict == "fail":
        found.append(f"certify failed {', '.join(node.certify.failed) or '(cluster-wide checks)'} "
                     f"({node.certify.level}, {_when(node.certify.at)})")
    if node.software and node.software.error:
        found.append(f"unreachable: {node.software.error}")
    return found


def software_lines(nodes: Iterable[NodeStatus]) -> list[tuple[str, str]]:
    """(hostlist, "Debian 13, Slurm 24.11.5") for each distinct OS and Slurm version the nodes run."""
    by_text: dict[str, list[str]] = {}
    for node in nodes:
        if node.software and not node.software.error:
            text = ", ".join(p for p in (node.software.os, node.software.slurm and f"Slurm {node.software.slurm}")
                             if p) or "unknown"
            by_text.setdefault(text, []).append(node.name)
    return [(hostlist.compress(names), text) for text, names in by_text.items()]


def _grid(rows: list[tuple[str, str]]) -> Table:
    """Two columns, both folding: nodes and what is said of them."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(overflow="fold")
    grid.add_column(overflow="fold")
    for names, text in rows:
        grid.add_row(Text(names), Text(text))
    return grid


def _when(text: str) -> str:
    """An ISO time as people read it: 2026-11-27 15:56:18 (seconds, no zone offset)."""
    return text[:19].replace("T", " ") if text else "?"
