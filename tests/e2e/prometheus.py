"""Prometheus's HTTP API of a sandbox cluster, queried from this machine (the bridge's own addresses only)."""
from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from provision.monitoring import monitoring_node
from provision.records import ClusterInfo


def base_url(info: ClusterInfo, port: int = 9090) -> str:
    """Prometheus on the cluster's monitoring node."""
    return f"http://{monitoring_node(info).address}:{port}"


def api(info: ClusterInfo, path: str, **params: str) -> Any:
    """GET /api/v1/<path>; the `data` of a successful answer."""
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    with urllib.request.urlopen(f"{base_url(info)}/api/v1/{path}{query}", timeout=10) as answer:  # noqa: S310
        body = json.load(answer)
    assert body["status"] == "success", body
    return body["data"]


def query(info: ClusterInfo, expr: str) -> list[dict]:
    """An instant query's vector: [{"metric": {...}, "value": [t, "v"]}]."""
    return api(info, "query", query=expr)["result"]


def alerts(info: ClusterInfo) -> list[dict]:
    """The alerts Prometheus holds now (pending and firing)."""
    return api(info, "alerts")["alerts"]


def wait_for(what: str, probe: Callable[[], Any], timeout: float, every: float = 5) -> Any:
    """Poll until probe() returns something true; fail naming `what` and the last answer."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except OSError as exc:  # Prometheus restarting
            last = exc
        else:
            if last:
                return last
        time.sleep(every)
    raise AssertionError(f"{what}: not within {timeout:.0f} s; last: {last!r}")
