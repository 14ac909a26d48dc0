"""The report as one self-contained HTML page (inline CSS, SVG and a little JS; no network).

Failures and warnings come first, then one line per check id, the inventory, the charts and the nodes. A
cluster of more than charts.LARGE_CLUSTER nodes gets distributions and a bucketed heatmap instead of a mark
per node or pair, and its passing checks are summed up by check id rather than listed (report.json has them).
"""
from __future__ import annotations

from jinja2 import Environment, FileSystemLoader, StrictUndefined

import provision
from provision.certify.records import ClusterReport
from provision.certify.report import charts, distribution, heatmap, inventory, json_report, summary
from provision.resources import templates_dir

TEMPLATE = "report/report.html.j2"
VERDICT_ORDER = {"fail": 0, "warn": 1, "pass": 2, "na": 3}


def environment() -> Environment:
    """Jinja2 with StrictUndefined and autoescaping, loading from the packaged templates/report/ folder."""
    env = Environment(loader=FileSystemLoader(str(templates_dir())), undefined=StrictUndefined, autoescape=True,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.globals["percent"] = summary.percent
    return env


def render(report: ClusterReport) -> str:
    """The page as text."""
    large = len(report.nodes) > charts.LARGE_CLUSTER
    listed, summarised = summary.listed_cluster_checks(report, charts.LARGE_CLUSTER if large else len(report.checks))
    return environment().get_template(TEMPLATE).render(
        report=report,
        verdict=report.verdict,
        counts=report.counts(),
        schema_version=json_report.SCHEMA_VERSION,
        tool_version=provision.__version__,
        wall_s=summary.wall_seconds(report),
        large=large,
        large_at=charts.LARGE_CLUSTER,
        problems=summary.problems(report),
        by_check=sorted(summary.by_check(report), key=lambda s: VERDICT_ORDER[s.verdict]),
        inventory=inventory.inventory(report),
        bar_charts=[] if large else charts.bar_charts(report),
        distributions=distribution.distributions(report) if large else [],
        heatmap=None if large else heatmap.heatmap(report.network),
        buckets=heatmap.bucketed(report.network) if large else None,
        node_lines=summary.node_lines(report),
        nodes=[] if large else report.nodes,
        cluster_checks=listed,
        summarised_ids=summarised,
    )
