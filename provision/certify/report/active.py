"""The active checks in the report index: what `provision health --active` read from the nodes, kept in
`<state>/reports/active.json` (0600) and shown by index.html beside the certify runs.

The nodes keep only their last active pass (active.json on each node). Each read merges what it found into the
log: every node's latest pass, and the history of passes that failed or changed a node's state (drained, returned),
newest first, at most HISTORY of them, so a drain that was undone before anyone looked is still on the page once it
was read. A pass already in the log (same node, same start) is not added twice. A log that cannot be read becomes a
note on the page and is started again, never an error.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from provision.state import write_private

ACTIVE_FILE = "active.json"
HISTORY = 200  # passes kept in the history
SCHEMA = 1


@dataclass(frozen=True)
class ActiveLog:
    """Every node's latest active pass and the passes worth keeping, newest first; `note` says why an earlier log
    was dropped."""

    latest: dict[str, dict[str, Any]]
    history: tuple[dict[str, Any], ...]
    note: str = ""

    @property
    def empty(self) -> bool:
        return not self.latest and not self.history

    @property
    def by_node(self) -> list[dict[str, Any]]:
        """Each node's latest pass, in node-name order."""
        return [self.latest[n] for n in sorted(self.latest)]


def read(reports_dir: Path) -> ActiveLog:
    """The log in the reports folder; an empty one when there is none, with a note when it could not be read."""
    path = reports_dir / ACTIVE_FILE
    if not path.is_file():
        return ActiveLog({}, ())
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("schema") != SCHEMA:
            raise ValueError(f"schema {data.get('schema')!r}, not {SCHEMA}")
        latest = {str(k): _entry(v) for k, v in data["latest"].items()}
        return ActiveLog(latest, tuple(_entry(v) for v in data["history"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return ActiveLog({}, (), f"{ACTIVE_FILE} could not be read ({str(exc)[:120] or type(exc).__name__}); "
                                 "it starts again from the next read")


def merge(log: ActiveLog, passes: list[dict[str, Any]]) -> ActiveLog:
    """The log with these passes (NodeHealth.to_dict() of each node) added: a node's latest is its newest pass
    with a start; a pass that failed or changed the node's state joins the history once."""
    latest = dict(log.latest)
    history = list(log.history)
    seen = {(h.get("node"), h.get("started")) for h in history}
    for one in map(_entry, passes):
        node, started = one.get("node"), one.get("started")
        if not started:  # no pass yet, or the node did not answer: nothing to keep but the last known one
            latest.setdefault(node, one)
            continue
        if not latest.get(node, {}).get("started") or started >= latest[node]["started"]:
            latest[node] = one
        if _worth_keeping(one) and (node, started) not in seen:
            history.append(one)
            seen.add((node, started))
    history.sort(key=lambda h: (h.get("started", ""), h.get("node", "")), reverse=True)
    return ActiveLog(latest, tuple(history[:HISTORY]))


def record(reports_dir: Path, passes: list[dict[str, Any]]) -> ActiveLog:
    """Merge the passes into the reports folder's log and write it (0600); the merged log."""
    merged = merge(read(reports_dir), passes)
    reports_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_private(reports_dir / ACTIVE_FILE, json.dumps({"schema": SCHEMA, "latest": merged.latest,
                                                         "history": list(merged.history)}, indent=1) + "\n")
    return merged


def verdict(entry: dict[str, Any]) -> str:
    """pass, fail or na (no verdict: no pass yet, skipped, preempted, unreachable)."""
    return {True: "pass", False: "fail"}.get(entry.get("ok"), "na")


def _worth_keeping(entry: dict[str, Any]) -> bool:
    """A failed pass, or one that told Slurm something (drained, resumed, or a drain or resume that failed)."""
    action = entry.get("action", "")
    return entry.get("ok") is False or action in ("drained", "resumed") or action.startswith(("drain failed",
                                                                                               "resume failed"))


def _entry(value: Any) -> dict[str, Any]:
    """One pass as stored: the fields the page shows, texts as texts."""
    if not isinstance(value, dict):
        raise TypeError("a pass is not an object")
    return {"node": str(value.get("node", "")), "ok": value.get("ok") if value.get("ok") in (True, False) else None,
            "failed": [str(f) for f in value.get("failed") or []], "action": str(value.get("action") or ""),
            "reason": str(value.get("reason") or ""), "started": str(value.get("started") or ""),
            "seconds": value.get("seconds") if isinstance(value.get("seconds"), (int, float)) else None,
            "trigger": str(value.get("trigger") or ""), "error": str(value.get("error") or "")}
