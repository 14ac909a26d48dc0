"""The Grafana dashboards the monitoring role provisions: valid JSON, a unique uid and title each, every query on the
provisioned Prometheus data source, naming only the catalogue's series, and valid PromQL (promtool parses them)."""
from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml
from monitoring_files import DASHBOARDS
from promql_names import metric_names

from provision.certify.probe.metrics import catalogue

DATASOURCE_UID = "prometheus"  # the provisioned data source named Prometheus
FILES = sorted(DASHBOARDS.glob("*.json"))
BUILT_IN = re.compile(r"\$__(rate_interval|interval|range|range_s|interval_ms|range_ms)\b")
VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]")


def load(path):
    return json.loads(path.read_text())


def panels(items):
    """Every panel, those inside a row's list included."""
    for panel in items:
        yield panel
        yield from panels(panel.get("panels", []))


def targets(board):
    """(panel title, target) of every query of the dashboard."""
    return [(panel.get("title", ""), target) for panel in panels(board["panels"]) for target in panel.get("targets", [])]


def variable_query(variable) -> str:
    query = variable.get("query", "")
    return query.get("query", "") if isinstance(query, dict) else query


def template_query_names(query: str) -> set[str]:
    """The series a variable's query reads: label_values(selector, label), query_result(expr), or PromQL."""
    found = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", query, re.DOTALL)
    if found:
        return metric_names(found[1])
    if re.fullmatch(r"\s*label_values\(\s*\w+\s*\)\s*", query):
        return set()
    found = re.fullmatch(r"\s*query_result\((.*)\)\s*", query, re.DOTALL)
    return metric_names(found[1] if found else query)


def every_expr():
    """(file name, where, expr) of every PromQL expression of every dashboard, variables' queries included."""
    out = []
    for path in FILES:
        board = load(path)
        out += [(path.name, title, target["expr"]) for title, target in targets(board)]
        out += [(path.name, f"${v['name']}", variable_query(v)) for v in board["templating"]["list"]
                if v.get("type") == "query"]
    return out


def test_the_four_dashboards_are_there():
    assert [p.name for p in FILES] == ["cluster-overview.json", "gpu.json", "node.json", "queue.json"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_dashboard_is_grafana_json(path):
    board = load(path)
    assert board["schemaVersion"] >= 36 and board["panels"]
    assert re.fullmatch(r"[a-z0-9-]{1,40}", board["uid"])  # Grafana takes at most 40 characters
    ids = [panel["id"] for panel in panels(board["panels"])]
    assert len(ids) == len(set(ids))
    for panel in panels(board["panels"]):
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["w"] > 0 and grid["x"] + grid["w"] <= 24, panel["title"]


def test_uids_and_titles_are_unique():
    boards = [load(p) for p in FILES]
    assert len({b["uid"] for b in boards}) == len(boards)
    assert len({b["title"] for b in boards}) == len(boards)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_query_uses_the_provisioned_prometheus(path):
    board = load(path)
    for title, target in targets(board):
        assert target["datasource"]["uid"] == DATASOURCE_UID, title
        assert target["expr"].strip() and target["refId"], title
    for variable in board["templating"]["list"]:
        assert variable["datasource"]["uid"] == DATASOURCE_UID, variable["name"]


@pytest.mark.parametrize(("name", "where", "expr"), every_expr(), ids=[f"{n}:{w}" for n, w, _ in every_expr()])
def test_every_series_name_is_in_the_catalogue(name, where, expr):
    found = template_query_names(expr) if where.startswith("$") else metric_names(expr)
    assert found, f"{name}: {where}: names no series: {expr}"
    assert sorted(n for n in found if not catalogue.known(n)) == [], f"{name}: {where}: {expr}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_variable_a_query_uses_is_defined(path):
    board = load(path)
    defined = {v["name"] for v in board["templating"]["list"]}
    used = {next(g for g in m.groups() if g) for _, t in targets(board)
            for m in VARIABLE.finditer(BUILT_IN.sub("", t["expr"]))}
    assert used <= defined


def test_the_node_dashboard_is_templated_on_node():
    board = load(DASHBOARDS / "node.json")
    assert [v["name"] for v in board["templating"]["list"]] == ["node"]
    assert all('node="$node"' in t["expr"] for _, t in targets(board))


def as_promql(expr: str) -> str:
    """The expression with Grafana's variables replaced by what Prometheus would get."""
    expr = BUILT_IN.sub("5m", expr)
    return VARIABLE.sub("compute01", expr)


def test_promtool_parses_every_query(promtool, tmp_path):
    """Each query, as a recording rule, through `promtool check rules` (a PromQL syntax error fails it)."""
    exprs = [e for _, w, e in every_expr() if not w.startswith("$")]
    rules = [{"record": f"dashboard:query_{i}", "expr": as_promql(e)} for i, e in enumerate(exprs)]
    path = tmp_path / "dashboards.rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    done = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
