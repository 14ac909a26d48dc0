"""The report as one self-contained HTML page (inline CSS, SVG and a little JS; no network)."""
from __future__ import annotations

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from provision.certify.records import ClusterReport
from provision.certify.report import charts, json_report
from provision.resources import templates_dir

TEMPLATE = "report/report.html.j2"


def environment() -> Environment:
    """Jinja2 with StrictUndefined and autoescaping, loading from the packaged templates/ folder."""
    return Environment(loader=FileSystemLoader(str(templates_dir())), undefined=StrictUndefined, autoescape=True,
                       trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def render(report: ClusterReport) -> str:
    """The page as text."""
    return environment().get_template(TEMPLATE).render(
        report=report,
        verdict=report.verdict,
        counts=report.counts(),
        schema_version=json_report.SCHEMA_VERSION,
        bar_charts=charts.bar_charts(report),
        heatmap=charts.heatmap(report.network),
        nodes=report.nodes,
        cluster_checks=report.checks,
    )
