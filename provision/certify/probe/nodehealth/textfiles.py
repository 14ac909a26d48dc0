"""A pass's verdicts as node exporter textfiles (the catalogue's HEALTH series), in the config's metrics_dir.

After each pass the health program replaces TEXTFILES["health"]: each check's verdict (a check with a subject, a
mount or a GPU, is one series per subject, "health.mount[/shared]"), the pass's and when it ended. An active pass
that measured replaces TEXTFILES["active"]: each check's verdict and figure; a skipped pass, or one without a
verdict (the job was preempted), leaves the file of the last measured pass, whose timestamp says how old it is.
A check passes unless its verdict is "fail" (a warning does not drain either). Writing never fails or delays a
pass: an error (the directory missing, a full disk) is returned for the pass's record, and the pass goes on.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from provision.certify.probe.metrics.catalogue import TEXTFILES
from provision.certify.probe.metrics.textfile import Sample, sample, write


def check_label(check: dict[str, Any]) -> str:
    """The check's id with its subject, as the drain reason names it."""
    return f"{check['check']}[{check['subject']}]" if check.get("subject") else str(check["check"])


def _verdicts(name: str, checks: list[dict[str, Any]]) -> list[Sample]:
    """One sample per check (the first of a label given twice)."""
    found: dict[str, int] = {}
    for check in checks:
        found.setdefault(check_label(check), int(check.get("verdict") != "fail"))
    return [sample(name, ok, check=label) for label, ok in found.items()]


def health_samples(checks: list[dict[str, Any]], ok: bool, ended: float) -> list[Sample]:
    """A health pass's series."""
    return _verdicts("gpu_provision_health_check_ok", checks) + [
        sample("gpu_provision_health_pass_ok", int(ok)),
        sample("gpu_provision_health_last_pass_timestamp_seconds", round(ended, 3))]


def _figure(check: dict[str, Any]) -> float | None:
    value = check.get("value")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def active_samples(checks: list[dict[str, Any]], ended: float) -> list[Sample]:
    """An active pass's series: verdicts, the figures that are numbers, when it ended."""
    figures: dict[tuple[str, str], float] = {}
    for check in checks:
        value = _figure(check)
        if value is not None:
            figures.setdefault((check_label(check), str(check.get("unit") or "")), value)
    return (_verdicts("gpu_provision_active_check_ok", checks)
            + [sample("gpu_provision_active_check_value", v, check=c, unit=u) for (c, u), v in figures.items()]
            + [sample("gpu_provision_active_last_pass_timestamp_seconds", round(ended, 3))])


def publish(directory: Path | None, writer: str, samples: list[Sample]) -> str:
    """Write the writer's textfile; "" when written or switched off (no directory), otherwise what went wrong."""
    if directory is None:
        return ""
    try:
        write(directory, TEXTFILES[writer], samples)
    except (OSError, ValueError) as exc:
        return f"metrics not written: {getattr(exc, 'strerror', None) or exc}"
    return ""


def publish_health(directory: Path | None, checks: list[dict[str, Any]], ok: bool) -> str:
    """The health pass's textfile (see publish)."""
    return publish(directory, "health", health_samples(checks, ok, time.time())) if directory else ""


def publish_active(directory: Path | None, checks: list[dict[str, Any]]) -> str:
    """The active pass's textfile when it measured (see publish)."""
    return publish(directory, "active", active_samples(checks, time.time())) if directory and checks else ""
