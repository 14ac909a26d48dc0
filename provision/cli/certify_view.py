"""A certification run on the terminal: per-node table, cluster-wide problems, the network matrix, report paths."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from provision.certify.control.run import CertifyRun
from provision.certify.records import ClusterReport
from provision.cli.output import err, out

_COLOURS = {"pass": "green", "warn": "yellow", "fail": "red", "na": "dim"}


def _verdict(verdict: str) -> Text:
    return Text(verdict, style=_COLOURS[verdict])


def render(run: CertifyRun, console: Console = out) -> None:
    """Per node: verdict, counts, the checks that failed or warned; then cluster-wide problems and paths."""
    report = run.report
    scope = f"\n{report.scope.headline()} (not the cluster's verdict)" if report.scope.partial else ""
    table = Table("node", "verdict", "checks", "failed / warned", title=f"certify {report.level}: {report.cluster} "
                                                                         f"({run.seconds:.1f} s){scope}")
    for node in report.nodes:
        notes = "; ".join(f"{c.check}{f' [{c.subject}]' if c.subject else ''}: {c.detail or c.value}"
                          for c in node.checks if c.verdict in ("fail", "warn"))
        passed = sum(c.verdict == "pass" for c in node.checks)
        na = sum(c.verdict == "na" for c in node.checks)
        failed = sum(c.verdict == "fail" for c in node.checks)
        counts = f"{passed} pass" + (f", {failed} fail" if failed else "") + f", {na} n/a"
        table.add_row(Text(node.name), _verdict(node.verdict), counts, Text(notes))
    for check in report.checks:
        if check.verdict in ("fail", "warn"):
            table.add_row("(cluster)", _verdict(check.verdict), Text(check.check),
                          Text(f"{check.subject or ''} {check.detail or check.value}".strip()))
    console.print(table)
    if report.network is not None:
        _matrix(report, console)
    counts = report.counts()
    console.print(f"verdict: {report.verdict}  ({counts['pass']} pass, {counts['warn']} warn, {counts['fail']} fail, "
                  f"{counts['na']} n/a)", markup=False, emoji=False)
    if run.paths is not None:
        console.print(f"reports: {run.paths.json}\n         {run.paths.junit}\n         {run.paths.html}",
                      markup=False, emoji=False)
    for node, reason in run.drained.items():
        console.print(f"drained {node}: {reason}", markup=False, emoji=False)
    for node, why in run.drain_errors.items():
        err.print(Text(f"could not drain {node}: {why}", style="red"))
    show_notes(run)
    if not run.ok:
        err.print(Text(f"certification failed on {', '.join(run.failed_nodes) or 'the cluster'}", style="red"))


def show_notes(run: CertifyRun) -> None:
    """What went wrong beside the verdict (its metrics not written), one yellow line each on stderr."""
    for note in run.notes:
        err.print(Text(f"note: {note}", style="yellow"))


def _matrix(report: ClusterReport, console: Console) -> None:
    """The pairwise bandwidth matrix, source rows, destination columns."""
    net = report.network
    table = Table("from \\ to", *net.nodes, title=f"{net.tool} {net.unit}")
    for name, row in zip(net.nodes, net.values):
        table.add_row(Text(name), *("-" if v is None else f"{v:.3g}" for v in row))
    console.print(table)
