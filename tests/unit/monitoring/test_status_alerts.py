"""`provision status` shows the alerts Prometheus has active: asked on the monitoring node (one command, python3
GETting /api/v1/alerts there, run here against a local HTTP server), read from Prometheus's JSON (the shape of its
HTTP API, tests/fixtures/prometheus/alerts.json) into records, shown firing first as plain text (rich markup, line
feeds and escapes in a label are shown, never acted on), in --json whole; when Prometheus does not answer, status
says so and shows the rest."""
from __future__ import annotations

import http.server
import json
import shlex
import subprocess
import threading
from pathlib import Path

import pytest
from rich.console import Console

from provision.cli import status_view
from provision.errors import ConnectionFailure
from provision.records import ClusterInfo, NodeInfo
from provision.remote.commands import CommandResult
from provision.status import alerts, gather as gather_module, slurm
from provision.status.records import AlertsView, ClusterStatus, NodeStatus

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "prometheus" / "alerts.json"
URL = "http://10.87.0.11:9090"


def _cluster(monitoring_state: str = "running") -> ClusterInfo:
    return ClusterInfo(name="mon", provider="sandbox", nodes=(
        NodeInfo(name="ctl01", group="ctl", roles=("controller",), address="10.87.0.10", state="running"),
        NodeInfo(name="mon01", group="mon", roles=("monitoring",), address="10.87.0.11", state=monitoring_state)))


def _answer(stdout: str = "", rc: int = 0, stderr: str = ""):
    asked = []

    def run(cluster, node, command):
        asked.append((node.name, command))
        return CommandResult(node.name, rc, stdout, stderr)
    return run, asked


def _shown(view: AlertsView, width: int = 200) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(status_view.alerts_part(view))
    return console.export_text()


def test_prometheus_answer_becomes_records_firing_first_by_severity():
    run, asked = _answer(FIXTURE.read_text())
    view = alerts.read(_cluster(), URL, run)
    assert [(a.name, a.state, a.severity, a.node) for a in view.alerts] == [
        ("NodeDown", "firing", "critical", "compute03"), ("SlurmNodeDrained", "firing", "warning", "compute01"),
        ("GpuProvisionHealthCheckFailed", "pending", "warning", "compute02")]
    assert [a.name for a in view.firing] == ["NodeDown", "SlurmNodeDrained"]
    first = view.alerts[0]
    assert first.summary == "compute03 has not answered a scrape for 2 minutes"
    assert first.active_at == "2026-11-29T02:30:52.514927645Z" and dict(first.labels)["job"] == "node"
    assert [name for name, _ in asked] == ["mon01"] and view.asked == "mon01"


def test_without_a_node_label_the_instance_names_where_and_the_description_stands_for_a_summary():
    found = alerts.alert({"labels": {"alertname": "TargetDown", "instance": "10.87.0.12:9100"},
                          "annotations": {"description": "down"}, "state": "firing", "activeAt": "x"})
    assert (found.node, found.summary, found.severity) == ("10.87.0.12:9100", "down", "")


def test_the_query_is_one_python3_command_with_the_url_one_quoted_argument():
    command = alerts.command(URL + "/")
    words = shlex.split(command)
    assert words[:2] == ["python3", "-c"] and words[3:] == [URL + "/api/v1/alerts"]
    assert "timeout=5" in words[2] and "ProxyHandler({})" in words[2]


