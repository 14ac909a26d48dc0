"""The last certify verdict of each node: from the newest report under the cluster's reports folder that names it
(a run that certified some nodes only, such as a grow, is the last word on those nodes, not on the others)."""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from provision.status.records import CertifyVerdict

REPORT = "report.json"
MAX_REPORTS = 50  # newest first: enough for any node certified in the last 50 runs, bounded for a large cluster


def last_verdicts(reports_dir: Path, names: Iterable[str]) -> dict[str, CertifyVerdict]:
    """node -> its verdict in the newest report that names it (nodes that no report names are left out)."""
    wanted, found = set(names), {}
    for folder in _newest_first(reports_dir)[:MAX_REPORTS]:
        report = _read(folder / REPORT)
        for node in report.get("nodes", []) if report else []:
            name = node.get("name") if isinstance(node, dict) else None
            if name in wanted and name not in found:
                found[name] = _verdict(folder.name, report, node)
        if len(found) == len(wanted):
            break
    return found


def _newest_first(reports_dir: Path) -> list[Path]:
    """Run folders, newest first (their names start with the run's UTC time: 20261127T150849Z-quick)."""
    if not reports_dir.is_dir():
        return []
    return sorted((p for p in reports_dir.iterdir() if (p / REPORT).is_file()), key=lambda p: p.name, reverse=True)


def _verdict(folder: str, report: dict[str, Any], node: dict[str, Any]) -> CertifyVerdict:
    """One node's entry of a report."""
    failed = tuple(dict.fromkeys(str(c.get("check")) for c in node.get("checks", [])
                                 if isinstance(c, dict) and c.get("verdict") == "fail"))
    return CertifyVerdict(verdict=str(node.get("verdict", "?")), level=str(report.get("level", "?")),
                          at=str(report.get("finished_at") or report.get("started_at") or ""), report=folder,
                          failed=failed)


def _read(path: Path) -> dict[str, Any] | None:
    """A report, or None when it cannot be read (a run that was interrupted, an older schema)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
