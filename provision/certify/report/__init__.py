"""Write a ClusterReport as JSON (versioned schema), JUnit XML and a self-contained HTML page."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from provision.certify.records import ClusterReport
from provision.certify.report import active, html, index, json_report, junit
from provision.state import ClusterState, write_private


@dataclass(frozen=True)
class ReportPaths:
    """Where the three renderings of one report were written."""

    directory: Path
    json: Path
    junit: Path
    html: Path


def write_reports(report: ClusterReport, directory: Path) -> ReportPaths:
    """Write report.json, report.xml and report.html into a directory (created 0700, files 0600)."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    paths = ReportPaths(directory, directory / "report.json", directory / "report.xml", directory / "report.html")
    write_private(paths.json, json_report.render(report))
    write_private(paths.junit, junit.render(report))
    write_private(paths.html, html.render(report))
    return paths


def write_to_state(report: ClusterReport, state: ClusterState, *, stamp: str | None = None) -> ReportPaths:
    """Write under the cluster's reports directory, one folder per run named by UTC time and level, and rebuild
    the index of every run there (reports/index.html)."""
    stamp = stamp or datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    state.ensure("reports")
    paths = write_reports(report, state.reports_dir / f"{stamp}-{report.level}")
    index.write(state.reports_dir)
    return paths


def record_active(passes: list[dict], state: ClusterState) -> Path:
    """Merge the active checks' passes that `provision health --active` read (NodeHealth.to_dict() of each node)
    into the reports folder's log and rebuild the index, which shows them beside the certify runs; the index."""
    state.ensure("reports")
    active.record(state.reports_dir, passes)
    return index.write(state.reports_dir)