class _Prometheus(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = FIXTURE.read_bytes() if self.path == "/api/v1/alerts" else b"no"
        self.send_response(200 if self.path == "/api/v1/alerts" else 404)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def prometheus():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Prometheus)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_the_command_as_the_node_runs_it_prints_prometheus_answer(prometheus):
    done = subprocess.run(["sh", "-c", alerts.command(prometheus)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and alerts.parse(done.stdout).alerts[0].name == "NodeDown"


def test_the_command_fails_with_one_line_when_nothing_listens(prometheus):
    closed = prometheus.rsplit(":", 1)[0] + ":1"
    done = subprocess.run(["sh", "-c", alerts.command(closed)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and done.stderr.strip().startswith("URLError:")


@pytest.mark.parametrize("run, why", [
    (_answer(rc=1, stderr="URLError: <urlopen error [Errno 111] Connection refused>\n")[0],
     "http://10.87.0.11:9090/api/v1/alerts on mon01: URLError: <urlopen error [Errno 111] Connection refused>"),
    (_answer("<html>proxy error</html>")[0], "the answer is not JSON: '<html>proxy error</html>'"),
    (_answer('{"status":"error","errorType":"server_error","error":"rule manager not ready"}')[0],
     "Prometheus answered no alerts list: rule manager not ready"),
])
def test_a_failed_query_is_said_never_raised(run, why):
    view = alerts.read(_cluster(), URL, run)
    assert view.error == why and view.alerts == ()
    assert _shown(view).strip() == f"Prometheus did not answer: {why}"


def test_an_unreachable_or_stopped_monitoring_node_is_said():
    def refused(cluster, node, command):
        raise ConnectionFailure("mon01: 10.87.0.11:22: connection refused", hint="h")
    assert alerts.read(_cluster(), URL, refused).error.startswith("cannot reach the monitoring node: mon01: "
                                                                  "10.87.0.11:22: connection refused")
    stopped = alerts.read(_cluster("stopped"), URL, refused)
    assert stopped.error == "the monitoring node mon01 is stopped: Prometheus was not asked"


def test_hostile_label_values_are_shown_literally_never_as_markup_or_control_characters():
    hostile = {"status": "success", "data": {"alerts": [{
        "labels": {"alertname": "[red]x[/red]", "node": "n1\n[bold]n2", "severity": "critical\x1b[2J"},
        "annotations": {"summary": "[link=http://evil]click[/link] :skull: \r done"},
        "state": "firing", "activeAt": "2026-11-29T02:30:52Z", "value": "1e+00"}]}}
    view = alerts.parse(json.dumps(hostile))
    text = _shown(view)
    assert "[red]x[/red]" in text and "n1\\n[bold]n2" in text and "critical\\x1b[2J" in text
    assert "[link=http://evil]click[/link] :skull: \\r done" in text and "\x1b" not in text
    assert view.alerts[0].name == "[red]x[/red]"  # the record keeps Prometheus's value; only the view escapes


def test_the_table_at_80_columns_keeps_every_alert_whole():
    text = _shown(alerts.parse(FIXTURE.read_text()), width=80)
    lines = text.splitlines()
    assert lines[0].strip() == "Alerts firing" and "…" not in text and max(len(line.rstrip()) for line in lines) <= 80
    words = text.split()
    for word in ("NodeDown", "compute03", "critical", "SlurmNodeDrained", "pending", "02:30:52", "02:41:07",
                 "GpuProvisionHeal", "thCheckFailed", "certify:slurm.s", "lurmd"):  # long values fold, whole
        assert word in words


def test_no_alert_is_said_and_monitoring_off_shows_nothing():
    assert _shown(AlertsView(asked="mon01")).strip() == "Alerts firing: none"
    status = ClusterStatus(cluster=_cluster(), nodes=tuple(NodeStatus(node=n) for n in _cluster().nodes))
    console = Console(width=120, record=True, color_system=None)
    console.print(status_view.render(status))
    assert "Alerts" not in console.export_text() and "Prometheus" not in console.export_text()
    assert status.to_dict()["alerts"] is None


def test_gather_asks_prometheus_beside_the_nodes_and_json_has_the_alerts(monkeypatch, tmp_path):
    asked = []

    def run_on(cluster, node, command, timeout):
        asked.append((node.name, command.split()[0]))
        if command.startswith("python3 -c"):
            return CommandResult(node.name, 0, FIXTURE.read_text(), "")
        return CommandResult(node.name, 1, "", "not recorded")
    for module in (gather_module, slurm, alerts):
        monkeypatch.setattr(module, "run_on", run_on)
    found = gather_module.gather(_cluster(), tmp_path, health_enabled=False, prometheus=URL)
    assert [name for name, word in asked if word == "python3"] == ["mon01"]
    data = json.loads(json.dumps(found.to_dict()))
    assert data["alerts"]["answered"] and [a["name"] for a in data["alerts"]["alerts"]][:1] == ["NodeDown"]
    assert data["alerts"]["alerts"][0]["labels"]["instance"] == "10.87.0.13:9100"
    assert gather_module.gather(_cluster(), tmp_path, health_enabled=False).alerts is None
