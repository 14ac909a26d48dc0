"""The index page of a cluster's certify runs: `<state>/reports/index.html`, rebuilt from the report.json files.

Every run folder, newest first (time, level, verdict, counts, wall time, a link to its report.html), an
inline SVG trend per headline figure (runs.HEADLINES), and the active checks as `provision health --active` last read
them (active.py: each node's latest pass and the passes that failed or drained). No script, no external asset; every
text escaped by Jinja2's autoescape.
"""
from __future__ import annotations

from pathlib import Path

import provision
from provision.certify.report import active, html, runs, trend
from provision.state import write_private

TEMPLATE = "report/index.html.j2"
INDEX_FILE = "index.html"


def render(reports_dir: Path) -> str:
    """The page for every run found under the reports folder."""
    found = runs.read_runs(reports_dir)
    headlines = runs.headlines()
    cluster = found.runs[0].cluster if found.runs else reports_dir.parent.name
    checks = active.read(reports_dir)
    notes = found.notes + ((checks.note,) if checks.note else ())
    return html.environment().get_template(TEMPLATE).render(
        cluster=cluster, runs=found.runs, notes=notes, headlines=headlines, active=checks,
        active_verdict=active.verdict,
        trends=trend.trends(found.runs, headlines), width=trend.WIDTH, height=trend.HEIGHT,
        tool_version=provision.__version__)


def write(reports_dir: Path) -> Path:
    """Write (or rewrite) index.html in the reports folder (0600)."""
    return write_private(reports_dir / INDEX_FILE, render(reports_dir))
