"""The alerts Prometheus has active now, for `provision status`: asked on the monitoring node, never from here.

This machine may not reach the cluster's network (AWS private addresses behind a jump host), so one SSH command to
the monitoring node runs a short python3 (on every node) that GETs Prometheus's /api/v1/alerts there, bounded by a
timeout, without a proxy, and prints the answer; the JSON is read here into Alert records. What Prometheus answers
is data: the records hold its strings as they are, and the view shows them as plain text.
"""
from __future__ import annotations

import json
import shlex
from typing import Any

from provision.errors import ProvisionError
from provision.monitoring import monitoring_node
from provision.records import ClusterInfo, NodeInfo
from provision.remote.commands import CommandResult, Runner, run_on
from provision.status.records import UP, Alert, AlertsView

PATH = "/api/v1/alerts"
HTTP_TIMEOUT_S = 5
QUERY_TIMEOUT_S = 20.0
MAX_ANSWER_BYTES = 4 * 1024 * 1024
_GET = ("import sys, urllib.request\n"
        "opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))\n"
        "try:\n"
        f"    with opener.open(sys.argv[1], timeout={HTTP_TIMEOUT_S}) as answer:\n"
        f"        sys.stdout.write(answer.read({MAX_ANSWER_BYTES}).decode('utf-8', 'replace'))\n"
        "except Exception as exc:\n"
        "    sys.exit(f'{exc.__class__.__name__}: {exc}')\n")
_SEVERITY = {"critical": 0, "warning": 1, "info": 2}


def command(url: str) -> str:
    """The shell line run on the monitoring node: python3 GETs Prometheus's alerts (the URL one quoted argument)."""
    return f"python3 -c {shlex.quote(_GET)} {shlex.quote(url.rstrip('/') + PATH)}"


def read(cluster: ClusterInfo, url: str, run: Runner | None = None) -> AlertsView:
    """Ask Prometheus through the monitoring node; a view with `error` when it cannot answer (never raises)."""
    node = monitoring_node(cluster)
    if not node.address or node.state not in UP:
        return AlertsView(error=f"the monitoring node {node.name} is {node.state}: Prometheus was not asked",
                          asked=node.name)
    try:
        result = (run or _bounded)(cluster, node, command(url))
    except ProvisionError as exc:
        return AlertsView(error=f"cannot reach the monitoring node: {exc}", asked=node.name)
    if result.rc != 0:
        why = (result.stderr.strip().splitlines() or [f"exit {result.rc}"])[-1]
        return AlertsView(error=f"{url}{PATH} on {node.name}: {why}", asked=node.name)
    return parse(result.stdout, node.name)


def _bounded(cluster: ClusterInfo, node: NodeInfo, command_line: str) -> CommandResult:
    return run_on(cluster, node, command_line, timeout=QUERY_TIMEOUT_S)


def parse(text: str, asked: str = "") -> AlertsView:
    """The view from Prometheus's answer: its active alerts, firing first, then by severity, name and node."""
    try:
        document = json.loads(text)
    except ValueError:
        return AlertsView(error=f"the answer is not JSON: {text.strip()[:80]!r}", asked=asked)
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, dict) or document.get("status") != "success" or not isinstance(data.get("alerts"), list):
        why = document.get("error") if isinstance(document, dict) else None
        return AlertsView(error=f"Prometheus answered no alerts list: {str(why or text.strip())[:200]}", asked=asked)
    alerts = [alert(item) for item in data["alerts"] if isinstance(item, dict)]
    return AlertsView(alerts=tuple(sorted(alerts, key=_order)), asked=asked)


def alert(item: dict[str, Any]) -> Alert:
    """One entry of data.alerts: labels, annotations, state, activeAt (every value kept as a string)."""
    labels = _strings(item.get("labels"))
    notes = _strings(item.get("annotations"))
    return Alert(name=labels.get("alertname", ""), state=str(item.get("state", "")),
                 severity=labels.get("severity", ""), node=labels.get("node") or labels.get("instance", ""),
                 summary=notes.get("summary") or notes.get("description", ""),
                 active_at=str(item.get("activeAt") or ""), labels=tuple(sorted(labels.items())))


def _strings(mapping: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in mapping.items()} if isinstance(mapping, dict) else {}


def _order(found: Alert) -> tuple:
    return (not found.firing, _SEVERITY.get(found.severity, len(_SEVERITY)), found.name, found.node)
